// TensorBoard event files (io/event_file.hpp).
#include "hpctrain/io/event_file.hpp"

#include <unistd.h>

#include <boost/crc.hpp>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "hpctrain/core/error.hpp"
#include "hpctrain/core/log.hpp"

namespace fs = std::filesystem;

namespace hpctrain {

std::uint32_t crc32c(const void* data, std::size_t bytes) {
  boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true> crc;
  crc.process_bytes(data, bytes);
  return crc.checksum();
}

std::uint32_t masked_crc32c(const void* data, std::size_t bytes) {
  const std::uint32_t c = crc32c(data, bytes);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

namespace {
// Protobuf wire format: the few encodings the messages need.
void varint(std::string& out, std::uint64_t v) {
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
}
void key(std::string& out, int field, int wire) { varint(out, static_cast<std::uint64_t>(field) << 3 | wire); }
void int_field(std::string& out, int field, std::int64_t v) {
  key(out, field, 0);
  varint(out, static_cast<std::uint64_t>(v));
}
void bytes_field(std::string& out, int field, const std::string& v) {  // strings and messages
  key(out, field, 2);
  varint(out, v.size());
  out += v;
}
template <class T>
void fixed_field(std::string& out, int field, T v) {  // double (wire type 1), float (wire type 5)
  key(out, field, sizeof(T) == 8 ? 1 : 5);
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));  // little-endian on every machine we build for
  out.append(b, sizeof(T));
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Event{wall_time = 1, step = 2, then `body` (file_version = 3, summary = 5, session_log = 6)}.
std::string event(std::int64_t step, const std::string& body) {
  std::string e;
  fixed_field(e, 1, now_seconds());
  int_field(e, 2, step);
  return e + body;
}
}  // namespace

EventFileWriter::EventFileWriter(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  path_ = (fs::path(dir) / ("events.out.tfevents." + std::to_string(static_cast<long long>(now_seconds())) + "." +
                            host_name() + "." + std::to_string(getpid()) + ".hpctrain"))
              .string();
  out_.open(path_, std::ios::binary | std::ios::trunc);
  if (!out_) throw bad_input("[run] out_dir: cannot write the TensorBoard event file " + path_);
  std::string body;
  bytes_field(body, 3, "brain.Event:2");
  record(event(0, body));
  flush();
}

EventFileWriter::~EventFileWriter() {
  try {
    flush();
  } catch (...) {  // (a destructor does not throw; the last flush is best effort)
  }
}

void EventFileWriter::record(const std::string& e) {
  char head[12];
  const std::uint64_t len = e.size();
  std::memcpy(head, &len, 8);
  const std::uint32_t len_crc = masked_crc32c(head, 8), data_crc = masked_crc32c(e.data(), e.size());
  std::memcpy(head + 8, &len_crc, 4);
  buffer_.append(head, 12);
  buffer_ += e;
  buffer_.append(reinterpret_cast<const char*>(&data_crc), 4);
}

void EventFileWriter::scalar(const std::string& tag, std::int64_t step, double value) {
  std::string v, summary, body;
  bytes_field(v, 1, tag);                        // Summary.Value.tag
  fixed_field(v, 2, static_cast<float>(value));  // Summary.Value.simple_value
  bytes_field(summary, 1, v);                    // Summary.value
  bytes_field(body, 5, summary);                 // Event.summary
  record(event(step, body));
}

void EventFileWriter::text(const std::string& tag, std::int64_t step, const std::string& markdown) {
  std::string plugin, metadata, tensor, v, summary, body;
  bytes_field(plugin, 1, "text");    // PluginData.plugin_name
  bytes_field(metadata, 1, plugin);  // SummaryMetadata.plugin_data
  int_field(tensor, 1, 7);           // TensorProto.dtype = DT_STRING
  bytes_field(tensor, 2, "");        // TensorProto.tensor_shape: a scalar
  bytes_field(tensor, 8, markdown);  // TensorProto.string_val
  bytes_field(v, 1, tag);
  bytes_field(v, 8, tensor);    // Summary.Value.tensor
  bytes_field(v, 9, metadata);  // Summary.Value.metadata
  bytes_field(summary, 1, v);
  bytes_field(body, 5, summary);
  record(event(step, body));
}

void EventFileWriter::session_start(std::int64_t step) {
  std::string log, body;
  int_field(log, 1, 1);       // SessionLog.status = START
  bytes_field(body, 6, log);  // Event.session_log
  record(event(step, body));
}

void EventFileWriter::flush() {
  if (buffer_.empty() || failed_) {
    buffer_.clear();
    return;
  }
  out_.write(buffer_.data(), static_cast<std::streamsize>(buffer_.size()));
  out_.flush();
  buffer_.clear();
  if (!out_) {  // (a full disk): monitoring must not stop training; say so once and stop writing
    failed_ = true;
    warn("cannot write the TensorBoard event file " + path_ + " (disk full?): no more events are written to it");
  }
}

}  // namespace hpctrain
