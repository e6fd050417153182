// The ways a step's passes run on this rank (parallel/step_executor.hpp).
#include "hpctrain/parallel/step_executor.hpp"

#include "hpctrain/backend/cuda/device_api.hpp"

namespace hpctrain {

namespace {

// Every layer on this rank.
class OneStage : public StepExecutor {
 public:
  OneStage(Model& model, Loss& loss) : model_(model), loss_(loss) {}
  void train(int k, std::int64_t /*rows*/, float grad_scale, Tensor& scalars, const StepHooks& hooks) override {
    for (int m = 0; m < k; ++m) {  // gradient accumulation: the first micro-batch overwrites, later ones add
      const MicroBatch mb = hooks.prepare(m);
      const bool head = model_.give_loss(loss_, mb.targets, grad_scale, &scalars);  // ([train] loss_chunk)
      const Tensor& out = model_.forward(mb.input, hooks.acquire, hooks.release);
      if (hooks.forward_done) hooks.forward_done();
      if (!head) loss_.forward_backward(out, mb.targets, grad_scale, scalars, model_.dout());  // (sums on the device)
      const bool last = m + 1 == k || hooks.every_backward;
      model_.backward(mb.input, model_.dout(), last ? hooks.layer_done : std::function<void(std::size_t)>(),
                      m > 0 && !hooks.chunk_done);
      if (hooks.chunk_done) hooks.chunk_done(m);
    }
  }
  void forward(std::int64_t rows, const MicroBatch& mb, Tensor* scalars) override {
    model_.set_batch(rows);
    const bool head = model_.give_loss(loss_, mb.targets, 0.f, scalars);
    const Tensor& out = model_.forward(mb.input);
    if (scalars && !head) loss_.forward(out, mb.targets, *scalars, model_.dout());
  }

 protected:
  Model& model_;
  Loss& loss_;
};

// One stage whose forward and backward are recorded as a CUDA graph and replayed: recorded again
// when what the recording holds changes (the staged batch's addresses, the rows, the loss
// gradient's scale, the CUDA scratch area, the model's scratch arena).
class RecordedStage final : public OneStage {
 public:
  RecordedStage(Model& model, Loss& loss, const StagedBatch& staged) : OneStage(model, loss), staged_(staged) {}
  void train(int k, std::int64_t rows, float grad_scale, Tensor& scalars, const StepHooks& hooks) override {
    const Key key{staged_.input_data(), staged_.classes(),          staged_.targets(),        rows,
                  grad_scale,           cuda::scratch_generation(), model_.arena_high_water()};
    if (!(key == recorded_for_)) {
      invalidate();
      if (hooks.dropped_recordings) hooks.dropped_recordings();
    }
    recorded_for_ = key;
    StepHooks inside = hooks;
    inside.layer_done = {};  // one launch: no bucket can start early
    run_recorded(graph_, [&] { OneStage::train(k, rows, grad_scale, scalars, inside); });
    recorded_for_.arena = model_.arena_high_water();  // a warm-up before the recording may have grown it
    for (std::size_t i = model_.layers(); i-- > 0;) hooks.layer_done(i);
  }
  void invalidate() override {
    graph_.reset();
    recorded_for_ = Key{};
  }
  bool replaying() const override { return graph_ && graph_->ready(); }

 private:
  struct Key {
    const void *samples = nullptr, *classes = nullptr, *targets = nullptr;
    std::int64_t rows = 0;
    float grad_scale = 0;
    std::uint64_t scratch = 0;
    std::int64_t arena = 0;  // grows (and so moves) only with its high-water mark
    bool operator==(const Key& o) const {
      return samples == o.samples && classes == o.classes && targets == o.targets && rows == o.rows &&
             grad_scale == o.grad_scale && scratch == o.scratch && arena == o.arena;
    }
  };
  const StagedBatch& staged_;
  std::unique_ptr<cuda::Graph> graph_;
  Key recorded_for_;
};

// This rank's stage of a pipeline (parallel/pipeline.hpp): activations to the next stage, input
// gradients to the previous one.
class PipelinedStage final : public StepExecutor {
 public:
  PipelinedStage(const Config& cfg, Model& model, Loss& loss, Communicator& pp, Allocator& alloc)
      : pp_(pp), stage_(model, loss, pp, cfg.parallel.pipeline_schedule, alloc) {}
  void train(int k, std::int64_t rows, float grad_scale, Tensor& scalars, const StepHooks& hooks) override {
    stage_.train_step(k, rows, hooks.prepare, grad_scale, scalars, hooks.layer_done, hooks.every_backward,
                      hooks.chunk_done);
  }
  void forward(std::int64_t rows, const MicroBatch& mb, Tensor* scalars) override {
    stage_.eval_batch(rows, mb, scalars);
  }
  bool holds_output() const override { return stage_.last(); }
  void share_from_output(std::vector<std::uint32_t>& values) override {
    pp_.broadcast(values.data(), values.size(), DType::i32, stage_.stages() - 1);
  }
  void sum_over_stages(double* v, std::size_t n) override { pp_.allreduce(v, v, n, DType::f64, ReduceOp::sum); }
  PipelineStage* pipeline() override { return &stage_; }

 private:
  Communicator& pp_;
  PipelineStage stage_;
};

}  // namespace

std::unique_ptr<StepExecutor> make_step_executor(const Config& cfg, Model& model, Loss& loss, Communicator* pp,
                                                 const StagedBatch& staged, Allocator& alloc) {
  if (pp) return std::make_unique<PipelinedStage>(cfg, model, loss, *pp, alloc);
  if (cfg.kernels.cuda_graphs) return std::make_unique<RecordedStage>(model, loss, staged);
  return std::make_unique<OneStage>(model, loss);
}

void run_recorded(std::unique_ptr<cuda::Graph>& graph, const std::function<void()>& work) {
  if (!graph) {  // warm-up: buffers, scratch and cuDNN's plans are made outside any recording
    graph = std::make_unique<cuda::Graph>();
    work();
    return;
  }
  if (!graph->ready()) {
    graph->begin();
    work();
    graph->end();
  }
  graph->launch();
}

}  // namespace hpctrain
