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

namespace {
float from_half(std::uint16_t h) {  // IEEE binary16: subnormals, infinities and NaN included
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  std::uint32_t bits = 0;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (man << 13);
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (man << 13);
  } else if (man != 0) {  // subnormal: normalize
    int e = -1;
    std::uint32_t m = man;
    do {
      ++e;
      m <<= 1;
    } while ((m & 0x400u) == 0);
    bits = sign | (static_cast<std::uint32_t>(112 - e) << 23) | ((m & 0x3ffu) << 13);
  } else {
    bits = sign;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

void convert(const std::string& dtype, const char* src, std::size_t count, float* out) {
  for (std::size_t i = 0; i < count; ++i) {
    if (dtype == "F32") {
      std::memcpy(&out[i], src + 4 * i, 4);
    } else {
      std::uint16_t h;
      std::memcpy(&h, src + 2 * i, 2);
      if (dtype == "F16") {
        out[i] = from_half(h);
      } else {  // BF16: the upper half of a float32
        const std::uint32_t bits = static_cast<std::uint32_t>(h) << 16;
        std::memcpy(&out[i], &bits, 4);
      }
    }
  }
}
}  // namespace

std::vector<NamedTensor> read_safetensors(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw bad_input(path + ": cannot be read (" + std::strerror(errno) + ")");
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return parse_safetensors(bytes, path);
}

std::vector<NamedTensor> parse_safetensors(const std::string& bytes, const std::string& path) {
  std::uint64_t n = 0;
  if (bytes.size() < 8 || (std::memcpy(&n, bytes.data(), 8), n > bytes.size() - 8))
    throw bad_input(path + ": not a safetensors file (its header size is past the end of the file)");
  nlohmann::ordered_json header;
  try {
    header = nlohmann::ordered_json::parse(bytes.substr(8, n));
  } catch (const std::exception& e) {
    throw bad_input(path + ": the safetensors header is not JSON (" + e.what() + ")");
  }
  const std::size_t body = 8 + n;
  std::vector<NamedTensor> out;
  for (const auto& [name, t] : header.items()) {
    if (name == "__metadata__") continue;
    if (!t.is_object())  // (found by tests/fuzz/fuzz_safetensors.cpp: value() on a number threw json's error)
      throw bad_input(path + ": tensor " + name + ": its header entry is " + t.dump() + ", not an object");
    const std::string dtype = t.contains("dtype") && t["dtype"].is_string() ? t["dtype"].get<std::string>() : "";
    const std::size_t width = dtype == "F32" ? 4 : (dtype == "F16" || dtype == "BF16") ? 2 : 0;
    if (width == 0) throw bad_input(path + ": tensor " + name + " has dtype " + dtype + "; F32, F16 and BF16 are read");
    NamedTensor nt;
    nt.name = name;
    std::uint64_t begin = 0, end = 0;
    try {
      for (const auto& d : t.at("shape")) nt.shape.push_back(d.get<std::int64_t>());
      begin = t.at("data_offsets").at(0).get<std::uint64_t>(), end = t.at("data_offsets").at(1).get<std::uint64_t>();
    } catch (const nlohmann::json::exception& e) {
      throw bad_input(path + ": tensor " + name + ": no shape or data_offsets in the header (" + e.what() + ")");
    }
    const auto count = static_cast<std::size_t>(numel(nt.shape));
    if (end < begin || end - begin != count * width || body + end > bytes.size())
      throw bad_input(path + ": tensor " + name + " " + shape_string(nt.shape) + " " + dtype + " has data offsets [" +
                      std::to_string(begin) + ", " + std::to_string(end) + ") that do not fit its shape or the file");
    nt.data.resize(count);
    convert(dtype, bytes.data() + body + begin, count, nt.data.data());
    out.push_back(std::move(nt));
  }
  return out;
}

}  // namespace hpctrain
