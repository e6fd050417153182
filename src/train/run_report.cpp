// The progress line, the metrics CSV and summary.json (train/run_report.hpp).
#include "hpctrain/train/run_report.hpp"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <type_traits>
#include <vector>

#include "hpctrain/core/error.hpp"
#include "hpctrain/core/log.hpp"
#include "hpctrain/core/table.hpp"

namespace fs = std::filesystem;

namespace hpctrain {

namespace {
std::string duration_text(double s) {
  const long t = static_cast<long>(s + 0.5);
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%ld:%02ld:%02ld", t / 3600, (t / 60) % 60, t % 60);
  return buf;
}

std::string resolve(const std::string& dir, const std::string& file) {
  return fs::path(file).is_absolute() ? file : (fs::path(dir) / file).string();
}

// A value as the CSV and summary.json write it: numbers as an ostream prints them (6 significant
// digits), a missing value as nothing, text quoted (JSON only).
template <class T>
void put(std::ostream& os, const T& v) {
  os << v;
}
void put(std::ostream& os, const std::optional<double>& v) {
  if (v) os << *v;
}
void put(std::ostream& os, const std::string& v);
void put(std::ostream& os, const std::optional<std::string>& v) {
  if (v) put(os, *v);
}
void put(std::ostream& os, const std::string& v) {  // a JSON string: quotes, backslashes and controls escaped
  os << '"';
  for (const char c : v) {
    if (c == '"' || c == '\\')
      os << '\\' << c;
    else if (static_cast<unsigned char>(c) < 0x20) {
      char u[8];
      std::snprintf(u, sizeof u, "\\u%04x", c);
      os << u;
    } else
      os << c;
  }
  os << '"';
}
void put(std::ostream& os, bool v) { os << (v ? "true" : "false"); }

// ", 1.23 TFLOP/s" and " MFU 41.2%" where known: a language model's model FLOP/s and utilization.
std::string flops_text(const std::optional<double>& flops, const std::optional<double>& mfu_pct) {
  if (!flops) return "";
  const double f = *flops;
  char buf[64];
  std::snprintf(buf, sizeof(buf), ", %.3g %sFLOP/s",
                f >= 1e12  ? f / 1e12
                : f >= 1e9 ? f / 1e9
                           : f / 1e6,
                f >= 1e12  ? "T"
                : f >= 1e9 ? "G"
                           : "M");
  std::string out = buf;
  if (mfu_pct) {
    std::snprintf(buf, sizeof(buf), " MFU %.1f%%", *mfu_pct);
    out += buf;
  }
  return out;
}
}  // namespace

RunReport::RunReport(const std::string& out_dir, const std::string& metrics_file, bool writer, bool tensorboard)
    : out_dir_(out_dir), metrics_path_(resolve(out_dir, metrics_file)), writer_(writer), tensorboard_(tensorboard) {}

std::string RunReport::csv_header() {
  std::string h;
  visit_columns(IntervalFigures{},
                [&](const std::string& name, const std::string&, const auto&) { h += (h.empty() ? "" : ",") + name; });
  return h;
}

std::string RunReport::csv_row(const IntervalFigures& f) {
  std::ostringstream os;
  bool first = true;
  visit_columns(f, [&](const std::string&, const std::string&, const auto& v) {
    if (!first) os << ',';
    first = false;
    put(os, v);
  });
  return os.str();
}

std::string RunReport::progress_line(const IntervalFigures& f) {
  std::string eval;
  if (f.eval_loss && !f.eval_mae_text.empty())
    eval = " | " + f.eval_split + " loss " + fixed_text(*f.eval_loss, 4) + " " + f.eval_mae_text;
  else if (f.eval_loss)
    eval = " | " + f.eval_split + " loss " + fixed_text(*f.eval_loss, 4) + " acc " +
           fixed_text(100 * f.eval_accuracy.value_or(0), 2) + "%";
  if (f.eval_perplexity) eval += " ppl " + fixed_text(*f.eval_perplexity, 4);
  if (f.eval_bits_per_byte) eval += " bpb " + fixed_text(*f.eval_bits_per_byte, 4);
  char rate[128];  // language models: tokens/s, model FLOP/s and MFU
  if (f.tokens_per_s)
    std::snprintf(rate, sizeof(rate), "%.0f tokens/s%s", *f.tokens_per_s,
                  flops_text(f.model_flops_per_s, f.mfu_pct).c_str());
  else
    std::snprintf(rate, sizeof(rate), "%.0f samples/s", f.samples_per_s);
  // Only what applies: communication with more than one rank, the least and most busy GPU (a
  // straggler shows here) where there are GPUs.
  char comm[48] = "", gpu[48] = "";
  if (f.comm_exposed_pct) std::snprintf(comm, sizeof(comm), " | comm exposed %.1f%%", *f.comm_exposed_pct);
  if (f.gpu_util_pct) std::snprintf(gpu, sizeof(gpu), " | gpu %.0f-%.0f%%", f.gpu_util_pct->min, f.gpu_util_pct->max);
  char acc[32] = "";
  if (!f.regression) std::snprintf(acc, sizeof(acc), " | acc %5.1f%%", 100 * f.accuracy);
  char line[1024];
  std::snprintf(line, sizeof(line),
                "epoch %lld step %lld/%lld | loss %.4f%s | %s | ETA %s | data wait %.1f%%%s%s | lr %.4g%s",
                static_cast<long long>(f.epoch), static_cast<long long>(f.step), static_cast<long long>(f.total),
                f.loss, acc, rate, duration_text(f.eta_s).c_str(), f.data_wait_pct, comm, gpu, f.lr, eval.c_str());
  return line;
}

std::string RunReport::open(std::int64_t resumed_at) {
  if (!writer_) return "";
  std::error_code ec;
  fs::create_directories(out_dir_, ec);
  const std::string header = csv_header();
  std::vector<std::string> keep;
  if (resumed_at > 0) {
    std::ifstream in(metrics_path_);
    for (std::string line; std::getline(in, line);)
      if (line != header && !line.empty() && std::stoll(line.substr(0, line.find(','))) <= resumed_at)
        keep.push_back(line);
  }
  metrics_.open(metrics_path_, std::ios::trunc);
  if (!metrics_) return "[log] metrics_file: cannot write " + metrics_path_ + " (is [run] out_dir writable?)";
  metrics_ << header << '\n';
  for (const auto& l : keep) metrics_ << l << '\n';
  metrics_ << std::flush;
  if (!metrics_) return "[log] metrics_file: cannot write " + metrics_path_ + " (disk full?)";
  if (tensorboard_) {
    try {
      events_ = std::make_unique<EventFileWriter>(resolve(out_dir_, "tensorboard"));
    } catch (const Error& e) {
      return e.what();
    }
    // TensorBoard drops the points of earlier files at steps >= this: a resumed run's the killed
    // run logged past its checkpoint, a fresh start's all (one curve per folder).
    events_->session_start(resumed_at > 0 ? resumed_at + 1 : 0);
  }
  return "";
}

void RunReport::describe(std::int64_t step, const std::string& ini, const std::string& model_summary) {
  if (writer_) std::ofstream(resolve(out_dir_, "config.ini")) << ini;  // what this run uses (tools/report.py)
  if (!events_) return;
  auto code = [](const std::string& text) {  // Markdown: a code block (four spaces per line)
    std::string out, line;
    std::istringstream in(text);
    while (std::getline(in, line)) out += "    " + line + "\n";
    return out;
  };
  events_->text("config/ini", step, code(ini));
  events_->text("config/model", step, code(model_summary));
  events_->flush();
}

void RunReport::interval(const IntervalFigures& f) {
  log0(progress_line(f));
  if (metrics_) {
    metrics_ << csv_row(f) << '\n' << std::flush;
    if (!metrics_)  // (a full disk): monitoring must not stop training; say so once and stop writing
      warn("cannot write the metrics file " + metrics_path_ + " (disk full?): no more rows are written to it");
  }
  if (!events_) return;
  visit_columns(f, [&](const std::string&, const std::string& tag, const auto& v) {
    if (tag.empty()) return;
    if constexpr (std::is_same_v<std::decay_t<decltype(v)>, std::optional<double>>) {
      if (v) events_->scalar(tag, f.step, *v);
    } else {
      events_->scalar(tag, f.step, static_cast<double>(v));
    }
  });
  events_->flush();
}

void RunReport::flush() {
  if (events_) events_->flush();
}

std::string RunReport::summary_json(const RunSummary& s) {
  std::ostringstream os;
  const char* sep = "{\n  ";
  visit_summary(s, [&](const char* name, const auto& v) {
    os << sep << '"' << name << "\": ";
    using V = std::decay_t<decltype(v)>;
    if constexpr (std::is_same_v<V, std::optional<double>> || std::is_same_v<V, std::optional<std::string>>) {
      if (!v) os << "null";  // (JSON has no empty value)
    }
    put(os, v);
    sep = ",\n  ";
  });
  os << "\n}\n";
  return os.str();
}

// "done: ..." for classifiers and regressions (samples) and language models (tokens: the
// figures per token, and the final evaluation's loss and perplexity).
std::string RunReport::done_line(const RunSummary& s) {
  const std::string cost = s.price_per_device_hour > 0 ? ", cost " + fixed_text(s.cost(), 4) : "";
  const auto T = static_cast<double>(s.tokens_per_sample);
  char speed[256], eval[400], rest[320];
  if (s.tokens_per_sample)
    std::snprintf(speed, sizeof speed, "%.0f tokens/s (steady state %.0f%s)", s.samples_per_s * T,
                  s.steady_samples_per_s * T, flops_text(s.steady_model_flops_per_s(), s.steady_mfu_pct()).c_str());
  else
    std::snprintf(speed, sizeof speed, "%.0f samples/s (steady state %.0f)", s.samples_per_s, s.steady_samples_per_s);
  if (!s.evaluated()) {
    std::snprintf(eval, sizeof eval, "not evaluated (the dataset has no val or test split)");
  } else if (s.tokens_per_sample) {
    char bpb[48] = "";
    if (s.final_bits_per_byte) std::snprintf(bpb, sizeof bpb, ", bits per byte %.4f", *s.final_bits_per_byte);
    std::snprintf(eval, sizeof eval, "%s loss %.4f, perplexity %.3f%s (%lld tokens)", s.final_split.c_str(),
                  s.final_loss, std::exp(s.final_loss), bpb, static_cast<long long>(s.final_samples));
  } else if (s.final_mae) {
    std::snprintf(eval, sizeof eval, "%s loss %.4f, %s (%lld samples)", s.final_split.c_str(), s.final_loss,
                  s.final_mae_text.c_str(), static_cast<long long>(s.final_samples));
  } else {
    std::snprintf(eval, sizeof eval, "%s accuracy %.2f%% (%lld samples)", s.final_split.c_str(), 100 * s.final_accuracy,
                  static_cast<long long>(s.final_samples));
  }
  std::snprintf(rest, sizeof rest,
                "%.4f rank-hours%s | step time per rank %.1f-%.1f s | peak memory per rank %s (estimate %s, host "
                "RSS %s) | %d checkpoint(s), %.2f s writing",
                s.rank_hours, cost.c_str(), s.step_time_s_min, s.step_time_s_max,
                bytes_text(s.peak_bytes_per_rank).c_str(), bytes_text(s.memory_estimate_bytes_per_rank).c_str(),
                bytes_text(s.host_peak_rss_bytes_per_rank).c_str(), s.checkpoints_written, s.checkpoint_write_s);
  char line[1100];
  std::snprintf(line, sizeof line, "done: %lld steps in %.1f s, %s | final loss %.4f | %s | %s",
                static_cast<long long>(s.steps), s.wall_s, speed, s.final_train_loss, eval, rest);
  return line;
}

std::string RunReport::energy_line(const RunSummary& s) {
  auto kwh = [](const std::optional<double>& e) { return e ? fixed_text(*e, 6) + " kWh" : "n/a"; };
  std::string line = "energy:";
  if (s.gpu_hours) line += " GPUs " + kwh(s.gpu_energy_kwh) + " over " + fixed_text(*s.gpu_hours, 6) + " GPU-hours;";
  return line + " CPU packages " + kwh(s.cpu_energy_kwh);
}

void RunReport::finish(const RunSummary& s) {
  if (s.comm_alone_s_per_step > 0)  // (one data-parallel rank: no probe ran, nothing was sent)
    log0("gradient averaging: " + std::to_string(s.buckets) + " bucket(s), " +
         fixed_text(s.comm_alone_s_per_step * 1e3, 4) + " ms per step alone, " +
         fixed_text(s.comm_wait_s_per_step * 1e3, 4) + " ms per step waited after backward (least over ranks): " +
         fixed_text(100 * s.comm_hidden_fraction, 2) + "% hidden");
  if (s.precision != "fp32") {
    const std::string fp16 = s.precision == "fp16" ? ": " + std::to_string(s.skipped_steps) +
                                                         " update(s) skipped for overflow, loss scale now " +
                                                         std::to_string(static_cast<long long>(s.loss_scale))
                                                   : "";
    log0("precision " + s.precision + " (float32 master parameters; " + s.gemms + ")" + fp16);
  }
  if (s.pipeline) {
    // Pipeline idle: the share of the stages' step time spent waiting for a neighbour, over all
    // ranks, beside the ideal of a perfectly balanced pipeline, (M - 1) / (K + M - 1).
    char pl[256];
    std::snprintf(pl, sizeof(pl),
                  "pipeline: %d stages, %d micro-batches, %s: idle %.1f%% of the stages' step time (ideal %.1f%%); "
                  "at most %.0f micro-batch inputs kept per stage",
                  s.pipeline_parallel, s.micro_batches, s.gpipe ? "gpipe" : "1f1b", 100 * s.pipeline_idle_fraction(),
                  100 * s.pipeline_idle_ideal(), s.pipeline_peak_kept_inputs);
    log0(pl);
  }
  if (s.gpu_hours || s.cpu_energy_kwh) log0(energy_line(s));
  log0(done_line(s));
  if (writer_) std::ofstream(resolve(out_dir_, "summary.json")) << summary_json(s);
  flush();
}

}  // namespace hpctrain
