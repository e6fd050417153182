// Implementation of the IDX reader (data/idx.hpp), through zlib so gzipped
// and plain files read alike.
#include "hpctrain/data/idx.hpp"

#include <zlib.h>

#include "hpctrain/core/error.hpp"

namespace hpctrain {

IdxArray read_idx(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) throw bad_input(path + ": cannot be opened");
  struct Closer {
    gzFile f;
    ~Closer() { gzclose(f); }
  } closer{f};
  unsigned char header[4];
  if (gzread(f, header, 4) != 4 || header[0] != 0 || header[1] != 0)
    throw bad_input(path + ": not an IDX file (bad magic number)");
  if (header[2] != 0x08)
    throw bad_input(path + ": IDX element type " + std::to_string(header[2]) + " is not unsigned byte (0x08)");
  const int ndims = header[3];
  if (ndims < 1 || ndims > 8) throw bad_input(path + ": IDX file with " + std::to_string(ndims) + " dimensions");
  IdxArray out;
  std::uint64_t total = 1;
  for (int i = 0; i < ndims; ++i) {
    unsigned char d[4];
    if (gzread(f, d, 4) != 4) throw bad_input(path + ": truncated IDX header");
    const std::int64_t dim = (std::int64_t{d[0]} << 24) | (d[1] << 16) | (d[2] << 8) | d[3];
    out.dims.push_back(dim);
    total *= static_cast<std::uint64_t>(dim);
    if (total > (std::uint64_t{1} << 36)) throw bad_input(path + ": IDX dimensions too large");
  }
  // (grown as the bytes arrive, 64 MiB at a time: a header of a few bytes can claim 64 GiB)
  std::uint64_t got = 0;
  while (got < total) {
    out.data.resize(static_cast<std::size_t>(std::min<std::uint64_t>(total, got + (1u << 26))));
    const auto want = static_cast<unsigned>(out.data.size() - got);
    const int n = gzread(f, out.data.data() + got, want);
    if (n <= 0)
      throw bad_input(path + ": truncated IDX data (" + std::to_string(got) + " of " + std::to_string(total) +
                      " bytes)");
    got += static_cast<std::uint64_t>(n);
  }
  out.data.resize(static_cast<std::size_t>(total));
  return out;
}

}  // namespace hpctrain
