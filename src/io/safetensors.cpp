// safetensors files (io/safetensors.hpp); the header through nlohmann-json.
#include "hpctrain/io/safetensors.hpp"

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "hpctrain/core/error.hpp"

namespace hpctrain {

std::string safetensors_bytes(const std::vector<NamedTensor>& tensors,
                              const std::map<std::string, std::string>& metadata) {
  static_assert(sizeof(float) == 4, "float32");
  const std::uint16_t probe = 1;
  HPCT_CHECK(*reinterpret_cast<const unsigned char*>(&probe) == 1, "safetensors: a little-endian host");
  nlohmann::ordered_json header;
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::size_t at = 0;
  for (const NamedTensor& t : tensors) {
    HPCT_CHECK(static_cast<std::int64_t>(t.data.size()) == numel(t.shape), "safetensors: " + t.name + " size");
    const std::size_t bytes = t.data.size() * sizeof(float);
    header[t.name] = {{"dtype", "F32"}, {"shape", t.shape}, {"data_offsets", {at, at + bytes}}};
    at += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the data start 8-byte aligned
  std::string out(8, '\0');
  const std::uint64_t n = text.size();
  std::memcpy(out.data(), &n, 8);  // little-endian (checked above)
  out += text;
  out.reserve(out.size() + at);
  for (const NamedTensor& t : tensors)
    out.append(reinterpret_cast<const char*>(t.data.data()), t.data.size() * sizeof(float));
  return out;
}

void write_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  const std::string bytes = safetensors_bytes(tensors, metadata), partial = path + ".partial";
  {
    std::ofstream out(partial, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) {
      std::error_code ec;
      std::filesystem::remove(partial, ec);
      throw bad_input("--export " + path + ": cannot write " + partial + " (" + std::strerror(errno) + ")");
    }
  }
  std::error_code ec;
  std::filesystem::rename(partial, path, ec);
  if (ec) throw bad_input("--export " + path + ": cannot rename " + partial + ": " + ec.message());
}

}  // namespace hpctrain
