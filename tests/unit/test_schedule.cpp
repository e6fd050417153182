// The training loop's schedule (train/schedule.hpp), the loss scaler's rule
// (core/train_state.hpp) and the run report's formats (train/run_report.hpp), without
// training.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "hpctrain/core/train_state.hpp"
#include "hpctrain/train/loss_guard.hpp"
#include "hpctrain/train/run_report.hpp"
#include "hpctrain/train/schedule.hpp"

using namespace hpctrain;

namespace {
// The 1-based steps of a `total`-step run with `per_epoch` steps per epoch at which `what` is due.
std::vector<std::int64_t> due_steps(const Schedule& s, std::int64_t per_epoch, bool Due::*what,
                                    std::int64_t signal_at = -1) {
  std::vector<std::int64_t> out;
  for (std::int64_t step = 0; step < s.total(); ++step) {
    StepEnd e;
    e.step = step;
    e.epoch = step / per_epoch;
    e.epoch_end = step % per_epoch == per_epoch - 1;
    e.stop_signal = step + 1 == signal_at;
    if (s.after(e).*what) out.push_back(step + 1);
  }
  return out;
}

using V = std::vector<std::int64_t>;
}  // namespace

TEST(Schedule, LogsEveryIntervalAtTheEndAndWithEveryEvaluation) {
  Config cfg;
  TrainConfig& t = cfg.train;
  cfg.log.log_every = 4;
  t.eval_every = 0;  // at each epoch's end
  cfg.checkpoint.every_epochs = 0;
  const Schedule s(cfg, 10, true);
  EXPECT_EQ(due_steps(s, 3, &Due::eval), (V{3, 6, 9, 10}));
  EXPECT_EQ(due_steps(s, 3, &Due::log), (V{3, 4, 6, 8, 9, 10}));
  t.eval_every = 5;
  EXPECT_EQ(due_steps(Schedule(cfg, 10, true), 3, &Due::eval), (V{5, 10}));
  EXPECT_EQ(due_steps(Schedule(cfg, 10, false), 3, &Due::eval), V{});  // no val or test split
  EXPECT_EQ(due_steps(Schedule(cfg, 10, false), 3, &Due::log), (V{4, 8, 10}));
}

TEST(Schedule, CheckpointsByStepsEpochsSignalAndAtTheEnd) {
  Config cfg;
  CheckpointConfig& c = cfg.checkpoint;
  c.every_steps = 4;
  c.every_epochs = 0;
  EXPECT_EQ(due_steps(Schedule(cfg, 10, false), 3, &Due::checkpoint), (V{4, 8, 10}));
  c.every_steps = 0;
  c.every_epochs = 2;  // the end of epochs 2 and 4 (steps 6 and 12)
  EXPECT_EQ(due_steps(Schedule(cfg, 13, false), 3, &Due::checkpoint), (V{6, 12, 13}));
  EXPECT_EQ(due_steps(Schedule(cfg, 13, false), 3, &Due::checkpoint, 5), (V{5, 6, 12, 13}));
  StepEnd e;
  e.step = 1;
  e.minutes_due = true;
  EXPECT_TRUE(Schedule(cfg, 13, false).after(e).checkpoint);
}

TEST(LossScaler, HalvesOnOverflowAndDoublesAfterTheWindow) {
  LossScaler s;
  s.scale = 8;
  s.good_step(3);
  s.good_step(3);
  EXPECT_EQ(s.scale, 8);
  s.overflow();  // resets the count of good steps
  EXPECT_EQ(s.scale, 4);
  EXPECT_EQ(s.skipped_steps, 1);
  for (int i = 0; i < 3; ++i) s.good_step(3);
  EXPECT_EQ(s.scale, 8);
  EXPECT_EQ(s.good_steps, 0);
  s.scale = 1;
  s.overflow();
  EXPECT_EQ(s.scale, 1);  // never below 1
  EXPECT_EQ(s.skipped_steps, 2);
}

// [train] on_nonfinite = skip, spike_factor: the rule waits for a full window, judges against the
// kept steps' mean only, counts skips in a row and by reason, and a kept step resets the row.
TEST(LossGuard, SkipsNonfiniteStepsAndSpikesAgainstTheKeptWindow) {
  TrainConfig t;
  t.spike_factor = 3;
  t.spike_window = 3;
  GuardRecord record;
  LossGuard g(t, record);
  using V = LossGuard::Verdict;
  EXPECT_EQ(g.judge(10.0, false), V::keep);  // (no full window yet: a large loss is kept)
  EXPECT_EQ(g.judge(1.0, false), V::keep);
  EXPECT_EQ(g.judge(std::nan(""), false), V::nonfinite);
  EXPECT_EQ(g.judge(1.0, true), V::nonfinite);  // a finite loss with a non-finite gradient
  EXPECT_EQ(g.in_a_row(), 2);
  EXPECT_EQ(g.judge(1.0, false), V::keep);  // window 10, 1, 1: mean 4
  EXPECT_EQ(g.in_a_row(), 0);
  EXPECT_DOUBLE_EQ(g.window_mean(), 4.0);
  EXPECT_EQ(g.judge(12.5, false), V::spike);  // > 3 x 4
  EXPECT_EQ(g.judge(12.0, false), V::keep);   // = 3 x 4 is not above it; 10 leaves the window
  EXPECT_DOUBLE_EQ(g.window_mean(), 14.0 / 3);
  EXPECT_EQ(g.judge(std::numeric_limits<double>::infinity(), false), V::nonfinite);
  EXPECT_EQ(g.nonfinite(), 3);
  EXPECT_EQ(g.spikes(), 1);
  EXPECT_EQ(record.window, (std::vector<double>{1.0, 1.0, 12.0}));  // what a checkpoint stores
  TrainConfig off;  // spike_factor = 0: only non-finite steps are dropped, no window kept
  GuardRecord plain_record;
  LossGuard plain(off, plain_record);
  for (int i = 0; i < 60; ++i) EXPECT_EQ(plain.judge(i == 59 ? 1e30 : 1.0, false), V::keep);
  EXPECT_TRUE(plain_record.window.empty());
}

// A guard over a restored record (a resume) judges as the guard that wrote it would have; one
// over an empty record (a resume that lost it) waits for a full window and keeps the spike.
TEST(LossGuard, ARestoredRecordJudgesAsTheUninterruptedGuard) {
  TrainConfig t;
  t.spike_factor = 3;
  t.spike_window = 3;
  GuardRecord before;
  LossGuard first(t, before);
  for (double loss : {1.0, std::nan(""), 2.0, 3.0}) first.judge(loss, false);
  GuardRecord restored = before, lost;
  LossGuard resumed(t, restored), forgetful(t, lost);
  using V = LossGuard::Verdict;
  EXPECT_EQ(resumed.judge(6.5, false), V::spike);  // > 3 x mean(1, 2, 3)
  EXPECT_EQ(forgetful.judge(6.5, false), V::keep);
  EXPECT_EQ(first.judge(6.5, false), V::spike);
  EXPECT_EQ(restored.window, before.window);
  EXPECT_EQ(resumed.nonfinite(), 1);  // the counts go on from the record
  EXPECT_EQ(resumed.spikes(), 1);
  EXPECT_EQ(resumed.in_a_row(), 1);
  TrainConfig shorter = t;  // a resume with a shorter spike_window keeps the newest losses
  shorter.spike_window = 2;
  GuardRecord cut = before;
  LossGuard narrower(shorter, cut);
  EXPECT_EQ(narrower.judge(2.5, false), V::keep);  // not above 3 x mean(2, 3)
  EXPECT_EQ(cut.window, (std::vector<double>{3.0, 2.5}));
  EXPECT_EQ(narrower.judge(8.5, false), V::spike);  // > 3 x mean(3, 2.5) = 8.25
}

TEST(RunReport, CsvProgressLineAndSummaryComeFromTheSameFigures) {
  EXPECT_EQ(RunReport::csv_header(),
            "step,epoch,wall_s,loss,accuracy,samples_per_s,data_wait_pct,comm_exposed_pct,lr,eval_loss,eval_accuracy,"
            "grad_norm,loss_scale,skipped_steps,cpu_busy_pct,rss_mib,cpu_energy_j,tokens_per_s,perplexity,"
            "eval_perplexity,gpu_util_pct_min,gpu_util_pct_mean,gpu_util_pct_max,gpu_mem_used_mib_min,"
            "gpu_mem_used_mib_mean,gpu_mem_used_mib_max,gpu_mem_total_mib,gpu_power_w_min,gpu_power_w_mean,"
            "gpu_power_w_max,gpu_temp_c_min,gpu_temp_c_mean,gpu_temp_c_max,gpu_energy_j_min,gpu_energy_j_mean,"
            "gpu_energy_j_max,model_flops_per_s,mfu_pct,eval_mae,eval_bits_per_byte");
  const std::string no_gpu(20, ',');  // the GPU columns, model FLOP/s, MFU, the evaluation's MAE and bpb, empty here
  IntervalFigures f;
  f.step = 40;
  f.epoch = 2;
  f.total = 100;
  f.wall_s = 1.5;
  f.loss = 0.25;
  f.accuracy = 0.875;
  f.samples_per_s = 1000;
  f.lr = 0.05;
  f.eta_s = 3725;
  f.grad_norm = 3.5;
  f.skipped_steps = 2;
  f.cpu_busy_pct = 99.5;
  f.rss_mib = 120;
  // One rank without a GPU: nothing about communication or GPUs on the line, empty cells in the CSV.
  EXPECT_EQ(RunReport::csv_row(f), "40,2,1.5,0.25,0.875,1000,0,,0.05,,,3.5,1,2,99.5,120,,,," + no_gpu);
  EXPECT_EQ(RunReport::progress_line(f),
            "epoch 2 step 40/100 | loss 0.2500 | acc  87.5% | 1000 samples/s | ETA 1:02:05 | data wait 0.0% | lr 0.05");
  f.comm_exposed_pct = 2.5;  // more ranks
  EXPECT_NE(RunReport::progress_line(f).find("| data wait 0.0% | comm exposed 2.5% | lr 0.05"), std::string::npos);
  EXPECT_EQ(RunReport::csv_row(f), "40,2,1.5,0.25,0.875,1000,0,2.5,0.05,,,3.5,1,2,99.5,120,,,," + no_gpu);
  f.eval_split = "val";
  f.eval_loss = 0.5;
  f.eval_accuracy = 0.75;
  EXPECT_EQ(RunReport::csv_row(f), "40,2,1.5,0.25,0.875,1000,0,2.5,0.05,0.5,0.75,3.5,1,2,99.5,120,,,," + no_gpu);
  EXPECT_NE(RunReport::progress_line(f).find("| val loss 0.5000 acc 75.00%"), std::string::npos);
  // A language model: tokens/s and perplexities, in the CSV and the progress line.
  f.tokens_per_s = 64000;
  f.perplexity = 1.25;
  f.eval_perplexity = 1.5;
  EXPECT_EQ(RunReport::csv_row(f),
            "40,2,1.5,0.25,0.875,1000,0,2.5,0.05,0.5,0.75,3.5,1,2,99.5,120,,64000,1.25,1.5" + no_gpu);
  EXPECT_NE(RunReport::progress_line(f).find("| 64000 tokens/s |"), std::string::npos) << RunReport::progress_line(f);
  EXPECT_NE(RunReport::progress_line(f).find("ppl 1.5000"), std::string::npos) << RunReport::progress_line(f);
  f.model_flops_per_s = 2.5e12;  // and model FLOP/s, with MFU where the GPU's peak is known
  EXPECT_NE(RunReport::progress_line(f).find("| 64000 tokens/s, 2.5 TFLOP/s |"), std::string::npos)
      << RunReport::progress_line(f);
  f.mfu_pct = 41.25;
  EXPECT_NE(RunReport::progress_line(f).find("| 64000 tokens/s, 2.5 TFLOP/s MFU 41.2% |"), std::string::npos)
      << RunReport::progress_line(f);
  EXPECT_EQ(RunReport::csv_row(f).substr(RunReport::csv_row(f).size() - 16), ",2.5e+12,41.25,,");
  f.eval_bits_per_byte = 1.75;  // and bits per byte where the tokenizer counts bytes: the last column
  EXPECT_EQ(RunReport::csv_row(f).substr(RunReport::csv_row(f).size() - 20), ",2.5e+12,41.25,,1.75");
  EXPECT_NE(RunReport::progress_line(f).find("ppl 1.5000 bpb 1.7500"), std::string::npos)
      << RunReport::progress_line(f);
  f.eval_loss = 16.19999;  // a diverged model: rounded, not cut ("16.1999"), every digit of its perplexity kept
  f.eval_perplexity = 10800000.5;
  EXPECT_NE(RunReport::progress_line(f).find("val loss 16.2000 acc 75.00% ppl 10800000.5000 bpb"), std::string::npos)
      << RunReport::progress_line(f);
  f.eval_loss = 0.5;
  f.eval_bits_per_byte.reset();
  // A regression: the evaluation's mean absolute error, per target on the line, the mean in the CSV.
  f.eval_mae = 0.125;
  f.eval_mae_text = "mae 0.1250 (a 0.1000, b 0.1500)";
  EXPECT_EQ(RunReport::csv_row(f).substr(RunReport::csv_row(f).size() - 21), ",2.5e+12,41.25,0.125,");
  EXPECT_NE(RunReport::progress_line(f).find("| val loss 0.5000 mae 0.1250 (a 0.1000, b 0.1500)"), std::string::npos)
      << RunReport::progress_line(f);
  EXPECT_NE(RunReport::progress_line(f).find("| acc "), std::string::npos);
  f.regression = true;  // (no accuracy for float targets)
  EXPECT_EQ(RunReport::progress_line(f).find("| acc "), std::string::npos) << RunReport::progress_line(f);
  RunSummary s;
  s.steps = 10;
  s.precision = "bf16";
  s.run_id = "20261204T073505Z-cb59ad";
  s.deck = "runs/\"q\"\\x.ini";  // (a JSON string: quotes and backslashes escaped)
  const std::string js = RunReport::summary_json(s);
  EXPECT_EQ(js.rfind("{\n  \"run_id\": \"20261204T073505Z-cb59ad\",\n  \"started_at\": \"\",\n  \"deck\": "
                     "\"runs/\\\"q\\\"\\\\x.ini\",\n  \"steps\": 10,\n  \"first_step\": 0,",
                     0),
            0u)
      << js;
  EXPECT_NE(js.find("\"precision\": \"bf16\""), std::string::npos);
  EXPECT_NE(js.find("\"test_accuracy\": -1"), std::string::npos);     // no test split
  EXPECT_NE(js.find("\"cpu_energy_kwh\": null"), std::string::npos);  // no RAPL: null, not empty
  s.cpu_energy_kwh = 0.5;
  EXPECT_NE(RunReport::summary_json(s).find("\"cpu_energy_kwh\": 0.5,"), std::string::npos);
  EXPECT_NE(js.find("\"steady_tokens_per_s\": null,\n"), std::string::npos);  // not a language model
  s.tokens_per_sample = 64;
  s.steady_samples_per_s = 10;
  EXPECT_NE(RunReport::summary_json(s).find("\"steady_tokens_per_s\": 640,\n"), std::string::npos);
  EXPECT_NE(RunReport::summary_json(s).find("\"steady_mfu_pct\": null,"), std::string::npos);  // no FLOPs count
  s.flops_per_token = 1e9;
  s.ranks = 2;
  s.peak_flops_per_rank = 1e12;  // 640 tokens/s x 1e9 = 6.4e11 FLOP/s of 2e12: 32%
  EXPECT_NE(RunReport::summary_json(s).find("\"steady_model_flops_per_s\": 6.4e+11,\n  \"steady_mfu_pct\": 32,"),
            std::string::npos)
      << RunReport::summary_json(s);
  EXPECT_EQ(js.substr(js.size() - 3), "\n}\n");  // closed
}

// Without a val or test split nothing is evaluated: the done line says so and summary.json's
// final evaluation is null (it printed "eval loss 0.0000, perplexity 1.000 (0 tokens)").
TEST(RunReport, NothingEvaluatedIsNotALossOfZero) {
  RunSummary s;
  s.tokens_per_sample = 64;
  s.final_split = "eval";
  const std::string line = RunReport::done_line(s), js = RunReport::summary_json(s);
  EXPECT_NE(line.find("| not evaluated (the dataset has no val or test split) |"), std::string::npos) << line;
  EXPECT_EQ(line.find("perplexity"), std::string::npos) << line;
  EXPECT_NE(js.find("\"final_eval_split\": null,\n  \"final_eval_loss\": null,\n  \"final_eval_accuracy\": null,\n  "
                    "\"final_eval_samples\": 0,\n  \"final_eval_perplexity\": null,"),
            std::string::npos)
      << js;
  s.final_samples = 100;  // evaluated
  s.final_loss = 2;
  EXPECT_NE(RunReport::done_line(s).find("| eval loss 2.0000, perplexity 7.389 (100 tokens) |"), std::string::npos)
      << RunReport::done_line(s);
  EXPECT_NE(RunReport::summary_json(s).find("\"final_eval_split\": \"eval\",\n  \"final_eval_loss\": 2,"),
            std::string::npos)
      << RunReport::summary_json(s);
}
