// res( layers... ): a residual block, y = x + f(x), where f is the layers
// inside (written like [model] layers, nesting allowed); f must keep the
// shape. Its parameters are the inner layers', named "<block>.<inner>.<param>" (layer_names():
// "h.0.attn.qkv.weight" for h.0:res(ln_1:layernorm attn:attention(4)), "res.0.linear.0.weight").
#include <algorithm>
#include <cstdio>

#include "hpctrain/backend/ops.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/layers/registry.hpp"

namespace hpctrain {

namespace {
class Residual final : public Layer {
 public:
  Residual(const LayerArgs& a, const LayerRegistry& registry) : text_(a.text) {
    const auto specs = parse_layers(a.body);
    names_ = layer_names(specs);
    for (const auto& inner : specs) {
      inner_.push_back(registry.make(inner));
      legacy_.push_back(legacy_layer_name(inner_.size() - 1, inner_.back()->type()));
    }
    inner_views_.resize(inner_.size());
  }
  const char* type() const override { return "res"; }
  bool takes_position_blocks() const override {
    return std::all_of(inner_.begin(), inner_.end(), [](const auto& l) { return l->takes_position_blocks(); });
  }
  Shape output_shape(const Shape& in) const override {
    Shape s = in;
    for (const auto& l : inner_) s = l->output_shape(s);
    if (s != in)
      throw bad_input("[model] layers: " + text_ + " changes the shape " + shape_string(in) + " -> " + shape_string(s) +
                      "; a residual block must keep it");
    return in;
  }
  void configure(const Shape& in) override {
    shapes_ = {in};
    for (const auto& l : inner_) {
      l->configure(shapes_.back());
      shapes_.push_back(l->output_shape(shapes_.back()));
    }
  }
  std::vector<ParamSpec> param_specs(const Shape& in) const override {
    std::vector<ParamSpec> out;
    counts_.clear();
    Shape s = in;
    for (std::size_t j = 0; j < inner_.size(); ++j) {
      auto specs = inner_[j]->param_specs(s);
      counts_.push_back(specs.size());
      for (auto& p : specs) {
        p.name = names_[j] + "." + p.name;
        out.push_back(p);
      }
      s = inner_[j]->output_shape(s);
    }
    return out;
  }
  void set_context(const StepContext* ctx, std::size_t index) override {
    Layer::set_context(ctx, index);
    // The inner layers see the block's own copy of the context (refreshed at every call), whose
    // saved set is the recompute set while the block is checkpointed.
    for (std::size_t j = 0; j < inner_.size(); ++j) inner_[j]->set_context(&inner_ctx_, index * 1000 + j + 1);
  }
  void set_tensor_parallel(TensorParallel tp) override {
    Layer::set_tensor_parallel(tp);
    for (auto& layer : inner_) layer->set_tensor_parallel(tp);
  }
  void set_cache_positions(std::int64_t positions) override {
    for (auto& layer : inner_) layer->set_cache_positions(positions);
  }
  bool cache_serves(std::int64_t position) const override {
    return std::all_of(inner_.begin(), inner_.end(), [&](const auto& l) { return l->cache_serves(position); });
  }
  double own_bytes() const override {
    double bytes = Layer::own_bytes();
    for (const auto& l : inner_) bytes += l->own_bytes();
    return bytes;
  }
  void sync_buffers(bool to_host) override {
    for (auto& layer : inner_) layer->sync_buffers(to_host);
  }
  void finish_statistics(Communicator& group) override {
    for (auto& layer : inner_) layer->finish_statistics(group);
  }
  std::vector<std::pair<std::string, std::vector<float>*>> buffers() override {
    std::vector<std::pair<std::string, std::vector<float>*>> out;
    for (std::size_t j = 0; j < inner_.size(); ++j)
      for (auto& [name, buf] : inner_[j]->buffers()) out.push_back({names_[j] + "." + name, buf});
    return out;
  }
  std::string legacy_name(const std::string& tensor) const override {
    std::size_t best = inner_.size();  // the longest inner name the tensor's name starts with
    for (std::size_t j = 0; j < inner_.size(); ++j)
      if (tensor.rfind(names_[j] + ".", 0) == 0 && (best == inner_.size() || names_[j].size() > names_[best].size()))
        best = j;
    HPCT_CHECK(best < inner_.size(), "res: " + tensor + " is no inner layer's");
    return legacy_[best] + "/" + inner_[best]->legacy_name(tensor.substr(names_[best].size() + 1));
  }

  // Saved: every inner output (16 bits in bf16/fp16 runs) and what the inner layers save, all of it
  // dropped by recompute = blocks. Scratch: the two gradient buffers of backward around the deepest
  // inner call's (16-bit runs: with its input and output unpacked).
  LayerMemory memory(const Shape&, const MemoryQuery& q) const override {
    LayerMemory m;
    const bool sixteen = q.precision != Precision::fp32;
    const double rows = static_cast<double>(q.rows);
    auto elems = [&](std::size_t j) { return rows * static_cast<double>(numel(shapes_[j])); };
    for (std::size_t j = 0; j < inner_.size(); ++j) {
      const LayerMemory in = inner_[j]->memory(shapes_[j], q);
      m.saved += (sixteen ? 2 : 4) * elems(j + 1) + in.saved;
      m.cache += in.cache;
      const double unpacked = sixteen ? (j > 0 ? MemoryQuery::temp(elems(j)) : 0) + MemoryQuery::temp(elems(j + 1)) : 0;
      m.scratch = std::max(m.scratch, in.scratch + unpacked);
    }
    m.scratch += 2 * MemoryQuery::temp(rows * static_cast<double>(widest()));
    m.inner = m.saved;
    return m;
  }
  void forward(const Tensor& x, Tensor& y) override {
    const bool checkpointed = enter(false);
    add(x, run_inner(x, !checkpointed), y);
    if (checkpointed) inner_ctx_.saved->clear();  // backward re-runs the inner forwards
  }

  void backward(const Tensor& x, const Tensor&, const Tensor& dy, Tensor& dx) override {
    const std::int64_t rows = x.rows();
    const bool checkpointed = enter(true);
    if (checkpointed) {
      StepArena::Scope scope(inner_ctx_.arena);
      run_inner(x, true);  // the same values again (dropout replays its draws), kept in the recompute set
    }
    // The gradients between inner layers, alternating between two buffers of the largest size
    // (the skip path needs the last one).
    Tensor bufs[2] = {temp(0, {rows * widest()}, x.device()), temp(1, {rows * widest()}, x.device())};
    Tensor d = dy;  // gradient flowing into the last inner layer's output
    for (std::size_t j = inner_.size(); j-- > 0;) {
      inner_[j]->set_accumulate_grads(accumulate_grads());
      Tensor din = bufs[j % 2].view(0, batch_shape(x, shapes_[j]));
      StepArena::Scope scope(inner_ctx_.arena);
      const Tensor in = j == 0 ? x : output(j - 1, x, 4), out = output(j, x, 5);
      hand_views(j);
      inner_[j]->backward(in, out, d, din);
      drop_views(j);
      d = din;
    }
    if (checkpointed) inner_ctx_.saved->clear();
    if (!dx.defined()) return;
    add(dy, d, dx);
  }

 private:
  // [rows, s...] for the block's input x; when x is shorter than the block's T (generation with a
  // key/value cache runs fewer positions: Model::set_length), s's first dimension at x's length.
  Shape batch_shape(const Tensor& x, const Shape& s) const {
    Shape b{x.rows()};
    b.insert(b.end(), s.begin(), s.end());
    if (x.shape().size() > 1 && x.shape()[1] != shapes_[0][0]) b[1] = x.shape()[1];
    return b;
  }
  std::int64_t widest() const {
    std::int64_t w = 0;
    for (const Shape& s : shapes_) w = std::max(w, numel(s));
    return w;
  }
  // Runs the inner forwards on x; returns the last inner output. fp32 runs: each output is a
  // tensor kept in the set (the micro-batch's saved set, or the recompute set while
  // checkpointed). bf16/fp16 runs: the outputs are f32 in two alternating buffers from the arena,
  // rounded to the format after each inner layer (as the model rounds its layers' outputs) and,
  // with `keep`, kept in the set in 16 bits. keep = false: nothing is kept (a checkpointed
  // block's forward: backward runs it again).
  Tensor run_inner(const Tensor& x, bool keep) {
    const std::int64_t rows = x.rows();
    const Device dev = x.device();
    Tensor work[2];
    if (sixteen_bit_run()) work[0] = temp(2, {rows * widest()}, dev), work[1] = temp(3, {rows * widest()}, dev);
    Tensor prev = x;
    for (std::size_t j = 0; j < inner_.size(); ++j) {
      const Shape shape = batch_shape(x, shapes_[j + 1]);
      Tensor out = sixteen_bit_run() ? work[j % 2].view(0, shape) : kept(j, shape, dev, false);
      {
        StepArena::Scope scope(inner_ctx_.arena);
        hand_views(j);
        inner_[j]->forward(prev, out);
        drop_views(j);
      }
      if (sixteen_bit_run()) {
        round_to_precision(out, inner_ctx_.precision);
        if (keep) {
          Tensor packed = kept(j, shape, dev, true);
          pack_16bit(out, packed);
        }
      }
      prev = out;
    }
    return prev;
  }
  // Inner output j for backward: the kept tensor (fp32), or its 16 bits unpacked into temp k.
  Tensor output(std::size_t j, const Tensor& x, std::size_t k) {
    const Shape shape = batch_shape(x, shapes_[j + 1]);
    const Device dev = x.device();
    if (!sixteen_bit_run()) return kept(j, shape, dev, false);
    Tensor t = temp(k, shape, dev);
    unpack_16bit(kept(j, shape, dev, true), t);
    return t;
  }
  Tensor kept(std::size_t j, const Shape& shape, Device dev, bool packed) {
    const DType dtype = packed ? storage_dtype(inner_ctx_.precision) : DType::f32;
    return inner_ctx_.saved ? inner_ctx_.saved->get(this, j, shape, dev, dtype) : saved(j, shape, dev, dtype);
  }
  bool sixteen_bit_run() const { return inner_ctx_.precision != Precision::fp32; }
  // Inner layer j's share of the block's parameters (param_specs() puts them one layer after
  // another), for its next call.
  void hand_views(std::size_t j) {
    ParamViews& all = views();
    ParamViews& v = inner_views_[j];
    std::size_t k = 0;
    for (std::size_t i = 0; i < j; ++i) k += counts_[i];
    const auto begin = static_cast<std::ptrdiff_t>(k), end = static_cast<std::ptrdiff_t>(k + counts_[j]);
    v.params.assign(all.params.begin() + begin, all.params.begin() + end);
    v.grads.assign(all.grads.begin() + begin, all.grads.begin() + end);
    v.layer = inner_[j].get();
    inner_ctx_.params = &v;
  }
  // After the call: the views may be copies in the arena (bf16/fp16), whose handles must not
  // outlive the call (a handle keeps a regrown arena's old buffer alive).
  void drop_views(std::size_t j) {
    inner_views_[j].params.clear();
    inner_views_[j].grads.clear();
  }
  // Refreshes the inner layers' context from the block's; whether this call is checkpointed
  // ([train] recompute = blocks, outside another checkpointed block; evaluating too, so an
  // evaluation batch holds one block's inner tensors at a time): then the inner tensors go to the
  // recompute set, and a backward's forwards are repeats.
  bool enter(bool backward) {
    inner_ctx_ = has_context() ? context() : StepContext{};
    const bool on = inner_ctx_.recompute_set && inner_ctx_.saved != inner_ctx_.recompute_set;
    if (on) {
      inner_ctx_.saved = inner_ctx_.recompute_set;
      inner_ctx_.recompute = backward;
    }
    return on;
  }

  std::string text_;
  std::vector<std::unique_ptr<Layer>> inner_;
  std::vector<std::string> names_;           // layer_names() of the inner layers
  std::vector<std::string> legacy_;          // their format-1 names, "01_attention"
  std::vector<Shape> shapes_;                // per sample: input, then each inner output
  mutable std::vector<std::size_t> counts_;  // parameters per inner layer (from param_specs)
  StepContext inner_ctx_;
  std::vector<ParamViews> inner_views_;  // per inner layer: its views in this call
};
}  // namespace

void register_residual(LayerRegistry& r) {
  r.add("res", "res(layers...): residual block y = x + f(x), f written like the model, may nest",
        [&r](const LayerArgs& a) -> std::unique_ptr<Layer> {
          if (a.body.empty())
            throw bad_input("[model] layers: " + a.text + ": give the block's layers, e.g. res(dense(8) relu)");
          return std::make_unique<Residual>(a, r);
        });
}

}  // namespace hpctrain
