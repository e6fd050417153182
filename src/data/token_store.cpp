// Token stores: the node-shared stream and the streamed block cache (data/token_store.hpp).
#include "hpctrain/data/token_store.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "hpctrain/core/error.hpp"
#include "hpctrain/data/llmc_shards.hpp"
#include "hpctrain/io/h5.hpp"

namespace hpctrain {

// ---- TokenReader -----------------------------------------------------------------------------

struct TokenReader::Open {
  h5::Id file, tokens;  // hpctrain shards
  int fd = -1;          // llm.c shards
  ~Open() {
    if (fd >= 0) ::close(fd);
  }
};

TokenReader::TokenReader(const SplitIndex& split)
    : split_(split), width_(split.token_bits / 8), open_(split.shards.size()) {
  HPCT_CHECK(split.tokens && (width_ == 1 || width_ == 2 || width_ == 4), "TokenReader needs a token split");
}

TokenReader::~TokenReader() {
  std::lock_guard<std::mutex> lock(h5::lock());  // HDF5 handles close under the library's lock
  open_.clear();
}

std::size_t TokenReader::shard_at(std::int64_t pos) const {
  const auto it = std::upper_bound(split_.shards.begin(), split_.shards.end(), pos,
                                   [](std::int64_t p, const Shard& s) { return p < s.first; });
  HPCT_CHECK(it != split_.shards.begin() && pos < (it - 1)->first + (it - 1)->rows,
             "token position " + std::to_string(pos) + " outside the stream of " + split_.name);
  return static_cast<std::size_t>(it - split_.shards.begin() - 1);
}

void TokenReader::read_shard(std::size_t i, std::int64_t first, std::int64_t n, unsigned char* out) {
  const Shard& s = split_.shards[i];
  if (!open_[i]) open_[i] = std::make_unique<Open>();
  Open& o = *open_[i];
  if (split_.token_format == DataFormat::llmc) {
    if (o.fd < 0 && (o.fd = ::open(s.path.c_str(), O_RDONLY | O_CLOEXEC)) < 0)
      throw bad_input(s.path + ": cannot be opened: " + std::strerror(errno));
    std::size_t want = static_cast<std::size_t>(n) * static_cast<std::size_t>(width_), done = 0;
    off_t at = static_cast<off_t>(kLlmcHeaderBytes + first * width_);
    while (done < want) {
      const ssize_t got = ::pread(o.fd, out + done, want - done, at + static_cast<off_t>(done));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) throw bad_input(s.path + ": shorter than its header says (changed since start-up?)");
      done += static_cast<std::size_t>(got);
    }
    return;
  }
  static const hid_t types[] = {H5T_NATIVE_UINT8, H5T_NATIVE_UINT16, 0, H5T_NATIVE_UINT32};
  std::lock_guard<std::mutex> lock(h5::lock());
  if (!o.file.valid()) {
    o.file = h5::open_file(s.path);
    o.tokens = h5::Id(CHECK_H5(H5Dopen2(o.file.get(), "tokens", H5P_DEFAULT)));
  }
  h5::read_rows(o.tokens.get(), types[width_ - 1], static_cast<hsize_t>(first), static_cast<hsize_t>(n), out);
}

void TokenReader::read(std::int64_t pos, std::int64_t n, unsigned char* out) {
  while (n > 0) {
    const std::size_t i = shard_at(pos);
    const Shard& s = split_.shards[i];
    const std::int64_t in_shard = pos - s.first, take = std::min(n, s.rows - in_shard);
    read_shard(i, in_shard, take, out);
    pos += take, n -= take, out += take * width_;
  }
}

namespace {
template <typename T>
std::int64_t first_bad(const unsigned char* raw, std::int64_t n, std::int64_t vocab) {
  const T* t = reinterpret_cast<const T*>(raw);
  for (std::int64_t i = 0; i < n; ++i)
    if (static_cast<std::int64_t>(t[i]) >= vocab) return i;
  return -1;
}
}  // namespace

std::string TokenReader::check_ids(const unsigned char* raw, std::int64_t pos, std::int64_t n) const {
  const std::int64_t limit = split_.id_limit();
  const std::int64_t at = width_ == 1   ? first_bad<std::uint8_t>(raw, n, limit)
                          : width_ == 2 ? first_bad<std::uint16_t>(raw, n, limit)
                                        : first_bad<std::uint32_t>(raw, n, limit);
  if (at < 0) return "";
  std::uint32_t id = 0;
  std::memcpy(&id, raw + at * width_, static_cast<std::size_t>(width_));  // little-endian hosts
  const Shard& s = split_.shards[shard_at(pos + at)];
  return s.path + (split_.token_format == DataFormat::llmc ? ": token " : ": /tokens position ") +
         std::to_string(pos + at - s.first) + " holds token id " + std::to_string(id) +
         (id >= split_.num_classes
              ? ", outside the vocabulary [0, vocab_size = " + std::to_string(split_.num_classes) + ")"
              : ", above the largest id its split's shards record (max_token_id = " + std::to_string(split_.max_id) +
                    ")");
}

void widen_tokens(const unsigned char* raw, int width, std::int64_t n, std::int32_t* out) {
  if (width == 1) {
    for (std::int64_t i = 0; i < n; ++i) out[i] = raw[i];
  } else if (width == 2) {
    const auto* t = reinterpret_cast<const std::uint16_t*>(raw);
    for (std::int64_t i = 0; i < n; ++i) out[i] = t[i];
  } else {
    std::memcpy(out, raw, static_cast<std::size_t>(n) * 4);  // ids < 2^31 (scan_token_shard)
  }
}

namespace {
// The window at `raw` (T + 1 tokens) as T input ids and T target ids.
void split_window(const unsigned char* raw, int width, std::int64_t t, void* sample, void* label) {
  if (sample) widen_tokens(raw, width, t, static_cast<std::int32_t*>(sample));
  if (label) widen_tokens(raw + width, width, t, static_cast<std::int32_t*>(label));
}

std::uint64_t stream_bytes(const SplitIndex& split) {
  return static_cast<std::uint64_t>(split.stream_tokens) * static_cast<std::uint64_t>(split.token_bits / 8);
}
}  // namespace

// ---- TokenNodeCache --------------------------------------------------------------------------

TokenNodeCache::TokenNodeCache(const SplitIndex& split, Communicator& node)
    : split_(split), window_(node, stream_bytes(split)), width_(split.token_bits / 8) {
  std::string error;
  try {
    TokenReader reader(split);
    auto* base = reinterpret_cast<unsigned char*>(window_.data());
    for (std::size_t i = static_cast<std::size_t>(node.rank()); i < split.shards.size();
         i += static_cast<std::size_t>(node.size())) {
      const Shard& s = split.shards[i];
      reader.read(s.first, s.rows, base + s.first * width_);
      loaded_ += static_cast<std::uint64_t>(s.rows * width_);
    }
  } catch (const Error& e) {
    error = e.what();
  }
  int failed = error.empty() ? 0 : 1, any = 0;  // everyone reaches the fence, then all fail together
  node.allreduce(&failed, &any, 1, DType::i32, ReduceOp::max);
  if (any)
    throw Error(ExitCode::internal, Scope::this_rank,
                error.empty() ? "another rank on this node failed to load the token stream" : error);
  window_.fence();
}

void TokenNodeCache::get(std::int64_t start, void* sample, void* label) {
  const std::int64_t t = split_.block_size;
  HPCT_CHECK(
      start >= 0 && start + t + 1 <= split_.stream_tokens,
      "token window at " + std::to_string(start) + " outside the stream of " + std::to_string(split_.stream_tokens));
  split_window(reinterpret_cast<const unsigned char*>(window_.data()) + start * width_, width_, t, sample, label);
}

// ---- TokenBlockCache -------------------------------------------------------------------------

TokenBlockCache::TokenBlockCache(const SplitIndex& split, std::uint64_t capacity_bytes)
    : split_(split), reader_(split), block_(4096), capacity_(capacity_bytes) {
  while (block_ < split.block_size + 1) block_ *= 2;
  capacity_ = std::max<std::uint64_t>(capacity_, 2 * static_cast<std::uint64_t>(block_ * reader_.width()));
  window_.resize(static_cast<std::size_t>((split.block_size + 1) * reader_.width()));
}

std::string TokenBlockCache::describe() const {
  return std::string(kind()) + ": blocks of " + std::to_string(block_) + " tokens, at most " +
         std::to_string(capacity_ >> 20) + " MiB";
}

const TokenBlockCache::Block& TokenBlockCache::block(std::int64_t number) {
  auto it = blocks_.find(number);
  if (it != blocks_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second.lru);
    return it->second;
  }
  const std::int64_t first = number * block_, n = std::min(block_, split_.stream_tokens - first);
  const std::uint64_t size = static_cast<std::uint64_t>(n * reader_.width());
  while (!lru_.empty() && held_ + size > capacity_) {  // evict the least recently used
    auto victim = blocks_.find(lru_.back());
    held_ -= victim->second.raw.size();
    spare_ = std::move(victim->second.raw);
    blocks_.erase(victim);
    lru_.pop_back();
  }
  Block b;
  b.raw = std::move(spare_);  // an evicted block's buffer: no allocation
  b.raw.resize(size);
  reader_.read(first, n, b.raw.data());
  const std::string bad_id = reader_.check_ids(b.raw.data(), first, n);
  if (!bad_id.empty()) throw bad_input(bad_id);
  read_ += size;
  held_ += size;
  peak_ = std::max(peak_, held_);
  lru_.push_front(number);
  b.lru = lru_.begin();
  return blocks_.emplace(number, std::move(b)).first->second;
}

void TokenBlockCache::get(std::int64_t start, void* sample, void* label) {
  const std::int64_t t = split_.block_size;
  HPCT_CHECK(
      start >= 0 && start + t + 1 <= split_.stream_tokens,
      "token window at " + std::to_string(start) + " outside the stream of " + std::to_string(split_.stream_tokens));
  const int w = reader_.width();
  std::lock_guard<std::mutex> guard(mu_);
  const std::int64_t first = start / block_, last = (start + t) / block_;  // the blocks holding it
  const Block& a = block(first);
  const std::int64_t in_a = start - first * block_;
  if (first == last) return split_window(a.raw.data() + in_a * w, w, t, sample, label);
  const std::int64_t from_a = block_ - in_a;
  std::memcpy(window_.data(), a.raw.data() + in_a * w, static_cast<std::size_t>(from_a * w));
  const Block& b = block(last);  // (a stays: capacity holds two blocks)
  std::memcpy(window_.data() + from_a * w, b.raw.data(), static_cast<std::size_t>((t + 1 - from_a) * w));
  split_window(window_.data(), w, t, sample, label);
}

}  // namespace hpctrain
