// A synthetic cosmology set with a known answer (hpctrain-data generate --kind cosmo;
// docs/volumes.md): each sample is a cube of a log-normal random field whose four generating
// parameters are its regression targets, so a CosmoFlow-class 3-D network can be trained to a
// measurable error without MLPerf's 5.1 TB set. Every sample is a pure function of (seed,
// index).
//
// The generator, per sample: white Gaussian noise on an n^3 grid; its 3-D FFT multiplied by
// sqrt(P(k)), P(k) = k^-slope exp(-(k / cutoff)^2) with k the wavenumber in units of the Nyquist
// frequency (P(0) = 0); the inverse FFT g, scaled to unit variance; the field
// amplitude * exp(lognormal * g - lognormal^2 / 2) (a log-normal field of mean about amplitude).
// What is stored is its logarithm, log(amplitude) + lognormal * g - lognormal^2 / 2 (MLPerf
// stores log1p of its counts for the same reason: a well-scaled input). Channels are
// independent realizations with the same parameters.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "hpctrain/data/dataset.hpp"

namespace hpctrain {

struct CosmoSpec {
  std::int64_t size = 32;     // the cube's side, a power of two
  std::int64_t channels = 1;  // independent realizations per sample
  SampleType type = SampleType::f16;
  std::uint64_t seed = 1;
};

// The four parameters, drawn uniformly per sample from [lo, hi] (cosmo_ranges()).
struct CosmoParams {
  double amplitude = 1, slope = 2, cutoff = 0.5, lognormal = 0.5;
};
struct CosmoRange {
  const char* name;
  double lo, hi;
};
const std::array<CosmoRange, 4>& cosmo_ranges();  // amplitude, slope, cutoff, lognormal
std::string cosmo_target_names();                 // "amplitude, slope, cutoff, lognormal"

CosmoParams cosmo_params(const CosmoSpec& spec, std::int64_t index);
// The targets as stored: each parameter mapped from [lo, hi] to [-1, 1].
std::array<float, 4> cosmo_targets(const CosmoParams& p);
// Sample `index`: [channels, size, size, size] floats (the log-field).
void cosmo_sample(const CosmoSpec& spec, std::int64_t index, float* out);

struct CosmoOptions {
  CosmoSpec spec;
  std::string out;
  std::int64_t train = 1024, val = 0, test = 0;  // val and test continue the sample index space
  int shards = 1;
  int gzip = 0;
  bool force = false;
};
void generate_cosmo(const CosmoOptions& o);

}  // namespace hpctrain
