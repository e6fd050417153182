// dropout(p): while training, zeroes each element with probability p/100 and
// scales the kept ones by 1/(1-p) (inverted dropout); the identity when
// evaluating. The draws come from a counter-based generator keyed by (seed,
// step, the sample's dataset index, the layer's position, the element), so
// they do not depend on which rank holds the sample or on the rank count. With [parallel]
// sequence_parallel its input holds this rank's block of the positions (between the split pairs):
// the elements are numbered from the block's first, so the mask is the whole sequence's.
#include "hpctrain/backend/ops.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/core/hash.hpp"
#include "hpctrain/layers/registry.hpp"

namespace hpctrain {

namespace {
class Dropout final : public Layer {
 public:
  explicit Dropout(float p) : p_(p) {}
  const char* type() const override { return "dropout"; }
  bool takes_position_blocks() const override { return true; }
  Shape output_shape(const Shape& in) const override { return in; }
  // (sequence-parallel: between the split pairs its input is this rank's block of the positions;
  // inside one, where it is every position's, nothing changes)
  void configure(const Shape& in) override {
    shard_ = sequence_split() && !in.empty() && in[0] != tensor_parallel().sequence;
  }
  LayerMemory memory(const Shape& in, const MemoryQuery& q) const override {  // the mask, while training
    if (!q.training || p_ <= 0) return {};
    return q.compact(static_cast<double>(q.rows * numel(in)), exact_in(1.f / (1.f - p_), q.precision));
  }
  void forward(const Tensor& x, Tensor& y) override {
    active_ = context().training && p_ > 0;
    if (!active_) {
      copy(x, y);
      return;
    }
    // 0 or 1 / (1 - p): kept in 16 bits in 16-bit runs when the format holds the scale exactly.
    Tensor mask = compact_out(0, x.shape(), x.device(), packable());
    // key = splitmix64(splitmix64(seed) ^ splitmix64(step) ^ (0x64726F70 + index)); the step's part is
    // read on the device (the trainer's copy, or this layer's own when there is none).
    const std::uint64_t layer_key = splitmix64(context().seed) ^ (0x64726F70ull + index());
    const std::uint64_t* step_key = context().step_key;
    if (!step_key) {
      const std::uint64_t k = splitmix64(static_cast<std::uint64_t>(context().step));
      Tensor buf = scratch(step_key_, {2}, x.device());
      upload(&k, sizeof k, buf);
      step_key = reinterpret_cast<const std::uint64_t*>(buf.data());
    }
    // (sequence-parallel: this rank's block of the positions, its elements numbered from the block's first)
    const std::int64_t first = shard_ ? tensor_parallel().rank * x.cols() : 0;
    dropout_forward(x, p_, layer_key, step_key, context().sample_ids, first, mask, y);
    compact_keep(0, mask, packable());
  }
  void backward(const Tensor&, const Tensor&, const Tensor& dy, Tensor& dx) override {
    if (!dx.defined()) return;
    if (!active_) {
      copy(dy, dx);
      return;
    }
    multiply(dy, compact_in(0, dy.shape(), dy.device(), packable()), dx);
  }

 private:
  bool packable() const { return exact_in(1.f / (1.f - p_), context().precision); }
  float p_;
  bool active_ = false, shard_ = false;
  Tensor step_key_;
};
}  // namespace

void register_dropout(LayerRegistry& r) {
  r.add("dropout", "dropout(p): drop p percent (0-99) while training; identity when evaluating",
        [](const LayerArgs& a) {
          const std::int64_t percent = a.positional.empty() ? -1 : a.positional[0];
          if (a.numbers.size() != 1 || a.positional.size() != 1 || percent < 0 || percent >= 100 || !a.named.empty())
            throw bad_input("[model] layers: " + a.text + ": give the drop probability in percent, 0-99 (dropout(50))");
          return std::make_unique<Dropout>(static_cast<float>(percent) / 100.f);
        });
}

}  // namespace hpctrain
