// The synthetic cosmology set (data/cosmo.hpp): Gaussian random fields shaped by a power
// spectrum, made log-normal. A radix-2 complex FFT along each axis (sizes are powers of two).
#include "hpctrain/data/cosmo.hpp"

#include <cmath>
#include <complex>
#include <filesystem>
#include <vector>

#include "hpctrain/core/error.hpp"
#include "hpctrain/core/half.hpp"
#include "hpctrain/core/hash.hpp"
#include "hpctrain/data/make_dataset.hpp"
#include "hpctrain/data/shard_writer.hpp"

namespace hpctrain {

namespace {
using cplx = std::complex<double>;
constexpr double kPi = 3.14159265358979323846;

// Uniform in [0, 1) from a key and a counter.
double uniform(std::uint64_t key, std::uint64_t i) {
  return static_cast<double>(splitmix64(key + splitmix64(i)) >> 11) * (1.0 / 9007199254740992.0);
}

// In-place radix-2 FFT of n points spaced `stride` apart (inverse: conjugate twiddles, no 1/n).
void fft(cplx* a, std::int64_t n, std::int64_t stride, bool inverse) {
  for (std::int64_t i = 1, j = 0; i < n; ++i) {  // bit-reversal permutation
    std::int64_t bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) std::swap(a[i * stride], a[j * stride]);
  }
  for (std::int64_t len = 2; len <= n; len <<= 1) {
    const double angle = (inverse ? 2 : -2) * kPi / static_cast<double>(len);
    const cplx w_len(std::cos(angle), std::sin(angle));
    for (std::int64_t i = 0; i < n; i += len) {
      cplx w(1, 0);
      for (std::int64_t k = 0; k < len / 2; ++k) {
        const cplx u = a[(i + k) * stride], v = a[(i + k + len / 2) * stride] * w;
        a[(i + k) * stride] = u + v;
        a[(i + k + len / 2) * stride] = u - v;
        w *= w_len;
      }
    }
  }
}

// The 3-D FFT of an n^3 cube (x fastest), axis by axis.
void fft3(std::vector<cplx>& cube, std::int64_t n, bool inverse) {
  for (std::int64_t a = 0; a < n; ++a)  // along x: rows (z, y) = (a, b)
    for (std::int64_t b = 0; b < n; ++b) fft(cube.data() + (a * n + b) * n, n, 1, inverse);
  for (std::int64_t a = 0; a < n; ++a)  // along y: (z, x) = (a, b)
    for (std::int64_t b = 0; b < n; ++b) fft(cube.data() + a * n * n + b, n, n, inverse);
  for (std::int64_t a = 0; a < n; ++a)  // along z: (y, x) = (a, b)
    for (std::int64_t b = 0; b < n; ++b) fft(cube.data() + a * n + b, n, n * n, inverse);
}

// One realization's unit-variance Gaussian field with the spectrum's shape, into `g` (n^3).
void shaped_field(const CosmoParams& p, std::int64_t n, std::uint64_t key, std::vector<double>& g) {
  const std::int64_t total = n * n * n;
  std::vector<cplx> cube(static_cast<std::size_t>(total));
  for (std::int64_t i = 0; i < total; i += 2) {  // Box-Muller: two normals per pair of uniforms
    const double u1 = 1.0 - uniform(key, static_cast<std::uint64_t>(i)),
                 u2 = uniform(key, static_cast<std::uint64_t>(i + 1));
    const double r = std::sqrt(-2.0 * std::log(u1));
    cube[static_cast<std::size_t>(i)] = r * std::cos(2 * kPi * u2);
    if (i + 1 < total) cube[static_cast<std::size_t>(i + 1)] = r * std::sin(2 * kPi * u2);
  }
  fft3(cube, n, false);
  const double half = static_cast<double>(n) / 2.0;
  const auto freq = [n, half](std::int64_t i) { return static_cast<double>(i < n / 2 ? i : i - n) / half; };
  for (std::int64_t z = 0; z < n; ++z)
    for (std::int64_t y = 0; y < n; ++y)
      for (std::int64_t x = 0; x < n; ++x) {
        const double k = std::sqrt(freq(x) * freq(x) + freq(y) * freq(y) + freq(z) * freq(z));
        const double power = k > 0 ? std::pow(k, -p.slope) * std::exp(-(k / p.cutoff) * (k / p.cutoff)) : 0.0;
        cube[static_cast<std::size_t>((z * n + y) * n + x)] *= std::sqrt(power);
      }
  fft3(cube, n, true);
  double mean = 0, sq = 0;
  g.resize(static_cast<std::size_t>(total));
  for (std::int64_t i = 0; i < total; ++i) {
    g[static_cast<std::size_t>(i)] = cube[static_cast<std::size_t>(i)].real();
    mean += g[static_cast<std::size_t>(i)];
  }
  mean /= static_cast<double>(total);
  for (double& v : g) sq += (v - mean) * (v - mean);
  const double sd = std::sqrt(sq / static_cast<double>(total));
  for (double& v : g) v = sd > 0 ? (v - mean) / sd : 0.0;
}
}  // namespace

const std::array<CosmoRange, 4>& cosmo_ranges() {
  static const std::array<CosmoRange, 4> r{
      {{"amplitude", 0.5, 2.0}, {"slope", 1.0, 3.0}, {"cutoff", 0.2, 0.8}, {"lognormal", 0.2, 1.0}}};
  return r;
}

std::string cosmo_target_names() {
  std::string out;
  for (const CosmoRange& r : cosmo_ranges()) out += (out.empty() ? "" : ", ") + std::string(r.name);
  return out;
}

CosmoParams cosmo_params(const CosmoSpec& spec, std::int64_t index) {
  const std::uint64_t key = splitmix64(spec.seed ^ splitmix64(static_cast<std::uint64_t>(index)));
  const auto& r = cosmo_ranges();
  double v[4];
  for (std::size_t j = 0; j < 4; ++j) v[j] = r[j].lo + (r[j].hi - r[j].lo) * uniform(key, 1000 + j);
  return {v[0], v[1], v[2], v[3]};
}

std::array<float, 4> cosmo_targets(const CosmoParams& p) {
  const double v[4] = {p.amplitude, p.slope, p.cutoff, p.lognormal};
  std::array<float, 4> t{};
  for (std::size_t j = 0; j < 4; ++j) {
    const CosmoRange& r = cosmo_ranges()[j];
    t[j] = static_cast<float>(2 * (v[j] - r.lo) / (r.hi - r.lo) - 1);
  }
  return t;
}

void cosmo_sample(const CosmoSpec& spec, std::int64_t index, float* out) {
  const CosmoParams p = cosmo_params(spec, index);
  const std::int64_t n = spec.size, total = n * n * n;
  std::vector<double> g;
  for (std::int64_t c = 0; c < spec.channels; ++c) {
    const std::uint64_t key = splitmix64(spec.seed ^ splitmix64(static_cast<std::uint64_t>(index)) ^
                                         splitmix64(0x5eed0000ULL + static_cast<std::uint64_t>(c)));
    shaped_field(p, n, key, g);
    for (std::int64_t i = 0; i < total; ++i)
      out[c * total + i] = static_cast<float>(std::log(p.amplitude) + p.lognormal * g[static_cast<std::size_t>(i)] -
                                              p.lognormal * p.lognormal / 2);
  }
}

void generate_cosmo(const CosmoOptions& o) {
  const std::int64_t n = o.spec.size;
  if (n < 4 || (n & (n - 1)) != 0) throw bad_input("--size " + std::to_string(n) + ": a power of two >= 4");
  if (o.spec.channels < 1) throw bad_input("--channels must be >= 1");
  if (o.spec.type != SampleType::f16 && o.spec.type != SampleType::f32)
    throw bad_input("--kind cosmo: --dtype float16 or float32");
  ShardSpec spec;
  spec.sample_shape = {o.spec.channels, n, n, n};
  spec.type = o.spec.type;
  spec.classification = false;
  spec.label_width = 4;
  spec.num_classes = 0;
  spec.norm_a = {1.0};
  spec.norm_b = {0.0};
  spec.chunk_rows = 1;  // (a volume per chunk: readers take single samples)
  spec.gzip = o.gzip;
  spec.target_names = cosmo_target_names();
  const std::int64_t elems = o.spec.channels * n * n * n;
  std::vector<float> sample(static_cast<std::size_t>(elems));
  std::vector<std::uint16_t> half(o.spec.type == SampleType::f16 ? sample.size() : 0);
  std::int64_t offset = 0;
  for (const auto& [split, count] :
       {std::pair<const char*, std::int64_t>{"train", o.train}, {"val", o.val}, {"test", o.test}}) {
    if (count <= 0) continue;
    const std::filesystem::path dir = std::filesystem::path(o.out) / split;
    prepare_split_dir(dir.string(), o.force);
    const int shards = std::string(split) == "train" ? o.shards : 1;
    const std::int64_t per = (count + shards - 1) / shards;
    for (int s = 0; s * per < count; ++s) {
      const std::int64_t rows = std::min(per, count - s * per);
      char name[32];
      std::snprintf(name, sizeof(name), "part-%05d.h5", s);
      ShardWriter w((dir / name).string(), spec, rows);
      for (std::int64_t r = 0; r < rows; ++r) {
        const std::int64_t index = offset + s * per + r;
        cosmo_sample(o.spec, index, sample.data());
        const std::array<float, 4> t = cosmo_targets(cosmo_params(o.spec, index));
        for (std::size_t i = 0; i < half.size(); ++i) half[i] = half_bits(sample[i]);
        w.append(1, half.empty() ? static_cast<const void*>(sample.data()) : half.data(), t.data());
      }
      w.close();
    }
    offset += count;
  }
}

}  // namespace hpctrain
