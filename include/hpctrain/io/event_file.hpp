// TensorBoard event files (docs/monitoring.md): the records TensorBoard, `wandb sync
// --sync-tensorboard` and TensorFlow's summary readers read. A file is a sequence of records
// (length as 8 bytes little-endian, masked CRC32C of those 8 bytes, the serialized `Event`
// protobuf, masked CRC32C of it); the first event carries file_version "brain.Event:2".
//
// The few protobuf messages used (Event, Summary, Summary.Value, SummaryMetadata, TensorProto,
// SessionLog; field numbers as tensorflow/core/util/event.proto and summary.proto define them,
// restated in tools/tensorboard/event.proto, from which the tests decode) are encoded by hand
// here: about 60 lines of wire format instead of a protobuf build dependency on every machine
// that builds hpctrain (GPU machines included). CRC32C is Boost.CRC.
//
// Writing is buffered: records are encoded into memory and reach the file at flush() (the
// trainer flushes at log intervals, at the end and on a preemption signal), never per step. A
// failed write (a full disk) is one warning, then the file is left as it is: monitoring never
// stops a training run.
#pragma once

#include <cstdint>
#include <fstream>
#include <string>

namespace hpctrain {

// CRC32C (Castagnoli) and TensorFlow's masking of it.
std::uint32_t crc32c(const void* data, std::size_t bytes);
std::uint32_t masked_crc32c(const void* data, std::size_t bytes);

class EventFileWriter {
 public:
  // Creates `dir` and events.out.tfevents.<unix time>.<host>.<pid>.hpctrain in it, and buffers
  // the file_version event. Throws bad_input naming the directory when it cannot be written.
  explicit EventFileWriter(const std::string& dir);
  ~EventFileWriter();  // flushes
  EventFileWriter(const EventFileWriter&) = delete;
  EventFileWriter& operator=(const EventFileWriter&) = delete;

  void scalar(const std::string& tag, std::int64_t step, double value);
  // A text summary (TensorBoard's Text tab: a string tensor with plugin "text"), e.g. Markdown.
  void text(const std::string& tag, std::int64_t step, const std::string& markdown);
  // SessionLog START at `step`: readers that apply TensorBoard's purge drop the points of
  // earlier records at `step` and later (a resumed run passes its first new step).
  void session_start(std::int64_t step);
  void flush();
  const std::string& path() const { return path_; }

 private:
  void record(const std::string& event);
  std::string path_, buffer_;
  std::ofstream out_;
  bool failed_ = false;  // a write failed: warned once, nothing more is written
};

}  // namespace hpctrain
