// Model::activation_memory: what a micro-batch takes besides the parameter store, from the
// layers' shapes and their own account of what they keep and the scratch they take (Layer::memory).
#include <algorithm>
#include <vector>

#include "hpctrain/model/model.hpp"

namespace hpctrain {

Model::ActivationMemory Model::activation_memory(std::int64_t rows, Precision precision, Device device,
                                                 bool recompute) const {
  ActivationMemory m;
  const auto r = static_cast<double>(rows);
  const bool sixteen = precision != Precision::fp32;
  const std::size_t last = shapes_.size() - 1;
  if (forward_only_) {  // as use_set: the outputs between layers in two buffers of the widest, taken in turn
    const auto turns = static_cast<double>(std::min<std::size_t>(2, last - 1));
    m.outputs += turns * (sixteen ? 2 : 4) * r * static_cast<double>(widest_between());
  } else {
    for (std::size_t i = 1; i < last; ++i)  // as use_set: 16 bits but the last
      m.outputs += (sixteen ? 2 : 4) * r * static_cast<double>(numel(shapes_[i]));
  }
  // (loss_in_head_: no output, but generation's one position: forward makes it)
  if (!loss_in_head_ || one_position_) m.outputs += 4 * r * static_cast<double>(numel(shapes_[last]));
  m.gradients = gradient_buffer_bytes(rows, precision);
  MemoryQuery q;
  q.rows = rows, q.precision = precision, q.device = device, q.training = true;
  std::vector<double> kinds;  // the distinct blocks' inner bytes (a GPT: its attention and its MLP blocks)
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const LayerMemory l = layers_[i]->memory(shapes_[i], q);
    // recompute = blocks: a block keeps only its input; the recompute set holds one block's inner
    // tensors at a time, in buffers it reuses (best fit) across blocks: at least the largest
    // block's, at most each distinct block's in all (the estimate).
    m.saved += recompute ? l.saved - l.inner : l.saved;
    if (one_position_) m.cache += l.cache;
    if (l.inner > 0 && std::find(kinds.begin(), kinds.end(), l.inner) == kinds.end()) kinds.push_back(l.inner);
    double call = l.scratch;
    if (sixteen) {  // float32 copies of the layer's 16-bit parameters, its input and output (backward), in the arena
      if (!forward_only_)  // (forward-only: the parameters are rounded in place, set_precision)
        for (const auto& [offset, shape] : bindings_[i]) call += MemoryQuery::temp(static_cast<double>(numel(shape)));
      call += MemoryQuery::temp(r * static_cast<double>(numel(shapes_[i])));
      if (i + 2 < shapes_.size()) call += MemoryQuery::temp(r * static_cast<double>(numel(shapes_[i + 1])));
    }
    m.scratch = std::max(m.scratch, call);
  }
  if (recompute)
    for (const double k : kinds) m.saved += k;
  return m;
}

double Model::layer_own_bytes() const {
  double bytes = 0;
  for (const auto& l : layers_) bytes += l->own_bytes();
  return bytes;
}

}  // namespace hpctrain
