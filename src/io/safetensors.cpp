// safetensors files (io/safetensors.hpp); the header through nlohmann-json.
#include "hpctrain/io/safetensors.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "hpctrain/core/error.hpp"
#include "hpctrain/core/half.hpp"
#include "hpctrain/core/json_depth.hpp"
#include "hpctrain/io/output_file.hpp"

namespace hpctrain {

std::vector<float> LazyTensor::values() const {
  std::vector<float> v(static_cast<std::size_t>(numel(shape)));
  rows(0, row_count(), v.data());
  return v;
}

namespace {
const char* stored_name(DType stored) { return stored == DType::bf16 ? "BF16" : stored == DType::f16 ? "F16" : "F32"; }

// For fp16 (magnitudes up to 65504): no value of a larger finite magnitude (refused naming the
// tensor).
void check_storable(const std::string& name, const std::vector<float>& values, DType stored, const std::string& path) {
  if (stored != DType::f16) return;
  for (float v : values)
    if (std::isfinite(v) && std::isinf(half_value(half_bits(v)))) {
      char value[32];
      std::snprintf(value, sizeof value, "%g", static_cast<double>(v));
      throw bad_input(path + ": tensor " + name + " holds " + value +
                      ", beyond float16's largest value 65504 ([checkpoint] export_dtype = bf16 or fp32 keeps it)");
    }
}

// Header size, header (padded to 8 bytes), then each tensor's values in `stored`, made and written
// a piece of rows at a time.
void write_file(std::ostream& out, const std::vector<LazyTensor>& tensors,
                const std::map<std::string, std::string>& metadata, DType stored, const std::string& path) {
  static_assert(sizeof(float) == 4, "float32");
  const std::uint16_t probe = 1;
  HPCT_CHECK(*reinterpret_cast<const unsigned char*>(&probe) == 1, "safetensors: a little-endian host");
  HPCT_CHECK(stored == DType::f32 || stored == DType::bf16 || stored == DType::f16,
             std::string("safetensors: written as F32, BF16 or F16, not ") + dtype_name(stored));
  const std::size_t width = dtype_size(stored);
  nlohmann::ordered_json header;
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::size_t at = 0;
  for (const LazyTensor& t : tensors) {
    const std::size_t bytes = static_cast<std::size_t>(numel(t.shape)) * width;
    header[t.name] = {{"dtype", stored_name(stored)}, {"shape", t.shape}, {"data_offsets", {at, at + bytes}}};
    at += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the data start 8-byte aligned
  const std::uint64_t n = text.size();
  out.write(reinterpret_cast<const char*>(&n), 8);  // little-endian (checked above)
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  std::vector<float> v;  // a piece of a tensor: whole rows, at most 16 MiB unless one row is more
  std::vector<std::uint16_t> half;
  for (const LazyTensor& t : tensors) {
    const std::int64_t row = t.row_width(),
                       piece = std::max<std::int64_t>(1, (std::int64_t{4} << 20) / std::max<std::int64_t>(1, row));
    for (std::int64_t first = 0; first < t.row_count(); first += piece) {
      const std::int64_t count = std::min(piece, t.row_count() - first);
      v.resize(static_cast<std::size_t>(count * row));
      t.rows(first, count, v.data());
      check_storable(t.name, v, stored, path);
      if (stored == DType::f32) {
        out.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * 4));
        continue;
      }
      half.resize(v.size());
      for (std::size_t k = 0; k < v.size(); ++k) half[k] = stored == DType::bf16 ? bf16_bits(v[k]) : half_bits(v[k]);
      out.write(reinterpret_cast<const char*>(half.data()), static_cast<std::streamsize>(half.size() * 2));
    }
  }
}

}  // namespace

std::vector<LazyTensor> lazy_views(const std::vector<NamedTensor>& tensors) {
  std::vector<LazyTensor> out;
  for (const NamedTensor& t : tensors) {
    HPCT_CHECK(static_cast<std::int64_t>(t.data.size()) == numel(t.shape), "safetensors: " + t.name + " size");
    LazyTensor lazy{t.name, t.shape, {}};
    lazy.rows = [&t, width = lazy.row_width()](std::int64_t first, std::int64_t count, float* to) {
      std::copy_n(t.data.data() + first * width, count * width, to);
    };
    out.push_back(std::move(lazy));
  }
  return out;
}

std::string safetensors_bytes(const std::vector<NamedTensor>& tensors,
                              const std::map<std::string, std::string>& metadata, DType stored) {
  std::ostringstream out;
  write_file(out, lazy_views(tensors), metadata, stored, "safetensors");
  return out.str();
}

void write_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                       const std::map<std::string, std::string>& metadata, DType stored) {
  write_safetensors(path, lazy_views(tensors), metadata, stored);
}

void write_safetensors(const std::string& path, const std::vector<LazyTensor>& tensors,
                       const std::map<std::string, std::string>& metadata, DType stored) {
  check_output_file(path, "--export " + path);
  const std::string partial = path + ".partial";
  std::error_code ec;
  try {
    std::ofstream out(partial, std::ios::binary | std::ios::trunc);
    if (!out) throw bad_input("--export " + path + ": cannot write " + partial + " (" + std::strerror(errno) + ")");
    write_file(out, tensors, metadata, stored, path);
    out.close();
    if (!out) throw bad_input("--export " + path + ": cannot write " + partial + " (" + std::strerror(errno) + ")");
  } catch (...) {
    std::filesystem::remove(partial, ec);  // (nothing half-written is left)
    throw;
  }
  std::filesystem::rename(partial, path, ec);
  if (ec) {
    const std::string why = ec.message();
    std::filesystem::remove(partial, ec);
    throw bad_input("--export " + path + ": cannot rename " + partial + ": " + why);
  }
}

namespace {
std::uint64_t data_bytes(const LazyTensor& t, DType stored) {
  return static_cast<std::uint64_t>(numel(t.shape)) * dtype_size(stored);
}
}  // namespace

std::uint64_t safetensors_data_bytes(const std::vector<LazyTensor>& tensors, DType stored) {
  std::uint64_t n = 0;
  for (const LazyTensor& t : tensors) n += data_bytes(t, stored);
  return n;
}

void write_text_file(const std::string& path, const std::string& text) {
  const std::string partial = path + ".partial";
  std::ofstream f(partial, std::ios::binary | std::ios::trunc);
  f << text;
  f.close();
  std::error_code ec;
  if (f) std::filesystem::rename(partial, path, ec);
  if (!f || ec) {
    std::filesystem::remove(partial, ec);
    throw bad_input("--export-hf: cannot write " + path);
  }
}

bool safetensors_layout_file(const std::string& name) {
  const std::string tail = ".safetensors";
  if (name == "model" + tail || name == "model" + tail + ".index.json") return true;
  if (name.size() != std::string("model-00001-of-00002").size() + tail.size()) return false;
  if (name.compare(0, 6, "model-") != 0 || name.compare(11, 4, "-of-") != 0 || name.compare(20, tail.size(), tail) != 0)
    return false;
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  return std::all_of(name.begin() + 6, name.begin() + 11, digit) &&
         std::all_of(name.begin() + 15, name.begin() + 20, digit);
}

std::vector<std::string> write_safetensors_folder(const std::string& dir, const std::vector<LazyTensor>& tensors,
                                                  const std::map<std::string, std::string>& metadata, DType stored,
                                                  std::uint64_t shard_bytes) {
  std::vector<std::vector<LazyTensor>> shards(1);
  std::uint64_t in_shard = 0;
  for (const LazyTensor& t : tensors) {  // (save_pretrained's rule: in order, a larger tensor alone)
    const std::uint64_t bytes = data_bytes(t, stored);
    if (!shards.back().empty() && in_shard + bytes > shard_bytes) shards.emplace_back(), in_shard = 0;
    shards.back().push_back(t);
    in_shard += bytes;
  }
  std::vector<std::string> files;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (shards.size() == 1) {
    files.push_back("model.safetensors");
    write_safetensors(dir + "/" + files[0], tensors, metadata, stored);
  } else {
    nlohmann::ordered_json index;
    index["metadata"] = {{"total_size", safetensors_data_bytes(tensors, stored)}};
    index["weight_map"] = nlohmann::ordered_json::object();
    for (std::size_t i = 0; i < shards.size(); ++i) {
      char name[64];
      std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", i + 1, shards.size());
      files.push_back(name);
      write_safetensors(dir + "/" + name, shards[i], metadata, stored);
      for (const LazyTensor& t : shards[i]) index["weight_map"][t.name] = name;
    }
    files.push_back("model.safetensors.index.json");
    write_text_file(dir + "/" + files.back(), index.dump(2) + "\n");
  }
  return files;
}

namespace {
// (The dtype picked once per call, not per value: compared per value it was about 30% of an
// import's time, 2026-12-06, perf.)
void convert(const std::string& dtype, const char* src, std::size_t count, float* out) {
  if (dtype == "F32") {
    std::memcpy(out, src, 4 * count);
    return;
  }
  const bool half = dtype == "F16";  // else BF16: the upper half of a float32
  for (std::size_t i = 0; i < count; ++i) {
    std::uint16_t h;
    std::memcpy(&h, src + 2 * i, 2);
    out[i] = half ? half_value(h) : bf16_value(h);
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
  check_json_depth(text, path + ": the safetensors header");
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

// The header of a safetensors stream of `size` bytes, checked.
std::vector<Entry> read_header(std::istream& in, std::uint64_t size, const std::string& path) {
  std::uint64_t n = 0;
  in.read(reinterpret_cast<char*>(&n), 8);  // little-endian (as written)
  if (!in || size < 8 || n > size - 8)
    throw bad_input(path + ": not a safetensors file (its header size is past the end of the file)");
  std::string text(n, '\0');
  in.read(text.data(), static_cast<std::streamsize>(n));
  return parse_header(text, size, path);
}

// Elements [first, first + count) of entry `e` from the stream, as float32, through a buffer of at
// most 16 MiB: the memory a read takes is the float32 values it returns, not the file besides (a
// BF16 Llama 3.2 1B is 2.5 GB).
void read_values(std::istream& in, const Entry& e, std::uint64_t first, std::size_t count, float* out,
                 const std::string& path) {
  constexpr std::size_t kChunk = std::size_t{16} << 20;
  std::vector<char> buffer;
  in.seekg(static_cast<std::streamoff>(e.begin + first * e.width));
  for (std::size_t done = 0; done < count;) {  // whole elements per chunk
    const std::size_t m = std::min(count - done, kChunk / e.width);
    buffer.resize(m * e.width);
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    if (!in) throw bad_input(path + ": tensor " + e.name + ": cannot be read (" + std::strerror(errno) + ")");
    convert(e.dtype, buffer.data(), m, out + done);
    done += m;
  }
}

// Every tensor of a safetensors stream, read now.
std::vector<NamedTensor> read_tensors(std::istream& in, std::uint64_t size, const std::string& path) {
  std::vector<NamedTensor> out;
  for (const Entry& e : read_header(in, size, path)) {
    NamedTensor nt{e.name, e.shape, std::vector<float>(static_cast<std::size_t>(numel(e.shape)))};
    read_values(in, e, 0, nt.data.size(), nt.data.data(), path);
    out.push_back(std::move(nt));
  }
  return out;
}

std::uint64_t file_size_of(const std::string& path, std::ifstream& in) {
  std::error_code ec;
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (!in || ec) throw bad_input(path + ": cannot be read (" + (ec ? ec.message() : std::strerror(errno)) + ")");
  return size;
}
}  // namespace

std::vector<NamedTensor> read_safetensors(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return read_tensors(in, file_size_of(path, in), path);
}

std::vector<LazyTensor> safetensors_tensors(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::uint64_t size = file_size_of(path, in);
  std::vector<LazyTensor> out;
  for (const Entry& e : read_header(in, size, path)) {
    LazyTensor t{e.name, e.shape, {}};
    t.rows = [e, width = t.row_width(), path](std::int64_t first, std::int64_t count, float* to) {
      std::ifstream file(path, std::ios::binary);
      if (!file) throw bad_input(path + ": cannot be read (" + std::strerror(errno) + ")");
      read_values(file, e, static_cast<std::uint64_t>(first * width), static_cast<std::size_t>(count * width), to,
                  path);
    };
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<NamedTensor> parse_safetensors(const std::string& bytes, const std::string& path) {
  std::istringstream in(bytes);  // (the fuzz harness's bytes take the file's path)
  return read_tensors(in, bytes.size(), path);
}

}  // namespace hpctrain
