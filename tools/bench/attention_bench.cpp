// attention-bench: fused attention (backend flash_attention_*, never T x T) against the
// materialized path (attention(..., fused=0): the [N, H, T, T] probabilities kept, and their
// gradient in the backward) through the attention layer as training calls it: one GPT-2 124M
// layer (12 heads, 768 wide), one sequence, forward then backward with the input gradient.
// Each (path, T) runs in a forked child so its peak resident memory (getrusage) is its own; time
// is the best of --repeats runs after a warm-up, at the threads OpenBLAS is given. With --window W
// a third case: fused attention over a sliding window of W positions (attention(..., window=W),
// Mistral's and Gemma 3's local layers), its time and memory beside the fused one's.
//   build/attention-bench [--t 256,1024,2048,4096,8192] [--repeats N] [--heads H --width C] [--window W]
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "hpctrain/layers/registry.hpp"

using namespace hpctrain;

namespace {
struct Options {
  std::vector<std::int64_t> lengths{256, 1024, 2048, 4096, 8192};
  std::int64_t heads = 12, width = 768, window = 0;
  int repeats = 3;
};

struct Result {
  double ms = 0, peak_mib = 0;
};

// Runs one case in this process (`args`: the layer's arguments after the heads): best milliseconds
// of forward + backward.
double run_case(const std::string& args, std::int64_t t, const Options& o) {
  Allocator alloc;
  LayerRegistry r;
  register_builtin_layers(r, LayerOptions{});
  auto layer = r.make(parse_layers("attention(" + std::to_string(o.heads) + ", " + args + ")").front());
  const Shape in{t, o.width};
  layer->configure(in);
  std::vector<Tensor> p, g;
  for (const auto& s : layer->param_specs(in)) {
    p.push_back(Tensor::zeros(s.shape, alloc));
    g.push_back(Tensor::zeros(s.shape, alloc));
    for (std::int64_t i = 0; i < p.back().numel(); ++i)
      p.back().data()[i] = 0.002f * static_cast<float>(i % 13) - 0.012f;
  }
  layer->bind(p, g);
  StepContext ctx;
  ctx.training = true;
  layer->set_context(&ctx, 0);
  Tensor x = Tensor::zeros({1, t, o.width}, alloc), y = Tensor::zeros(x.shape(), alloc);
  Tensor dy = Tensor::zeros(x.shape(), alloc), dx = Tensor::zeros(x.shape(), alloc);
  for (std::int64_t i = 0; i < x.numel(); ++i) x.data()[i] = 0.01f * static_cast<float>(i % 97) - 0.48f;
  for (std::int64_t i = 0; i < dy.numel(); ++i) dy.data()[i] = 0.001f * static_cast<float>(i % 89) - 0.04f;
  double best = 1e30;
  for (int k = 0; k <= o.repeats; ++k) {
    const auto t0 = std::chrono::steady_clock::now();
    layer->forward(x, y);
    layer->set_accumulate_grads(false);
    layer->backward(x, y, dy, dx);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (k > 0 || o.repeats == 0) best = std::min(best, ms);
  }
  return best;
}

// The case in a child: its time through a pipe, its peak resident set from wait4's rusage.
Result in_child(const std::string& args, std::int64_t t, const Options& o) {
  int fd[2];
  if (pipe(fd) != 0) return {};
  const pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    const double ms = run_case(args, t, o);
    if (write(fd[1], &ms, sizeof ms) != sizeof ms) _exit(1);
    _exit(0);
  }
  close(fd[1]);
  Result res;
  if (read(fd[0], &res.ms, sizeof res.ms) != sizeof res.ms) res.ms = -1;
  close(fd[0]);
  int status = 0;
  rusage use{};
  wait4(pid, &status, 0, &use);
  res.peak_mib = static_cast<double>(use.ru_maxrss) / 1024.0;
  return res;
}

std::vector<std::int64_t> numbers(const std::string& text) {
  std::vector<std::int64_t> out;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) out.push_back(std::stoll(item));
  return out;
}
}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--t")
      o.lengths = numbers(v);
    else if (k == "--repeats")
      o.repeats = std::atoi(v.c_str());
    else if (k == "--heads")
      o.heads = std::atoll(v.c_str());
    else if (k == "--width")
      o.width = std::atoll(v.c_str());
    else if (k == "--window")
      o.window = std::atoll(v.c_str());
    else {
      std::fprintf(stderr, "attention-bench: unknown option %s\n", k.c_str());
      return 2;
    }
  }
  std::printf("# one attention layer, %lld heads, %lld wide, 1 sequence, forward + backward\n",
              static_cast<long long>(o.heads), static_cast<long long>(o.width));
  const bool windowed = o.window > 0;
  std::printf("%8s  %14s  %14s  %10s  %12s  %12s  %8s", "T", "held MiB", "fused MiB", "mem ratio", "held ms",
              "fused ms", "speed");
  if (windowed) std::printf("  %12s  %12s  %8s", "window MiB", "window ms", "w speed");
  std::printf("\n");
  const std::string window_args = "fused=1, window=" + std::to_string(o.window);
  for (const std::int64_t t : o.lengths) {
    const Result held = in_child("fused=0", t, o), fused = in_child("fused=1", t, o);
    std::printf("%8lld  %14.1f  %14.1f  %9.2fx  %12.1f  %12.1f  %7.2fx", static_cast<long long>(t), held.peak_mib,
                fused.peak_mib, held.peak_mib / fused.peak_mib, held.ms, fused.ms, held.ms / fused.ms);
    if (windowed) {
      const Result w = in_child(window_args, t, o);
      std::printf("  %12.1f  %12.1f  %7.2fx", w.peak_mib, w.ms, fused.ms / w.ms);
    }
    std::printf("\n");
  }
  std::printf("# peak resident memory of each case's process (MiB); speed: held ms / fused ms (> 1: fused faster)%s\n",
              windowed ? "; w speed: fused ms / window ms (the sliding window's gain)" : "");
  return 0;
}
