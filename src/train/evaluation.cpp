// Evaluation (train/trainer.hpp): the trainer's evaluate() over a split, exact over the ranks
// (and through the pipeline stages when pipeline_parallel > 1), and --eval-only.
#include <cmath>
#include <cstdio>

#include "hpctrain/backend/ops.hpp"
#include "hpctrain/checkpoint/checkpointing.hpp"
#include "hpctrain/comm/agreement.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/core/log.hpp"
#include "hpctrain/data/token_dataset.hpp"
#include "hpctrain/tensor/step_scalars.hpp"
#include "hpctrain/train/trainer.hpp"

namespace hpctrain {

void Trainer::sum_over_replicas(double* v, std::size_t n) {
  if (rt_.mesh().size(MeshDim::pp) == 1) {
    host_dp().allreduce(v, v, n, DType::f64, ReduceOp::sum);  // the data-parallel group is the world
    return;
  }
  // Only the last stage holds loss sums; the other stages add zeros.
  if (!executor_->holds_output()) std::fill(v, v + n, 0.0);
  rt_.world().allreduce(v, v, n, DType::f64, ReduceOp::sum);
}

double EvalResult::mean_mae() const {
  double mean = 0;
  for (double e : mae) mean += e / static_cast<double>(mae.size());
  return mean;
}

std::string EvalResult::mae_text() const {
  if (mae.empty()) return "";
  char buf[64];
  std::snprintf(buf, sizeof buf, "mae %.4f (", mean_mae());
  std::string out = buf;
  for (std::size_t j = 0; j < mae.size(); ++j) {
    std::snprintf(buf, sizeof buf, "%s%s %.4f", j ? ", " : "", j < target_names.size() ? target_names[j].c_str() : "?",
                  mae[j]);
    out += buf;
  }
  return out + ")";
}

EvalResult Trainer::evaluate(const SplitIndex& split) {
  settle_parameters();
  drop_recordings();  // evaluation may grow activation and scratch buffers: record the step again
  auto& slot = eval_readers_[split.name];
  if (!slot) {  // loads the split once (node cache or chunk cache), then reused at every evaluation
    ReaderOptions ro;
    ro.cache_bytes = cfg_.data.cache_bytes;
    ro.decode_threads = cfg_.data.decode_threads;
    ro.dp = rt_.mesh().coord(MeshDim::dp);
    ro.dp_size = rt_.mesh().size(MeshDim::dp);
    ro.slab = DepthSlab{rt_.mesh().coord(MeshDim::sp), rt_.mesh().size(MeshDim::sp)};
    slot = std::make_unique<Reader>(split, rt_.node(), ro);
  }
  Reader& reader = *slot;
  // In batches of the training micro-batch: the activations (and their gradient buffers, which
  // set_batch sizes too) never grow past what training holds (a deck that accumulates 8
  // micro-batches on one GPU would otherwise evaluate 8 times the windows at once).
  const std::int64_t b = rt_.per_rank_batch() / cfg_.train.micro_batches;
  IntervalSums sums;
  const std::int64_t mine = reader.eval_batches(b);
  const bool targets = !split.classification && !split.tokens;  // (regression: the error per target too)
  if (targets) {
    eval_errors_ = Tensor::zeros({split.label_width}, alloc_);
    fill(eval_errors_, 0.f);
  }
  std::vector<double> errors(targets ? static_cast<std::size_t>(split.label_width) : 0, 0.0);
  if (windows_) {  // shard = full: the gathers are collective; a rank with fewer batches joins the rest's
    std::int64_t most = mine;
    host_dp().allreduce(&most, &most, 1, DType::i64, ReduceOp::max);
    for (std::int64_t n = mine; n < most; ++n)
      for (std::size_t i = 0; i < model_->layers(); ++i) windows_->need(i, false);
  }
  for (std::int64_t n = 0; n < mine; ++n) {
    const Batch batch = reader.eval_batch(b, n);
    model_->set_batch(batch.size);
    Shape sh{batch.size};
    const Shape sample = slab_shape(split.sample_shape, rt_.mesh().size(MeshDim::sp));
    sh.insert(sh.end(), sample.begin(), sample.end());
    staged_.stage(batch);
    const Tensor x = staged_.input(0, sh);
    Targets t;
    t.classes = staged_.classes();
    t.values = staged_.targets();
    model_->context().training = false;
    mark_documents(x);
    fill(eval_scalars_, 0.f);
    executor_->forward(batch.size, MicroBatch{x, t}, &eval_scalars_);
    if (targets && executor_->holds_output()) {  // per batch, into doubles, as the loss
      absolute_error_sums(model_->output(), t.values, eval_errors_);
      std::vector<float> e(errors.size());
      download(eval_errors_, e.data(), e.size() * sizeof(float));
      for (std::size_t j = 0; j < e.size(); ++j) errors[j] += e[j];
      fill(eval_errors_, 0.f);
    }
    const auto h = step_scalars::to_host(eval_scalars_);  // per batch: the sums stay in double
    sums.loss += h[step_scalars::loss_sum];
    sums.correct += h[step_scalars::correct];
    sums.samples += h[step_scalars::samples];
  }
  sum_over_replicas(sums);  // exact: sums of per-sample terms, counts in doubles
  if (targets) sum_over_replicas(errors.data(), errors.size());
  EvalResult r;
  if (targets) {
    r.target_names = split.target_labels();
    for (double e : errors) r.mae.push_back(sums.samples > 0 ? e / sums.samples : 0);
  }
  r.samples = static_cast<std::int64_t>(sums.samples);
  r.loss = sums.samples > 0 ? sums.loss / sums.samples : 0;
  r.accuracy = sums.samples > 0 ? sums.correct / sums.samples : 0;
  if (split.tokens) count_bytes(split, r);
  return r;
}

void Trainer::count_bytes(const SplitIndex& split, EvalResult& r) {
  if (!eval_bytes_.count(split.name)) {  // (the same windows at every evaluation of a split)
    const std::int64_t windows = r.samples / split.block_size;
    const auto text = compute_on_root(
        rt_.world(), [&] { return std::vector<std::string>{std::to_string(eval_target_bytes(split, windows))}; });
    eval_bytes_[split.name] = std::stoll(text.at(0));
  }
  r.bytes = eval_bytes_[split.name];
}

std::optional<double> EvalResult::bits_per_byte() const {
  if (bytes <= 0) return std::nullopt;
  return loss * static_cast<double>(samples) / (std::log(2.0) * static_cast<double>(bytes));
}

int Trainer::eval_only() {
  Checkpointer checkpointer(cfg_, rt_, host_dp(), *model_, *opt_, groups_);
  const std::string target = checkpointer.resume_target();
  if (target.empty())
    throw bad_input(
        "--eval-only: no checkpoint to evaluate ([checkpoint] resume = " + cfg_.checkpoint.resume.text() +
        (cfg_.checkpoint.resume.kind == ResumeFrom::Kind::auto_ ? ", none complete in " + cfg_.checkpoint.dir : "") +
        ")");
  IntervalSums sums;
  const CheckpointInfo info = checkpointer.load(target, sums, Checkpointer::LoadFor::inference);
  model_->refresh_compute_parameters();
  const SplitIndex* split = index_.test ? &*index_.test : index_.val ? &*index_.val : nullptr;
  if (!split) throw bad_input("--eval-only: the dataset " + cfg_.data.path + " has no test or val split");
  const EvalResult r = evaluate(*split);
  char line[512];
  if (split->tokens) {  // a language model: the mean over every position of every window, its perplexity,
    // and bits per byte (the loss per byte of the text the targets stand for, in bits: comparable
    // across tokenizers)
    const std::int64_t windows = r.samples / split->block_size;
    char bpb[64] = "n/a (no tokenizer to count bytes)";
    if (const auto b = r.bits_per_byte()) std::snprintf(bpb, sizeof(bpb), "%.4f", *b);
    std::snprintf(line, sizeof(line),
                  "eval-only: %s (step %lld): %s loss %.6f perplexity %.3f bits per byte %s next-token accuracy "
                  "%.2f%% (%lld windows of %lld tokens, %lld bytes)",
                  target.c_str(), static_cast<long long>(info.state.step), split->name.c_str(), r.loss,
                  std::exp(r.loss), bpb, 100 * r.accuracy, static_cast<long long>(windows),
                  static_cast<long long>(split->block_size), static_cast<long long>(r.bytes));
  } else if (!r.mae.empty()) {
    std::snprintf(line, sizeof(line), "eval-only: %s (step %lld): %s loss %.6f %s (%lld samples)", target.c_str(),
                  static_cast<long long>(info.state.step), split->name.c_str(), r.loss, r.mae_text().c_str(),
                  static_cast<long long>(r.samples));
  } else {
    std::snprintf(line, sizeof(line), "eval-only: %s (step %lld): %s loss %.6f accuracy %.2f%% (%lld samples)",
                  target.c_str(), static_cast<long long>(info.state.step), split->name.c_str(), r.loss,
                  100 * r.accuracy, static_cast<long long>(r.samples));
  }
  log0(line);
  return 0;
}

}  // namespace hpctrain
