// Implementation of the model (model/model.hpp).
#include "hpctrain/model/model.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <thread>

#include "hpctrain/backend/ops.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/core/hash.hpp"
#include "hpctrain/core/table.hpp"

namespace hpctrain {

namespace {
// [parallel] sequence_parallel: the embedding splits the positions, the lm_head gathers them, and
// every layer between works on a block of them (Layer::takes_position_blocks).
void refuse_sequence_parallel(const Layer& layer, const std::string& text, std::size_t i, std::size_t count) {
  const std::string type = layer.type();
  const char* need = i == 0 && type != "embedding"         ? "the first layer must be an embedding"
                     : i + 1 == count && type != "lm_head" ? "the last layer must be an lm_head"
                     : !layer.takes_position_blocks()      ? "this layer does not work on a block of the positions"
                                                           : nullptr;
  if (need)
    throw bad_input("[parallel] sequence_parallel: [model] layers: " + text + ": " + need +
                    " (it splits a language model's positions between the embedding and the lm_head; "
                    "docs/parallelism.md)");
}

// [parallel] spatial_parallel: the role of layer i while its input is a slab; bad_input for a
// layer that cannot take one (or a model whose output would be a slab: `last`).
void refuse_slab(SpatialRole role, const std::string& text, int size, bool last) {
  if (role == SpatialRole::gathers) return;
  const char* why = role == SpatialRole::none ? "this layer does not work on a depth slab of a volume"
                    : last                    ? "the model ends before gathering the slabs"
                                              : nullptr;
  if (why)
    throw bad_input("[parallel] spatial_parallel = " + std::to_string(size) + ": [model] layers: " + text + ": " + why +
                    " (the layers before the first flatten or gap3d see one slab of each volume's depth: "
                    "conv3d, maxpool3d, avgpool3d and element-wise layers; docs/volumes.md)");
}
}  // namespace

Model::Model(const std::string& layers, const Shape& sample_shape, const LayerRegistry& registry, Allocator& alloc,
             std::size_t first, std::size_t last, bool whole_gradients, bool whole_parameters, TensorParallel tp,
             SpatialSplit sp)
    : alloc_(alloc), tp_(tp), first_(first) {
  const auto specs = parse_layers(layers);
  last = std::min(last, specs.size());
  HPCT_CHECK(first < last, "model layer range [" + std::to_string(first) + ", " + std::to_string(last) + ") of " +
                               std::to_string(specs.size()) + " layers");
  // Every layer is made (cheap: parameters live in the model's buffers) so shapes, names and the
  // whole model's layout are known; only [first, last) are kept.
  Shape in = sample_shape;
  std::int64_t global = 0;
  all_names_ = hpctrain::layer_names(specs);
  for (std::size_t i = 0; i < specs.size(); ++i) {
    auto layer = registry.make(specs[i]);
    layer->set_tensor_parallel(tp);
    sp.role = sp.on() ? layer->spatial_role(in, sp.size) : SpatialRole::none;
    if (sp.on()) {
      refuse_slab(sp.role, specs[i].text, sp.size, i + 1 == specs.size());
      layer->set_spatial(sp);
    }
    all_types_.push_back(layer->type());
    if (tp.sequence > 0 && tp.size > 1) refuse_sequence_parallel(*layer, specs[i].text, i, specs.size());
    const Shape out = layer->output_shape(in);
    layer->configure(in);
    const bool mine = i >= first && i < last;
    if (i == first) shapes_.push_back(in);
    if (mine) {
      bindings_.emplace_back();
      store_.add_layer();
    }
    add_tensors(*layer, in, i, mine, global);
    if (mine) {
      slab_input_.push_back(sp.slabs());
      shapes_.push_back(out);
      names_.push_back(all_names_[i]);
      layer->set_context(&ctx_, i);  // the model-wide index: dropout draws do not depend on the split
      layers_.push_back(std::move(layer));
    }
    in = out;
    if (sp.gathers()) sp.split = false;  // (the layers after it see whole volumes)
  }
  std::map<std::string, std::string> seen;  // tensor name -> the layer written with it
  auto unique = [&](const std::string& name, std::size_t i) {
    const auto [it, fresh] = seen.emplace(name, specs[i].text);
    if (!fresh)
      throw bad_input("[model] layers: two tensors are named " + name + " (" + it->second + " and " + specs[i].text +
                      "): name the layers apart");
  };
  for (const ParamInfo& p : all_info_) unique(p.name, p.layer);
  for (const BufferInfo& b : all_buffers_) unique(b.name, b.layer);
  whole_out_ = in;
  ctx_.arena = &arena_;
  store_.allocate(alloc_, whole_gradients, whole_parameters);
  make_views(store_.params());
  use_set(0);
}

void Model::add_tensors(const Layer& layer, const Shape& in, std::size_t i, bool mine, std::int64_t& global) {
  const std::string& name = all_names_[i];
  const std::string legacy = legacy_layer_name(i, all_types_[i]) + "/";
  for (const ParamSpec& p : layer.param_specs(in)) {
    if (!p.tie.empty()) {
      tie_parameter(p, i, mine);
      continue;
    }
    ParamInfo info;
    info.name = name + "." + p.name;
    info.offset = info.global_offset = global;
    info.global_shape = p.shape;
    info.placement.tp = p.tp;
    info.shape = local_shape(p.tp, p.shape, tp_.rank, tp_.size, info.name);
    if (tp_sharded(info)) info.tp_blocks = local_blocks(p.tp, p.shape, tp_.rank, tp_.size, info.name);
    info.init = p.init;
    info.fan_in = p.fan_in;
    info.fan_out = p.fan_out;
    info.std = p.std;
    info.live_rows = p.live_rows;
    info.layer = i;
    info.legacy = legacy + layer.legacy_name(p.name);
    all_info_.push_back(info);
    if (mine) bindings_.back().push_back({store_.add(info), info.shape});
    global += numel(p.shape);
  }
  // (buffers() is not const: batch norm hands out its vectors)
  for (auto& [bname, buf] : const_cast<Layer&>(layer).buffers())
    all_buffers_.push_back(
        {name + "." + bname, legacy + layer.legacy_name(bname), static_cast<std::int64_t>(buf->size()), i});
}

Ranges Model::slab_parameter_ranges() const {
  Ranges out;
  for (std::size_t i = 0; i < layers_.size(); ++i)
    if (slab_input_[i] && store_.layer(i).size() > 0) out.push_back(store_.layer(i));
  return out;
}

std::vector<std::pair<std::string, std::vector<float>*>> Model::buffers() {
  std::vector<std::pair<std::string, std::vector<float>*>> out;
  for (std::size_t i = 0; i < layers_.size(); ++i)
    for (auto& [name, buf] : layers_[i]->buffers()) out.emplace_back(names_[i] + "." + name, buf);
  return out;
}

void Model::finish_statistics(Communicator& group) {
  for (auto& layer : layers_) layer->finish_statistics(group);
}

void Model::sync_buffers(bool to_host) {
  for (auto& layer : layers_) layer->sync_buffers(to_host);
}

const ParamInfo& Model::tied_weight(std::size_t target) const {
  const std::string name = all_names_.at(target) + ".weight";
  for (const ParamInfo& p : all_info_)
    if (p.name == name) return p;
  HPCT_CHECK(false, "Model::tied_weight: layer " + all_names_[target] + " has no weight");
  return all_info_.front();
}

void Model::tie_parameter(const ParamSpec& p, std::size_t layer, bool mine) {
  const std::string self = "layer " + all_names_[layer] + "'s " + p.name;
  for (std::size_t j = layer; j-- > 0;) {
    if (all_types_[j] != p.tie) continue;
    const std::string target = all_names_[j] + ".weight";
    for (const ParamInfo& t : all_info_) {
      if (t.name != target) continue;
      if (t.global_shape != p.shape || t.placement.tp.kind != p.tp.kind)
        throw bad_input("[model] layers: " + self + " " + shape_string(p.shape) + " is tied to " + target + " " +
                        shape_string(t.global_shape) + ": the shapes must agree");
      all_ties_.emplace_back(layer, j);
      if (!mine) return;
      if (j >= first_) {  // both here: one parameter, two uses
        for (const ParamInfo& local : store_.tensors())
          if (local.name == target) bindings_.back().push_back({local.offset, local.shape});
        tied_targets_.push_back(j - first_);
        return;
      }
      // The target is on an earlier pipeline stage: a copy here under the target's name (same
      // initial values, loaded from the same checkpoint dataset), kept equal by summing the two
      // stages' gradients (Megatron's way).
      bindings_.back().push_back({store_.add_copy(t), t.shape});
      return;
    }
  }
  throw bad_input("[model] layers: " + self + " is tied to a '" + p.tie + "' layer, but none comes before it (add " +
                  p.tie + "(V, C) first, or untie it: tie=0)");
}

void Model::make_views(const Tensor& weights) {
  views_.assign(layers_.size(), ParamViews{});
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    views_[i].layer = layers_[i].get();
    for (const auto& [offset, shape] : bindings_[i]) {
      views_[i].params.push_back(store_.packed_parameters() ? store_.param_view(offset, shape)
                                 : weights.defined()        ? weights.view(offset, shape)
                                                            : Tensor());
      views_[i].grads.push_back(store_.grad_view(offset, shape));
    }
  }
}

void Model::stage_gradients(const std::vector<Bucket>& buckets, const Ranges& owned) {
  store_.stage_gradients(buckets, gradient_slots(buckets), owned, alloc_);
  make_views(compute_params_.defined() ? compute_params_ : store_.params());
}

void Model::stage_parameters(const std::vector<Bucket>& buckets) {
  HPCT_CHECK(!compute_params_.defined(), "Model::stage_parameters after set_precision");
  store_.stage_parameters(gradient_slots(buckets), alloc_);
  make_views(store_.params());
}

std::vector<int> Model::gradient_slots(const std::vector<Bucket>& buckets) const {
  std::vector<int> slots;
  int next = 0, own = 2;  // slots 0 and 1 in turn; each bucket a later layer writes into first: one of its own
  for (const Bucket& b : buckets) {
    const bool shared = std::any_of(tied_targets_.begin(), tied_targets_.end(), [&](std::size_t held) {
      const Range r = store_.layer(held);
      return !r.empty() && b.begin <= r.begin && r.end <= b.end;
    });
    slots.push_back(shared ? own++ : next);
    if (!shared) next ^= 1;
  }
  return slots;
}

void Model::set_forward_only(bool on) {
  HPCT_CHECK(capacity_ == 0 && precision_ == Precision::fp32,
             "Model::set_forward_only after set_batch or set_precision");
  forward_only_ = on;
}

void Model::set_precision(Precision p) {
  HPCT_CHECK(capacity_ == 0, "Model::set_precision after set_batch (the activations would be in the old format)");
  precision_ = p;
  ctx_.precision = p;
  // (packed parameters: the windows hold float32 values already rounded to the format by the source;
  // forward-only: the parameters themselves are rounded, nothing updates them)
  const bool copy = p != Precision::fp32 && !store_.packed_parameters() && !forward_only_;
  if (p != Precision::fp32 && store_.packed_parameters()) store_.make_frozen_compute(alloc_);
  compute_params_ = copy ? Tensor::zeros(store_.params().shape(), alloc_, storage_dtype(precision_)) : Tensor();
  make_views(copy ? compute_params_ : store_.params());
  refresh_compute_parameters();
}

void Model::refresh_compute_parameters() {
  if (source_) source_->changed();
  if (store_.packed_parameters()) store_.refresh_frozen_compute(precision_);
  if (rounded_in_place()) return round_to_precision(store_.params(), precision_);
  if (precision_ == Precision::fp32 || store_.packed_parameters()) return;
  pack_16bit(store_.params(), compute_params_);  // rounded to the format as round_to_precision rounds
}

ParamViews& Model::call_params(std::size_t i) {
  need(i);
  if (precision_ == Precision::fp32 || store_.packed_parameters() || rounded_in_place()) return views_[i];
  call_.layer = views_[i].layer;
  call_.grads = views_[i].grads;
  call_.params.resize(views_[i].params.size());
  for (std::size_t k = 0; k < call_.params.size(); ++k) {  // float32 for this call, from the arena
    call_.params[k] = arena_.take(views_[i].params[k].shape());
    unpack_16bit(views_[i].params[k], call_.params[k]);
  }
  return call_;
}

namespace {
// One parameter element's initial value: a pure function of (seed, the element's model-wide index).
float initial_value(const ParamInfo& p, std::uint64_t seed, std::int64_t i) {
  i = global_element(p, i);  // (a tensor-parallel block: keyed by the whole tensor's index)
  const Shape& whole = p.global_shape.empty() ? p.shape : p.global_shape;
  if (p.live_rows >= 0 && i >= p.live_rows * (numel(whole) / whole[0])) return 0.f;  // padding rows
  const std::uint64_t h1 = splitmix64(seed ^ splitmix64(static_cast<std::uint64_t>(p.global_offset + i)));
  const std::uint64_t h2 = splitmix64(h1);
  const double u1 = (static_cast<double>(h1 >> 11) + 1.0) / 9007199254740993.0;  // (0, 1]
  const double u2 = static_cast<double>(h2 >> 11) / 9007199254740992.0;          // [0, 1)
  switch (p.init) {
    case Init::he_normal:
      return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(2 * M_PI * u2) *
                                std::sqrt(2.0 / static_cast<double>(p.fan_in)));
    case Init::xavier_uniform:
      return static_cast<float>((2 * u2 - 1) * std::sqrt(6.0 / static_cast<double>(p.fan_in + p.fan_out)));
    case Init::zeros: return 0.f;
    case Init::ones: return 1.f;
    case Init::normal: return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(2 * M_PI * u2) * p.std);
  }
  return 0.f;
}
}  // namespace

void fill_initial_values(const std::vector<ParamInfo>& info, std::uint64_t seed, float* host, std::int64_t total,
                         int threads) {
  // Thread t fills the flat range [total t / T, total (t + 1) / T) of every parameter it overlaps.
  auto fill_range = [&](std::int64_t lo, std::int64_t hi) {
    for (const ParamInfo& p : info) {
      const std::int64_t a = std::max(lo, p.offset), b = std::min(hi, p.offset + numel(p.shape));
      for (std::int64_t k = a; k < b; ++k) host[k] = initial_value(p, seed, k - p.offset);
    }
  };
  threads = static_cast<int>(std::max<std::int64_t>(1, std::min<std::int64_t>(threads, total)));
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(fill_range, total * t / threads, total * (t + 1) / threads);
  fill_range(0, total / threads);
  for (auto& th : pool) th.join();
}

void Model::init_parameters(std::uint64_t seed) {
  const std::int64_t n = store_.size();
  std::vector<float> host(static_cast<std::size_t>(n));  // made on the host, then uploaded
  // Threads only pay for large models (15-25 s serial for 478 M parameters); 1 M elements each at least.
  const auto cores = static_cast<std::int64_t>(std::max(1u, std::thread::hardware_concurrency()));
  const auto threads = static_cast<int>(std::min<std::int64_t>({cores, 16, 1 + n / (1 << 20)}));
  fill_initial_values(store_.tensors(), seed, host.data(), n, threads);
  if (store_.packed_parameters()) {              // (shard = full: this rank keeps what it owns, packed in order)
    if (store_.frozen_parameters().defined()) {  // (and the frozen layers whole)
      std::vector<float> frozen;
      for (const Range& r : store_.frozen_ranges())
        frozen.insert(frozen.end(), host.begin() + r.begin, host.begin() + r.end);
      upload(frozen.data(), frozen.size() * sizeof(float), store_.frozen_parameters());
    }
    std::int64_t at = 0;
    for (const Range& r : store_.owned()) {
      if (at != r.begin) std::copy_n(host.begin() + r.begin, r.size(), host.begin() + at);  // (at < r.begin)
      at += r.size();
    }
    host.resize(static_cast<std::size_t>(std::max<std::int64_t>(at, 1)));
  }
  upload(host.data(), host.size() * sizeof(float), store_.params());
  refresh_compute_parameters();
}

bool Model::give_loss(Loss& loss, const Targets& targets, float grad_scale, Tensor* scalars) {
  ctx_.head_loss = loss_in_head_ && scalars ? HeadLoss{&loss, targets, grad_scale, scalars} : HeadLoss{};
  return ctx_.head_loss.loss != nullptr;
}

const Tensor& Model::forward(const Tensor& x, const std::function<void(std::size_t)>& acquire,
                             const std::function<void(std::size_t)>& release) {
  HPCT_CHECK(x.rows() == rows_ && x.cols() == numel(input_sample()),
             "model input " + shape_string(x.shape()) + " for batch " + std::to_string(rows_));
  ++forward_passes_;
  // bf16/fp16: the outputs between layers are kept in 16 bits (acts_); the layers read and write
  // float32 copies (work_), rounded to the format, then packed (exact).
  const bool compact = precision_ != Precision::fp32;
  if (loss_in_head_)  // the last layer runs the loss (give_loss) or writes the whole output (generation)
    acts_.back() = ctx_.head_loss.loss ? Tensor() : grow(whole_output_, batch_shape(layers_.size()), alloc_);
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const Tensor in = i == 0 ? x : compact ? work(i) : acts_[i];
    if (acquire) acquire(i);
    if (fusion_ && !compact && i + 1 < layers_.size() && layers_[i + 1]->activation() &&
        layers_[i]->fuses_activation(*layers_[i + 1]->activation())) {
      if (acquire) acquire(i + 1);
      StepArena::Scope scope(&arena_);
      need(i);
      ctx_.params = &views_[i];
      layers_[i]->forward_fused(in, acts_[i + 1], *layers_[i + 1]->activation(), acts_[i + 2]);
      if (release) {
        release(i);
        release(i + 1);
      }
      ++i;  // the activation layer's output is written
      continue;
    }
    Tensor out = compact && i + 1 < layers_.size() ? work(i + 1) : acts_[i + 1];
    {
      StepArena::Scope scope(&arena_);
      ctx_.params = &call_params(i);
      layers_[i]->forward(in, out);
      // No handle of the arena's may outlive the call: it would keep a regrown arena's old buffer.
      call_.params.clear();
    }
    if (release) release(i);
    if (!compact || !out.defined()) continue;
    round_to_precision(out, precision_);
    if (i + 1 < layers_.size()) pack_16bit(out, acts_[i + 1]);
  }
  return acts_.back();
}

void Model::backward(const Tensor& x, const Tensor& dout, const std::function<void(std::size_t)>& layer_done,
                     bool accumulate) {
  HPCT_CHECK(!forward_only_, "Model::backward on a forward-only model (set_forward_only)");
  accumulate = accumulate && !store_.staged();  // (staged: each backward's gradients are reduced before the next)
  in_backward_ = true;                          // (what a parameter source prefetches next)
  HPCT_CHECK(!loss_in_head_ || ctx_.head_loss.loss, "Model::backward without the loss its last layer runs (give_loss)");
  if (!loss_in_head_ && dout.data() != grads_act_.back().data()) copy(dout, grads_act_.back());
  if (!loss_in_head_ && precision_ != Precision::fp32) round_to_precision(grads_act_.back(), precision_);
  // On the first stage (grads_act_[0] undefined) nothing needs the gradients below the lowest
  // layer that trains: backward stops there, and that layer skips its input gradient.
  std::size_t lowest = 0;
  if (!grads_act_[0].defined())
    while (lowest < layers_.size() && (frozen(lowest) || store_.layer(lowest).empty())) ++lowest;
  Tensor none;
  for (std::size_t i = layers_.size(); i-- > lowest;) {
    // A layer whose weight a later layer shares (tying) adds to what that layer's backward wrote.
    const bool shared = std::find(tied_targets_.begin(), tied_targets_.end(), i) != tied_targets_.end();
    layers_[i]->set_accumulate_grads(accumulate || shared);
    // grads_act_[0] is undefined on the first stage: its first layer skips the input gradient.
    Tensor& dx = i == lowest && !grads_act_[0].defined() ? none : grads_act_[i];
    {
      StepArena::Scope scope(&arena_);
      const Tensor in = i == 0 ? x : held(i), out = acts_[i + 1].defined() ? held(i + 1) : Tensor();
      ctx_.params = &call_params(i);
      layers_[i]->backward(in, out, grads_act_[i + 1], dx);
      call_.params.clear();
    }
    if (precision_ != Precision::fp32 && dx.defined()) round_to_precision(dx, precision_);
    if (layer_done) layer_done(i);
  }
  in_backward_ = false;
  zero_frozen_gradients();  // (cheap: frozen layers below `lowest` wrote nothing)
}

Tensor Model::work(std::size_t j) const { return work_[j % 2].view(0, batch_shape(j)); }

Tensor Model::held(std::size_t j) {
  if (acts_[j].dtype() == DType::f32) return acts_[j];
  Tensor t = arena_.take(batch_shape(j));
  unpack_16bit(acts_[j], t);
  return t;
}

void Model::set_frozen(std::vector<bool> frozen) {
  store_.set_frozen(std::move(frozen));
  zero_frozen_gradients();
}

void Model::zero_frozen_gradients() {
  // (staged: their gradients go to a scratch nobody reads; before any gradient buffer: nothing to zero)
  if (store_.staged() || !store_.grads().defined()) return;
  for (const Range& r : store_.frozen_ranges()) {
    Tensor g = store_.grads().view(r.begin, {r.size()});
    fill(g, 0.f);
  }
}

std::vector<bool> frozen_layers(const std::string& freeze, const Model& model) {
  const auto patterns = split_patterns(freeze);
  auto any = [&](const std::string& layer) {
    return std::any_of(patterns.begin(), patterns.end(), [&](const std::string& p) { return layer_matches(p, layer); });
  };
  const auto& all = model.all_layer_names();
  for (const std::string& p : patterns)
    if (std::none_of(all.begin(), all.end(), [&](const std::string& l) { return layer_matches(p, l); })) {
      std::string names;
      for (const std::string& l : all) names += (names.empty() ? "" : ", ") + l;
      throw bad_input("[train] freeze: '" + p + "' names no layer (the layers: " + names + ")");
    }
  bool trains = false;
  for (const ParamInfo& p : model.all_param_info()) trains = trains || !any(all[p.layer]);
  if (!patterns.empty() && !trains)
    throw bad_input("[train] freeze = " + freeze + " freezes every layer with parameters: nothing would train");
  std::vector<bool> out;
  for (const std::string& l : model.layer_names()) out.push_back(any(l));
  return out;
}

std::vector<std::string> split_patterns(const std::string& text) {
  std::vector<std::string> out;
  std::string cur;
  for (const char c : text + ",") {
    if (c == ',' || c == ' ') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  return out;
}

bool layer_matches(const std::string& pattern, const std::string& layer_path) {
  for (std::size_t end = layer_path.find('.');; end = layer_path.find('.', end + 1)) {
    if (fnmatch(pattern.c_str(), layer_path.substr(0, end).c_str(), 0) == 0) return true;
    if (end == std::string::npos) return false;
  }
}

std::string Model::summary() const {
  Table t({"layer", "output shape", "parameters"});
  t.add_row({"input", shape_string(shapes_[0]), "0"});
  std::int64_t total = 0;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    std::int64_t n = 0;
    for (const auto& p : store_.tensors())
      if (p.layer == first_ + i) n += numel(p.shape);
    total += n;
    t.add_row({names_[i], shape_string(shapes_[i + 1]), std::to_string(n) + (frozen(i) && n ? " (frozen)" : "")});
  }
  t.add_row({"total", "", std::to_string(total)});
  return t.render();
}

}  // namespace hpctrain
