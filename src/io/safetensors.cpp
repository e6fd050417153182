// safetensors files (io/safetensors.hpp); the header through nlohmann-json.
#include "hpctrain/io/safetensors.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "hpctrain/core/error.hpp"
#include "hpctrain/core/half.hpp"

namespace hpctrain {

namespace {
const char* stored_name(DType stored) { return stored == DType::bf16 ? "BF16" : stored == DType::f16 ? "F16" : "F32"; }

// Before anything is written: a dtype the files hold, and for fp16 (magnitudes up to 65504) no
// tensor with a larger finite value (refused naming it).
void check_storable(const std::vector<NamedTensor>& tensors, DType stored, const std::string& path) {
  HPCT_CHECK(stored == DType::f32 || stored == DType::bf16 || stored == DType::f16,
             std::string("safetensors: written as F32, BF16 or F16, not ") + dtype_name(stored));
  if (stored != DType::f16) return;
  for (const NamedTensor& t : tensors)
    for (float v : t.data)
      if (std::isfinite(v) && std::isinf(half_value(half_bits(v)))) {
        char value[32];
        std::snprintf(value, sizeof value, "%g", static_cast<double>(v));
        throw bad_input(path + ": tensor " + t.name + " holds " + value +
                        ", beyond float16's largest value 65504 ([checkpoint] export_dtype = bf16 or fp32 keeps it)");
      }
}

// Header size, header (padded to 8 bytes), then each tensor's values in `stored`, in pieces
// (check_storable first).
void write_file(std::ostream& out, const std::vector<NamedTensor>& tensors,
                const std::map<std::string, std::string>& metadata, DType stored) {
  static_assert(sizeof(float) == 4, "float32");
  const std::uint16_t probe = 1;
  HPCT_CHECK(*reinterpret_cast<const unsigned char*>(&probe) == 1, "safetensors: a little-endian host");
  const std::size_t width = dtype_size(stored);
  nlohmann::ordered_json header;
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::size_t at = 0;
  for (const NamedTensor& t : tensors) {
    HPCT_CHECK(static_cast<std::int64_t>(t.data.size()) == numel(t.shape), "safetensors: " + t.name + " size");
    const std::size_t bytes = t.data.size() * width;
    header[t.name] = {{"dtype", stored_name(stored)}, {"shape", t.shape}, {"data_offsets", {at, at + bytes}}};
    at += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the data start 8-byte aligned
  const std::uint64_t n = text.size();
  out.write(reinterpret_cast<const char*>(&n), 8);  // little-endian (checked above)
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  std::vector<std::uint16_t> half(stored == DType::f32 ? 0 : std::size_t{1} << 20);
  for (const NamedTensor& t : tensors) {
    if (stored == DType::f32) {
      out.write(reinterpret_cast<const char*>(t.data.data()), static_cast<std::streamsize>(t.data.size() * 4));
      continue;
    }
    for (std::size_t i = 0; i < t.data.size(); i += half.size()) {
      const std::size_t m = std::min(half.size(), t.data.size() - i);
      for (std::size_t k = 0; k < m; ++k)
        half[k] = stored == DType::bf16 ? bf16_bits(t.data[i + k]) : half_bits(t.data[i + k]);
      out.write(reinterpret_cast<const char*>(half.data()), static_cast<std::streamsize>(m * 2));
    }
  }
}
}  // namespace

std::string safetensors_bytes(const std::vector<NamedTensor>& tensors,
                              const std::map<std::string, std::string>& metadata, DType stored) {
  check_storable(tensors, stored, "safetensors");
  std::ostringstream out;
  write_file(out, tensors, metadata, stored);
  return out.str();
}

void write_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                       const std::map<std::string, std::string>& metadata, DType stored) {
  const std::string partial = path + ".partial";
  check_storable(tensors, stored, path);
  {
    std::ofstream out(partial, std::ios::binary | std::ios::trunc);
    write_file(out, tensors, metadata, stored);
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
void convert(const std::string& dtype, const char* src, std::size_t count, float* out) {
  for (std::size_t i = 0; i < count; ++i) {
    if (dtype == "F32") {
      std::memcpy(&out[i], src + 4 * i, 4);
    } else {
      std::uint16_t h;
      std::memcpy(&h, src + 2 * i, 2);
      if (dtype == "F16") {
        out[i] = half_value(h);
      } else {  // BF16: the upper half of a float32
        out[i] = bf16_value(h);
      }
    }
  }
}

// One tensor's header entry, checked against the file's size: its data are bytes [begin, end) of
// the file.
struct Entry {
  std::string name, dtype;
  Shape shape;
  std::uint64_t begin = 0, end = 0;
  std::size_t width = 0;
};

std::vector<Entry> parse_header(const std::string& text, std::uint64_t file_size, const std::string& path) {
  nlohmann::ordered_json header;
  try {
    header = nlohmann::ordered_json::parse(text);
  } catch (const std::exception& e) {
    throw bad_input(path + ": the safetensors header is not JSON (" + e.what() + ")");
  }
  const std::uint64_t body = 8 + text.size();
  std::vector<Entry> out;
  for (const auto& [name, t] : header.items()) {
    if (name == "__metadata__") continue;
    if (!t.is_object())  // (found by tests/fuzz/fuzz_safetensors.cpp: value() on a number threw json's error)
      throw bad_input(path + ": tensor " + name + ": its header entry is " + t.dump() + ", not an object");
    Entry e;
    e.name = name;
    e.dtype = t.contains("dtype") && t["dtype"].is_string() ? t["dtype"].get<std::string>() : "";
    e.width = e.dtype == "F32" ? 4 : (e.dtype == "F16" || e.dtype == "BF16") ? 2 : 0;
    if (e.width == 0)
      throw bad_input(path + ": tensor " + name + " has dtype " + e.dtype + "; F32, F16 and BF16 are read");
    try {
      for (const auto& d : t.at("shape")) e.shape.push_back(d.get<std::int64_t>());
      e.begin = t.at("data_offsets").at(0).get<std::uint64_t>(),
      e.end = t.at("data_offsets").at(1).get<std::uint64_t>();
    } catch (const nlohmann::json::exception& ex) {
      throw bad_input(path + ": tensor " + name + ": no shape or data_offsets in the header (" + ex.what() + ")");
    }
    const auto count = static_cast<std::size_t>(numel(e.shape));
    if (e.end < e.begin || e.end - e.begin != count * e.width || e.end > file_size - body)
      throw bad_input(path + ": tensor " + name + " " + shape_string(e.shape) + " " + e.dtype + " has data offsets [" +
                      std::to_string(e.begin) + ", " + std::to_string(e.end) +
                      ") that do not fit its shape or the file");
    e.begin += body, e.end += body;
    out.push_back(std::move(e));
  }
  return out;
}

// The tensors of a safetensors stream of `size` bytes, tensor by tensor through a buffer of at
// most 16 MiB: the memory a read takes is the float32 tensors it returns, not the file besides (a
// BF16 Llama 3.2 1B is 2.5 GB).
std::vector<NamedTensor> read_tensors(std::istream& in, std::uint64_t size, const std::string& path) {
  std::uint64_t n = 0;
  in.read(reinterpret_cast<char*>(&n), 8);  // little-endian (as written)
  if (!in || size < 8 || n > size - 8)
    throw bad_input(path + ": not a safetensors file (its header size is past the end of the file)");
  std::string text(n, '\0');
  in.read(text.data(), static_cast<std::streamsize>(n));
  std::vector<NamedTensor> out;
  std::vector<char> buffer;
  constexpr std::size_t kChunk = std::size_t{16} << 20;
  for (const Entry& e : parse_header(text, size, path)) {
    NamedTensor nt{e.name, e.shape, std::vector<float>(static_cast<std::size_t>(numel(e.shape)))};
    in.seekg(static_cast<std::streamoff>(e.begin));
    for (std::size_t done = 0; done < nt.data.size();) {  // whole elements per chunk
      const std::size_t count = std::min(nt.data.size() - done, kChunk / e.width);
      buffer.resize(count * e.width);
      in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
      if (!in) throw bad_input(path + ": tensor " + e.name + ": cannot be read (" + std::strerror(errno) + ")");
      convert(e.dtype, buffer.data(), count, nt.data.data() + done);
      done += count;
    }
    out.push_back(std::move(nt));
  }
  return out;
}
}  // namespace

std::vector<NamedTensor> read_safetensors(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::error_code ec;
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (!in || ec) throw bad_input(path + ": cannot be read (" + (ec ? ec.message() : std::strerror(errno)) + ")");
  return read_tensors(in, size, path);
}

std::vector<NamedTensor> parse_safetensors(const std::string& bytes, const std::string& path) {
  std::istringstream in(bytes);  // (the fuzz harness's bytes take the file's path)
  return read_tensors(in, bytes.size(), path);
}

}  // namespace hpctrain
