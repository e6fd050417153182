// Implementation of the reader (data/reader.hpp): batch assembly with
// normalization, the prefetch thread, and evaluation ranges.
#include "hpctrain/data/reader.hpp"

#include <chrono>
#include <cmath>
#include <cstring>

#include "hpctrain/core/error.hpp"
#include "hpctrain/core/half.hpp"
#include "hpctrain/core/hash.hpp"
#include "hpctrain/data/token_dataset.hpp"

namespace hpctrain {

std::pair<std::int64_t, std::int64_t> eval_range(std::int64_t n, int dp, int dp_size) {
  const std::int64_t base = n / dp_size, extra = n % dp_size;
  const std::int64_t begin = dp * base + std::min<std::int64_t>(dp, extra);
  return {begin, begin + base + (dp < extra ? 1 : 0)};
}

void assemble_batch(const SplitIndex& split, SampleStore& store, const std::vector<std::int64_t>& indices, bool samples,
                    bool labels, Batch& batch, const DepthSlab& slab) {
  const std::size_t n = indices.size();
  const auto elems = static_cast<std::size_t>(split.sample_elems() / slab.size);
  const std::size_t channels = split.scale.size();
  const std::size_t per_channel = channels > 1 ? elems / channels : elems;
  batch.size = static_cast<std::int64_t>(n);
  batch.indices = indices;
  const bool ids = split.sample_type == SampleType::i32;  // token ids: copied as they are
  batch.samples.resize(samples && !ids ? n * elems : 0);
  batch.ids.resize(samples && ids ? n * elems : 0);
  batch.classes.resize(labels && split.classification ? n * static_cast<std::size_t>(split.label_width) : 0);
  batch.targets.resize(labels && !split.classification ? n * static_cast<std::size_t>(split.label_width) : 0);
  std::vector<unsigned char> raw(samples ? static_cast<std::size_t>(split.sample_bytes()) : 0);
  std::vector<unsigned char> whole(samples && slab.on() ? raw.size() : 0);  // (a slab copied out of a whole sample)
  std::vector<unsigned char> label(label_bytes(split));
  store.prefetch(indices);  // a chunk cache decodes what the batch needs at once, on its threads
  for (std::size_t i = 0; i < n; ++i) {
    void* to_label = labels ? label.data() : nullptr;
    if (!slab.on()) {
      store.get(indices[i], samples ? raw.data() : nullptr, to_label);
    } else if (!store.get_slab(indices[i], slab, samples ? raw.data() : nullptr, to_label)) {
      store.get(indices[i], samples ? whole.data() : nullptr, to_label);
      if (samples) copy_slab(split, slab, whole.data(), raw.data());
    }
    if (samples && ids) {
      std::memcpy(batch.ids.data() + i * elems, raw.data(), elems * sizeof(std::int32_t));
    } else if (samples) {
      float* out = batch.samples.data() + i * elems;
      for (std::size_t c = 0; c < (channels > 1 ? channels : 1); ++c) {
        const float a = split.scale[c], b = split.offset[c];
        const std::size_t lo = c * per_channel, hi = lo + per_channel;
        switch (split.sample_type) {
          case SampleType::u8:
            for (std::size_t k = lo; k < hi; ++k) out[k] = static_cast<float>(raw[k]) * a + b;
            break;
          case SampleType::f16: {
            const auto* h = reinterpret_cast<const std::uint16_t*>(raw.data());
            for (std::size_t k = lo; k < hi; ++k) out[k] = half_value(h[k]) * a + b;
            break;
          }
          case SampleType::f32: {
            const auto* f = reinterpret_cast<const float*>(raw.data());
            for (std::size_t k = lo; k < hi; ++k) out[k] = f[k] * a + b;
            break;
          }
          case SampleType::u16: {  // (counts: with the shards' transform = log1p, log(1 + x) first)
            const auto* u = reinterpret_cast<const std::uint16_t*>(raw.data());
            if (split.log1p)
              for (std::size_t k = lo; k < hi; ++k) out[k] = std::log1p(static_cast<float>(u[k])) * a + b;
            else
              for (std::size_t k = lo; k < hi; ++k) out[k] = static_cast<float>(u[k]) * a + b;
            break;
          }
          case SampleType::i32: break;  // (copied above)
        }
      }
    }
    if (labels) {
      if (split.classification)
        std::memcpy(&batch.classes[i * static_cast<std::size_t>(split.label_width)], label.data(), label.size());
      else
        std::memcpy(batch.targets.data() + i * static_cast<std::size_t>(split.label_width), label.data(), label.size());
    }
  }
}

Reader::Reader(const SplitIndex& split, Communicator& node, ReaderOptions options)
    : split_(split),
      options_(options),
      store_(make_store(split, node, options.cache_bytes, options.samples, options.labels, options.decode_threads,
                        options.slab)) {
  if (options_.augment.on()) check_augmentation(split_, options_.augment);
}

void check_augmentation(const SplitIndex& split, const Augmentation& a) {
  const auto& s = split.sample_shape;
  std::string shape;
  for (auto d : s) shape += (shape.empty() ? "[" : ", ") + std::to_string(d);
  if (split.tokens || (s.size() != 2 && s.size() != 3))
    throw bad_input("[data] random_crop_pad and random_flip augment images, [C, H, W] or [H, W] samples; " +
                    split.name + " holds " + (split.tokens ? std::string("token windows") : shape + "] samples"));
  const std::int64_t h = s[s.size() - 2], w = s.back();
  if (a.crop_pad > h || a.crop_pad > w)
    throw bad_input("[data] random_crop_pad = " + std::to_string(a.crop_pad) + " exceeds the images' " +
                    std::to_string(h) + " x " + std::to_string(w));
}

void augment_batch(const SplitIndex& split, const Augmentation& a, Batch& batch) {
  if (!a.on() || batch.samples.empty()) return;
  const auto& s = split.sample_shape;
  const std::int64_t c = s.size() == 3 ? s[0] : 1, h = s[s.size() - 2], w = s.back(), p = a.crop_pad;
  std::vector<float> src(static_cast<std::size_t>(c * h * w));
  for (std::int64_t i = 0; i < batch.size; ++i) {
    const std::uint64_t r =
        splitmix64(splitmix64(splitmix64(a.seed ^ 0x6175676d656e74ull) ^ static_cast<std::uint64_t>(batch.epoch)) ^
                   static_cast<std::uint64_t>(batch.indices[static_cast<std::size_t>(i)]));
    const auto span = static_cast<std::uint64_t>(2 * p + 1);
    const std::int64_t dy = static_cast<std::int64_t>(r % span) - p,
                       dx = static_cast<std::int64_t>((r >> 20) % span) - p;
    const bool flip = a.flip && ((r >> 45) & 1);
    float* x = batch.samples.data() + i * c * h * w;
    std::copy(x, x + c * h * w, src.begin());
    for (std::int64_t k = 0; k < c; ++k) {
      const float zero = split.offset[split.offset.size() > 1 ? static_cast<std::size_t>(k) : 0];  // raw 0, normalized
      for (std::int64_t y = 0; y < h; ++y)
        for (std::int64_t xx = 0; xx < w; ++xx) {
          const std::int64_t sy = y + dy, sx = (flip ? w - 1 - xx : xx) + dx;
          x[(k * h + y) * w + xx] =
              sy >= 0 && sy < h && sx >= 0 && sx < w ? src[static_cast<std::size_t>((k * h + sy) * w + sx)] : zero;
        }
    }
  }
}

Reader::~Reader() { stop(); }

void Reader::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Reader::start(const Sampler& sampler, SamplerState from) {
  stop();
  HPCT_CHECK(sampler.size() == split_.total, "sampler and split sizes differ");
  sampler_ = &sampler;
  next_ = produced_ = from;
  queue_.clear();
  error_.clear();
  stop_ = false;
  if (options_.prefetch > 0) thread_ = std::thread([this] { produce(); });
}

namespace {
void advance(SamplerState& s, std::int64_t steps_per_epoch) {
  if (++s.step == steps_per_epoch) {
    s.step = 0;
    ++s.epoch;
  }
}
}  // namespace

void Reader::produce() {
  for (;;) {
    SamplerState at;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || static_cast<int>(queue_.size()) < options_.prefetch; });
      if (stop_) return;
      at = produced_;
    }
    Batch b;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!spare_.empty()) {
        b = std::move(spare_.back());
        spare_.pop_back();
      }
    }
    b.epoch = at.epoch;
    b.step = at.step;
    try {
      assemble_batch(split_, *store_,
                     positions(at.epoch, sampler_->batch(at.epoch, at.step, options_.dp, options_.dp_size)),
                     options_.samples, options_.labels, b, options_.slab);
      augment_batch(split_, options_.augment, b);
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> lock(mu_);
      error_ = e.what();
      cv_.notify_all();
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back(std::move(b));
      advance(produced_, sampler_->steps_per_epoch());
    }
    cv_.notify_all();
  }
}

Batch Reader::next() {
  HPCT_CHECK(sampler_ != nullptr, "Reader::next before start");
  const auto t0 = std::chrono::steady_clock::now();
  Batch b;
  if (options_.prefetch == 0) {
    b.epoch = next_.epoch;
    b.step = next_.step;
    assemble_batch(split_, *store_,
                   positions(next_.epoch, sampler_->batch(next_.epoch, next_.step, options_.dp, options_.dp_size)),
                   options_.samples, options_.labels, b, options_.slab);
    augment_batch(split_, options_.augment, b);
  } else {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !queue_.empty() || !error_.empty(); });
    if (queue_.empty()) throw Error(ExitCode::internal, Scope::this_rank, "data prefetch failed: " + error_);
    b = std::move(queue_.front());
    queue_.pop_front();
  }
  cv_.notify_all();
  wait_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  advance(next_, sampler_->steps_per_epoch());
  return b;
}

void Reader::recycle(Batch&& batch) {
  std::lock_guard<std::mutex> lock(mu_);
  if (spare_.size() < static_cast<std::size_t>(options_.prefetch) + 1) spare_.push_back(std::move(batch));
}

SamplerState Reader::state() const { return next_; }

std::vector<std::int64_t> Reader::positions(std::int64_t epoch, std::vector<std::int64_t> samples) const {
  if (!split_.tokens) return samples;
  const std::uint64_t seed = sampler_ ? sampler_->options().seed : 0;  // evaluation (epoch < 0) needs none
  for (auto& w : samples) w = window_start(split_, seed, epoch, w);
  return samples;
}

std::int64_t Reader::eval_batches(std::int64_t batch) const {
  const auto [lo, hi] = eval_range(split_.total, options_.dp, options_.dp_size);
  return (hi - lo + batch - 1) / batch;
}

Batch Reader::eval_batch(std::int64_t batch_size, std::int64_t number) {
  const auto [lo, hi] = eval_range(split_.total, options_.dp, options_.dp_size);
  const std::int64_t first = lo + number * batch_size, last = std::min(hi, first + batch_size);
  HPCT_CHECK(first < last, "evaluation batch " + std::to_string(number) + " is past this rank's range");
  std::vector<std::int64_t> indices;
  for (std::int64_t i = first; i < last; ++i) indices.push_back(i);
  Batch b;
  b.step = number;
  assemble_batch(split_, *store_, positions(-1, std::move(indices)), options_.samples, options_.labels, b,
                 options_.slab);
  return b;
}

}  // namespace hpctrain
