// The buffers a batch runs in (model/model.hpp): the activations between layers (per pipeline
// micro-batch set; forward-only models: two turns), the gradients between them, the scratch
// arena, their shapes for a batch of rows and, for generation, a shorter length and one output
// position.
#include <algorithm>
#include <string>

#include "hpctrain/core/error.hpp"
#include "hpctrain/model/model.hpp"

namespace hpctrain {

std::int64_t Model::widest_between() const {
  std::int64_t widest = 0;
  for (std::size_t i = 1; i + 1 < shapes_.size(); ++i) widest = std::max(widest, numel(shapes_[i]));
  return widest;
}

double Model::gradient_buffer_bytes(std::int64_t rows, Precision precision) const {  // (as set_batch allocates)
  const std::size_t last = shapes_.size() - 1;
  const std::int64_t turns = std::min<std::int64_t>(2, static_cast<std::int64_t>(last) - 1);  // (-1: one layer)
  std::int64_t elems = (first_ > 0 ? numel(shapes_[0]) : 0) + (loss_in_head_ ? 0 : numel(shapes_[last]));
  elems += (std::max<std::int64_t>(turns, 0) + (precision != Precision::fp32 ? 2 : 0)) * widest_between();
  return 4.0 * static_cast<double>(rows) * static_cast<double>(elems);
}

// The gradients between layers: the output's (the loss's) and, on a later pipeline stage, the
// input's (sent upstream) have buffers of their own; the ones in between take turns in two
// buffers of the widest (backward of layer i reads i + 1's and writes i's). loss_in_head_: no
// output gradient (the last layer makes it a chunk at a time).
void Model::allocate_gradient_buffers(std::int64_t rows) {
  const std::size_t last = shapes_.size() - 1;
  if (!loss_in_head_) grad_buf_[last] = Tensor::zeros({rows * numel(shapes_[last])}, alloc_);
  if (first_ > 0) grad_buf_[0] = Tensor::zeros({rows * numel(shapes_[0])}, alloc_);  // sent upstream
  const std::int64_t widest = widest_between();
  Tensor turns[2];
  for (std::size_t i = 1; i < last; ++i) {
    if (!turns[i % 2].defined()) turns[i % 2] = Tensor::zeros({rows * widest}, alloc_);
    grad_buf_[i] = turns[i % 2];
  }
}

void Model::set_batch(std::int64_t rows) {
  if (rows == rows_) return;
  if (rows > capacity_) {  // grow the buffers; smaller batches (the last evaluation batch) use views
    capacity_ = rows;
    grad_buf_.assign(shapes_.size(), Tensor());
    if (!forward_only_) allocate_gradient_buffers(rows);
    const std::int64_t widest = widest_between();
    if (precision_ != Precision::fp32)  // the forward's float32 outputs between layers
      for (Tensor& w : work_) w = Tensor::zeros({rows * widest}, alloc_);
    // The scratch the deepest layer call takes, as the layers state it (Layer::memory).
    const double scratch = activation_memory(rows, precision_, alloc_.device(), false).scratch;
    arena_.reserve(static_cast<std::int64_t>(scratch / 4));
  }
  rows_ = rows;
  grads_act_.assign(shapes_.size(), Tensor());
  for (std::size_t i = 0; i < shapes_.size(); ++i)
    if ((i > 0 || first_ > 0) && grad_buf_[i].defined()) grads_act_[i] = grad_buf_[i].view(0, batch_shape(i));
  use_set(0);  // (not the set in use: a larger evaluation batch must not grow a pipeline's other sets)
}

Shape Model::batch_shape(std::size_t i) const {
  const Shape sample = sample_shape(i);
  Shape s{rows_};
  s.insert(s.end(), sample.begin(), sample.end());
  return s;
}

Shape Model::sample_shape(std::size_t i) const {
  Shape s = shapes_[i];
  if (length_ > 0 && !(one_position_ && i + 1 == shapes_.size())) s[0] = length_;  // (one position: stays 1)
  return s;
}

void Model::require_token_model(const std::string& why) const {
  const std::int64_t t = shapes_.front().empty() ? 0 : shapes_.front()[0];
  for (std::size_t i = 0; i + (one_position_ ? 1 : 0) < shapes_.size(); ++i)
    if (const Shape& s = shapes_[i]; s.empty() || s[0] != t)
      throw bad_input(why + " needs a token model (every layer's output [T, ...]); layer outputs " + shape_string(s) +
                      " for an input " + shape_string(shapes_.front()));
}

void Model::set_length(std::int64_t len) {
  const std::int64_t t = shapes_.front().empty() ? 0 : shapes_.front()[0];
  if (len > 0) require_token_model("a key/value cache");
  HPCT_CHECK(len >= 0 && len <= t, "Model::set_length(" + std::to_string(len) + ") for T = " + std::to_string(t));
  length_ = len == t ? 0 : len;
  for (std::size_t i = 0; i < grads_act_.size(); ++i)
    if (grads_act_[i].defined()) grads_act_[i] = grad_buf_[i].view(0, batch_shape(i));
  if (rows_ > 0) use_set(set_);
}

bool Model::set_positions(std::int64_t len, std::int64_t forward) {
  if (tp_.sequence > 0 && tp_.size > 1) return false;  // (the layers' positions are the rank's block)
  require_token_model("generation for the positions it reaches");
  if (block_ == 0) block_ = shapes_.front()[0];
  if (forward == 0) forward = len;
  HPCT_CHECK(len > 0 && len <= block_ && forward > 0 && forward <= len && length_ == 0,
             "Model::set_positions(" + std::to_string(len) + ", " + std::to_string(forward) +
                 ") for T = " + std::to_string(block_));
  if (len == positions() && forward == shapes_.front()[0]) return true;
  positions_ = len;
  for (std::size_t i = 0; i + (one_position_ ? 1 : 0) < shapes_.size(); ++i) shapes_[i][0] = forward;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    layers_[i]->configure(shapes_[i]);
    layers_[i]->set_cache_positions(len);
  }
  // (the buffers of the old length go: set_batch makes them anew)
  capacity_ = 0, rows_ = -1;
  grad_buf_.clear(), grads_act_.clear(), acts_.clear(), sets_.clear();
  work_[0] = work_[1] = Tensor();
  ctx_.saved = nullptr;
  return true;
}

bool Model::cache_serves(std::int64_t position) const {
  return std::all_of(layers_.begin(), layers_.end(), [&](const auto& l) { return l->cache_serves(position); });
}

Shape Model::input_sample() const { return sample_shape(0); }

std::size_t Model::saved_bytes() const {
  std::size_t n = recompute_set_.bytes();
  for (const auto& set : sets_) n += set->saved.bytes();
  return n;
}

std::size_t Model::activation_bytes() const {
  std::size_t n = saved_bytes() + (whole_output_.defined() ? whole_output_.bytes() : 0);
  for (const auto& set : sets_) {
    for (const Tensor& t : set->turns) n += t.defined() ? t.bytes() : 0;
    for (std::size_t i = 0; i < set->acts.size(); ++i)  // (forward-only: those between are views of the turns)
      if (set->acts[i].defined() && (!forward_only_ || i + 1 == set->acts.size())) n += set->acts[i].bytes();
  }
  return n;
}

void Model::use_set(std::size_t k) {
  while (sets_.size() <= k) sets_.push_back(std::make_unique<ActivationSet>(alloc_));
  ActivationSet& set = *sets_[k];
  if (set.capacity < rows_) {  // grown to the batch it is used with (an evaluation batch grows set 0 only)
    set.capacity = rows_;
    set.acts.assign(shapes_.size(), Tensor());
    for (std::size_t i = 1; i < shapes_.size(); ++i) {      // bf16/fp16: in 16 bits, but the last (the loss reads it)
      if (loss_in_head_ && i + 1 == shapes_.size()) break;  // (made only by a forward without a loss: forward)
      const bool between = i + 1 < shapes_.size();
      const DType dtype = precision_ != Precision::fp32 && between ? storage_dtype(precision_) : DType::f32;
      const std::int64_t n = rows_ * numel(shapes_[i]);
      if (forward_only_ && between) {  // (layer i reads turn i % 2 and writes the other)
        Tensor& turn = set.turns[i % 2];
        if (!turn.defined()) turn = Tensor::zeros({rows_ * widest_between()}, alloc_, dtype);
        set.acts[i] = turn.view(0, {n});
        continue;
      }
      set.acts[i] = Tensor::zeros({n}, alloc_, dtype);
    }
  }
  set_ = k;
  ctx_.saved = &set.saved;
  acts_.assign(shapes_.size(), Tensor());
  if (rows_ < 0) return;
  for (std::size_t i = 1; i < shapes_.size(); ++i)
    if (set.acts[i].defined()) acts_[i] = set.acts[i].view(0, batch_shape(i));
}

void Model::set_loss_chunk(std::int64_t rows) {
  HPCT_CHECK(rows >= 0 && capacity_ == 0, "Model::set_loss_chunk(" + std::to_string(rows) + ") after set_batch");
  loss_in_head_ = false;
  if (rows == 0 || first_ + layers_.size() < all_names_.size()) return;  // (an earlier pipeline stage)
  if (!layers_.back()->set_loss_chunk(rows))
    throw bad_input("[train] loss_chunk = " + std::to_string(rows) + ": the model's last layer, " + names_.back() +
                    " (" + layers_.back()->type() +
                    "), cannot run the loss itself (lm_head can: a language model's); set loss_chunk = 0");
  loss_in_head_ = true;
}

bool Model::set_one_output_position() {
  HPCT_CHECK(capacity_ == 0, "Model::set_one_output_position after set_batch");
  if (first_ + layers_.size() < all_names_.size() || !layers_.back()->set_one_position()) return false;
  shapes_.back() = layers_.back()->output_shape(shapes_[shapes_.size() - 2]);  // [1, V]
  one_position_ = true;
  return true;
}

}  // namespace hpctrain
