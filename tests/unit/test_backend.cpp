// The backend operations' own tests: precision rounding (bf16, fp16 against a
// reference at every magnitude), the CPU's bf16 GEMM against sgemm, and every
// operation dispatched to the CUDA side.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>

#include "hpctrain/backend/checks.hpp"
#include "hpctrain/backend/column_sums.hpp"
#include "hpctrain/backend/configure.hpp"
#include "hpctrain/backend/cpu/onednn_conv.hpp"
#include "hpctrain/backend/cpu/onednn_matmul.hpp"
#include "hpctrain/backend/cuda/device_api.hpp"
#include "hpctrain/backend/ops.hpp"
#include "hpctrain/backend/pool_geometry.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/tensor/step_scalars.hpp"
#include "unit_test_util.hpp"

using namespace hpctrain;
using unittest::random_values;

// Rounding to bf16 and fp16 (what storing in those formats does), kept in float32.
TEST(Backend, RoundToPrecision) {
  Allocator alloc;
  Tensor t = Tensor::zeros({8}, alloc);
  const float in[8] = {1.f + 1.f / 512, 1.f + 3.f / 512, 70000.f, 65504.f, 1.f / 3, -2.5e-8f, 1e-5f, INFINITY};
  std::copy(in, in + 8, t.data());
  round_to_precision(t, Precision::bf16);
  EXPECT_EQ(t.data()[0], 1.f);              // 1 + 2^-9: halfway below 8 mantissa bits -> even (1)
  EXPECT_EQ(t.data()[1], 1.f + 4.f / 512);  // 1 + 3 * 2^-9 -> 1 + 2^-7
  EXPECT_EQ(t.data()[2], 70144.f);          // bf16 has float32's range
  EXPECT_TRUE(std::isinf(t.data()[7]));
  std::copy(in, in + 8, t.data());
  round_to_precision(t, Precision::fp16);
  EXPECT_EQ(t.data()[0], 1.f + 1.f / 512);  // representable in fp16 (10 fraction bits)
  EXPECT_TRUE(std::isinf(t.data()[2]));     // past 65504: overflow
  EXPECT_EQ(t.data()[3], 65504.f);
  EXPECT_EQ(t.data()[4], 0.333251953125f);     // 1/3 in fp16
  EXPECT_EQ(t.data()[5], 0.f);                 // below half the smallest subnormal (2^-25)
  EXPECT_EQ(t.data()[6], 168.f / 16777216.f);  // subnormal grid of 2^-24
  std::copy(in, in + 8, t.data());
  round_to_precision(t, Precision::fp32);
  EXPECT_EQ(t.data()[4], 1.f / 3);
}

// Softmax cross-entropy on a language model's row width (GPT-2's 50,304, plus a tail of 3 past a
// multiple of 8), both ways (whole rows, with the gradient written in the same pass; the
// vocabulary-parallel row_max, softmax_partial and softmax_finish), against double: each gradient
// grad_scale (p - onehot) and each probability within 5e-7 of the reference (float exp within 2 ulp,
// a rounding of the scale, the sum's; the label's p - 1 within one float ulp of 1 absolute, as the
// subtraction cancels), a masked logit's (-inf, the padded vocabulary) exactly 0, the loss within
// 1e-6 of the rows' sum, and accuracy by the first maximum (std::max_element's answer), ties
// included. Without a gradient (evaluation) the op gives the same sums, bit for bit.
TEST(Backend, SoftmaxCrossEntropyOnWideRowsAgainstDouble) {
  Allocator alloc;
  const std::int64_t rows = 4, n = 50307;
  Tensor logits = Tensor::zeros({rows, n}, alloc), probs = Tensor::zeros({rows, n}, alloc);
  const auto v = random_values(rows * n, 11);
  for (std::int64_t i = 0; i < rows * n; ++i) logits.data()[i] = 12.f * v[static_cast<std::size_t>(i)];
  float* z = logits.data();
  for (std::int64_t j = n - 47; j < n; ++j) z[j] = -INFINITY;  // row 0: a padded vocabulary
  z[n + 5] = z[n + 900] = 20.f;                                // row 1: a tie; its label the second: wrong
  z[2 * n + 7] = z[2 * n + 50000] = 20.f;                      // row 2: a tie; its label the first: right
  z[3 * n + n - 1] = 30.f;                                     // row 3: the maximum in the tail, the label
  const std::vector<std::int32_t> labels{3, 900, 7, static_cast<std::int32_t>(n - 1)};
  double loss_ref = 0;
  std::vector<double> p_ref(static_cast<std::size_t>(rows * n));
  for (std::int64_t i = 0; i < rows; ++i) {
    const float* r = z + i * n;
    const float mx = *std::max_element(r, r + n);
    double sum = 0;  // (of exp(z - max) with z - max rounded to float, as the operation defines it)
    for (std::int64_t j = 0; j < n; ++j) sum += std::exp(static_cast<double>(r[j] - mx));
    for (std::int64_t j = 0; j < n; ++j)
      p_ref[static_cast<std::size_t>(i * n + j)] = std::exp(static_cast<double>(r[j] - mx)) / sum;
    loss_ref += std::log(sum) + mx - r[labels[static_cast<std::size_t>(i)]];
  }
  const auto check_sums = [&](const char* way, const Tensor& scalars, float correct) {
    const auto h = step_scalars::to_host(scalars);
    EXPECT_NEAR(h[step_scalars::loss_sum], loss_ref, 1e-6 * loss_ref) << way;
    EXPECT_EQ(h[step_scalars::samples], rows) << way;
    EXPECT_EQ(h[step_scalars::correct], correct) << way;
  };
  // got[i, j] against scale (p_ref - onehot), the label's entry only when onehot.
  const auto check_rows = [&](const char* way, const Tensor& got, float scale, bool onehot) {
    double worst = 0, worst_label = 0;
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        const bool at_label = onehot && j == labels[static_cast<std::size_t>(i)];
        const double want = scale * (p_ref[static_cast<std::size_t>(i * n + j)] - (at_label ? 1 : 0));
        const double diff = std::fabs(got.data()[i * n + j] - want);
        if (at_label)
          worst_label = std::max(worst_label, diff / scale);
        else
          worst = std::max(worst, diff / std::max(std::fabs(want), 1e-30));
      }
    EXPECT_LT(worst, 5e-7) << way << ": the largest relative difference";
    EXPECT_LE(worst_label, 1.2e-7) << way << ": the largest difference at a label";
    for (std::int64_t j = n - 47; j < n; ++j) ASSERT_EQ(got.data()[j], 0.f) << way << ": masked column " << j;
  };
  Tensor scalars = step_scalars::make(alloc);
  softmax_cross_entropy(logits, labels.data(), scalars, 0.25f, &probs);
  check_sums("whole rows", scalars, 2.f);  // rows 2 and 3
  check_rows("whole rows' gradient", probs, 0.25f, true);
  Tensor eval = step_scalars::make(alloc);
  softmax_cross_entropy(logits, labels.data(), eval, 0.f, nullptr);
  EXPECT_EQ(step_scalars::to_host(eval), step_scalars::to_host(scalars)) << "without the gradient";
  Tensor mx = Tensor::zeros({rows}, alloc), sums = Tensor::zeros({2 * rows}, alloc);
  Tensor scalars2 = step_scalars::make(alloc);
  row_max(logits, mx);
  softmax_partial(logits, mx, labels.data(), 0, probs, sums);
  softmax_finish(probs, mx, sums, scalars2);
  check_sums("vocabulary-parallel", scalars2, 3.f);  // (a tie counts: the ranks do not know the first)
  check_rows("vocabulary-parallel probabilities", probs, 1.f, false);
}

// The loss, the sum of squares (gradient clipping) and AdamW run on the [kernels] threads; their
// pieces do not depend on the thread count, so 1 and 3 threads give the same bits.
TEST(Backend, ThreadedLoopsGiveTheSameBitsOnAnyThreadCount) {
  Allocator alloc;
  const std::int64_t rows = 37, n = 5003, big = 300001;
  const auto v = random_values(rows * n, 21), g = random_values(big, 22);
  std::vector<std::int32_t> labels(static_cast<std::size_t>(rows));
  for (std::int64_t i = 0; i < rows; ++i) labels[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(i * 131 % n);
  struct Out {
    std::vector<float> probs, scalars, w, m, vv;
    double squares = 0;
  };
  const auto run = [&](int threads) {
    configure_backend({Device::cpu, threads});
    Tensor logits = Tensor::zeros({rows, n}, alloc), probs = Tensor::zeros({rows, n}, alloc);
    for (std::int64_t i = 0; i < rows * n; ++i) logits.data()[i] = 9.f * v[static_cast<std::size_t>(i)];
    Tensor scalars = step_scalars::make(alloc);
    softmax_cross_entropy(logits, labels.data(), scalars, 0.5f, &probs);
    Tensor w = Tensor::zeros({big}, alloc), grad = Tensor::zeros({big}, alloc), m = Tensor::zeros({big}, alloc),
           vv = Tensor::zeros({big}, alloc);
    std::copy(g.begin(), g.end(), grad.data());
    std::copy(g.rbegin(), g.rend(), w.data());
    scalars.data()[step_scalars::learning_rate] = 1e-3f;
    scalars.data()[step_scalars::adam_step] = 1.f;
    adam_update(w, grad, m, vv, scalars, 0.9f, 0.95f, 1e-8f, 0.1f, true);
    Out o;
    o.squares = sum_of_squares(grad);
    o.probs.assign(probs.data(), probs.data() + probs.numel());
    o.scalars.assign(scalars.data(), scalars.data() + scalars.numel());
    o.w.assign(w.data(), w.data() + big);
    o.m.assign(m.data(), m.data() + big);
    o.vv.assign(vv.data(), vv.data() + big);
    return o;
  };
  const Out one = run(1), three = run(3);
  configure_backend({Device::cpu, 1});
  EXPECT_EQ(std::memcmp(&one.squares, &three.squares, sizeof(double)), 0) << one.squares << " " << three.squares;
  EXPECT_EQ(one.probs, three.probs);
  EXPECT_EQ(one.scalars, three.scalars);
  EXPECT_EQ(one.w, three.w);
  EXPECT_EQ(one.m, three.m);
  EXPECT_EQ(one.vv, three.vv);
}

// The gradient norm's sum of squares (eight double lanes per piece, the pieces in order) against
// a long double sum of the same squares, on lengths that leave a tail of every size: within
// n x 2^-53 relative, recursive summation's bound for positive terms (each square is exact in
// double; only the additions round). Leaving out the last element's square fails it.
TEST(Backend, SumOfSquaresAgainstLongDouble) {
  Allocator alloc;
  for (const std::int64_t n : {1, 7, 8, 9, 65536, 65543, 300001}) {
    const auto v = random_values(n, static_cast<std::uint32_t>(31 + n));
    Tensor t = Tensor::zeros({n}, alloc);
    long double want = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      t.data()[i] = 3.f * v[static_cast<std::size_t>(i)];
      want += static_cast<long double>(t.data()[i]) * t.data()[i];
    }
    const double got = sum_of_squares(t), bound = static_cast<double>(n) * 0x1p-53 * static_cast<double>(want);
    EXPECT_NEAR(got, static_cast<double>(want), bound) << "n = " << n;
    const long double last = static_cast<long double>(t.data()[n - 1]) * t.data()[n - 1];
    EXPECT_GT(std::fabs(static_cast<double>(want - last) - got), bound) << n;
  }
}

// The CPU's bf16 GEMM (oneDNN) on operands it rounds itself equals float32 sgemm on operands
// rounded first (products of bf16 values are exact in float32; only the summation order
// differs), for every transposition and with alpha and beta.
TEST(Backend, Bf16GemmEqualsSgemmOnRoundedOperands) {
  if (!cpu::onednn_compiled()) GTEST_SKIP() << "built without oneDNN (libdnnl-dev)";
  std::printf("bf16 matmul here: %s (native: %s)\n", cpu::bf16_gemm_implementation(),
              cpu::bf16_gemm_native() ? "yes" : "no");
  if (!cpu::bf16_gemm_available())  // (oneDNN 2.x makes bf16 primitives on AVX-512 CPUs only)
    GTEST_SKIP() << "oneDNN makes no bf16 matmul on this CPU: " << cpu::bf16_gemm_implementation();
  Allocator alloc;
  for (const bool ta : {false, true})
    for (const bool tb : {false, true})
      for (const auto& [alpha, beta] : {std::pair{1.f, 0.f}, {0.5f, 1.f}, {2.f, 0.25f}}) {
        const std::int64_t m = 33, k = 70, n = 45;
        Tensor a = Tensor::zeros(ta ? Shape{k, m} : Shape{m, k}, alloc),
               b = Tensor::zeros(tb ? Shape{n, k} : Shape{k, n}, alloc);
        const auto av = random_values(a.numel(), 61), bv = random_values(b.numel(), 62), cv = random_values(m * n, 63);
        std::copy(av.begin(), av.end(), a.data());
        std::copy(bv.begin(), bv.end(), b.data());
        Tensor c16 = Tensor::zeros({m, n}, alloc), c32 = Tensor::zeros({m, n}, alloc);
        std::copy(cv.begin(), cv.end(), c16.data());
        std::copy(cv.begin(), cv.end(), c32.data());
        cpu::set_bf16_math(true);
        gemm(ta, tb, alpha, a, b, beta, c16);  // rounds a and b itself
        cpu::set_bf16_math(false);
        round_to_precision(a, Precision::bf16);
        round_to_precision(b, Precision::bf16);
        gemm(ta, tb, alpha, a, b, beta, c32);
        double worst = 0;
        for (std::int64_t i = 0; i < c16.numel(); ++i)
          worst = std::max(worst, static_cast<double>(std::fabs(c16.data()[i] - c32.data()[i])));
        EXPECT_LT(worst, 1e-4) << "ta " << ta << " tb " << tb << " alpha " << alpha << " beta " << beta;
        EXPECT_GT(std::fabs(c16.data()[0]), 0.f);
      }
}

// fp16 rounding (the F16C instructions where the CPU has them) against a plain reference over
// every magnitude a half covers and beyond, ties included: bit for bit.
TEST(Backend, Fp16RoundingMatchesAReferenceEverywhere) {
  auto reference = [](float x) -> float {  // nearest half, ties to even, by counting steps
    if (!std::isfinite(x)) return x;
    const double a = std::fabs(static_cast<double>(x));
    if (a >= 65520.0) return std::copysign(INFINITY, x);
    int e = 0;
    std::frexp(a, &e);
    const double step = a < 6.103515625e-05 ? std::ldexp(1.0, -24) : std::ldexp(1.0, e - 11);
    const double q = a / step, f = std::floor(q);
    const double r = (q - f > 0.5 || (q - f == 0.5 && std::fmod(f, 2.0) == 1.0)) ? f + 1 : f;
    return static_cast<float>(std::copysign(r * step, static_cast<double>(x)));
  };
  Allocator alloc;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> mant(1.f, 2.f);
  std::uniform_int_distribution<int> expo(-30, 17);
  const std::int64_t n = 100003;
  Tensor t = Tensor::zeros({n}, alloc);
  std::vector<float> in(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < in.size(); ++i) {
    float v = std::ldexp(mant(rng), expo(rng)) * (i % 2 ? -1.f : 1.f);
    if (i % 7 == 0) v = std::ldexp(1.f + 1.f / 2048 + (i % 14 == 0 ? 1.f / 1024 : 0.f), expo(rng));  // exact ties
    in[i] = v;
  }
  std::copy(in.begin(), in.end(), t.data());
  round_to_precision(t, Precision::fp16);
  std::int64_t wrong = 0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    const float r = reference(in[i]);
    wrong += std::memcmp(&t.data()[i], &r, 4) != 0;
  }
  EXPECT_EQ(wrong, 0);
}

// 16-bit storage (pack_16bit / unpack_16bit): packing then unpacking any float, ties, subnormal
// halves, overflow and infinities included, gives round_to_precision's result bit for bit, in
// half the bytes; exact_in says which dropout scales the formats hold.
TEST(Backend, SixteenBitStorageEqualsRounding) {
  Allocator alloc;
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> mant(1.f, 2.f);
  std::uniform_int_distribution<int> expo(-30, 17);
  const std::int64_t n = 50021;
  std::vector<float> in(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < in.size(); ++i) {
    float v = std::ldexp(mant(rng), expo(rng)) * (i % 2 ? -1.f : 1.f);
    if (i % 7 == 0) v = std::ldexp(1.f + 1.f / 2048 + (i % 14 == 0 ? 1.f / 1024 : 0.f), expo(rng));  // fp16 ties
    if (i % 11 == 0) v = std::ldexp(1.f + 1.f / 256 + (i % 22 == 0 ? 1.f / 128 : 0.f), expo(rng));   // bf16 ties
    in[i] = v;
  }
  in[0] = 0.f, in[1] = -0.f, in[2] = INFINITY, in[3] = -INFINITY, in[4] = 65519.f, in[5] = 65520.f, in[6] = 1e-8f;
  for (const Precision p : {Precision::bf16, Precision::fp16}) {
    Tensor x = Tensor::zeros({n}, alloc), back = Tensor::zeros({n}, alloc);
    Tensor packed = Tensor::zeros({n}, alloc, p == Precision::bf16 ? DType::bf16 : DType::f16);
    EXPECT_EQ(packed.bytes(), static_cast<std::size_t>(n) * 2);
    std::copy(in.begin(), in.end(), x.data());
    pack_16bit(x, packed);
    unpack_16bit(packed, back);
    round_to_precision(x, p);
    std::int64_t wrong = 0;
    for (std::int64_t i = 0; i < n; ++i) wrong += std::memcmp(&x.data()[i], &back.data()[i], 4) != 0;
    EXPECT_EQ(wrong, 0) << to_string(p);
  }
  EXPECT_TRUE(exact_in(1.25f, Precision::bf16));  // dropout(20)'s scale
  EXPECT_TRUE(exact_in(1.25f, Precision::fp16));
  EXPECT_FALSE(exact_in(1.f / 0.9f, Precision::bf16));  // dropout(10)'s
  EXPECT_FALSE(exact_in(1.f / 0.9f, Precision::fp16));
  EXPECT_TRUE(exact_in(1.f / 0.9f, Precision::fp32));
  EXPECT_FALSE(exact_in(65536.f, Precision::fp16));
  EXPECT_TRUE(exact_in(65504.f, Precision::fp16));
  EXPECT_TRUE(exact_in(std::ldexp(1.f, -24), Precision::fp16));
  EXPECT_FALSE(exact_in(std::ldexp(1.f, -25), Precision::fp16));
}

// dropout_forward's column offset: a row's two halves drawn with offsets 0 and half give the
// whole row's mask (what attention's tensor-parallel ranks rely on), and another offset does not.
TEST(Backend, DropoutDrawsABlockOfARowByItsColumnOffset) {
  const std::int64_t rows = 3, cols = 40, half = cols / 2;
  const std::int64_t ids[rows] = {7, 1000, 3};
  const std::uint64_t step_key = 0x99;
  Allocator alloc;
  Tensor x = Tensor::zeros({rows, cols}, alloc), m = Tensor::zeros({rows, cols}, alloc),
         y = Tensor::zeros({rows, cols}, alloc);
  fill(x, 1.f);
  dropout_forward(x, 0.5f, 42, &step_key, ids, 0, m, y);
  for (const std::int64_t off : {std::int64_t{0}, half}) {
    Tensor hx = Tensor::zeros({rows, half}, alloc), hm = Tensor::zeros({rows, half}, alloc),
           hy = Tensor::zeros({rows, half}, alloc);
    fill(hx, 1.f);
    dropout_forward(hx, 0.5f, 42, &step_key, ids, off, hm, hy);
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t j = 0; j < half; ++j) ASSERT_EQ(hm.data()[i * half + j], m.data()[i * cols + off + j]);
  }
  Tensor hx = Tensor::zeros({rows, half}, alloc), hm = Tensor::zeros({rows, half}, alloc),
         hy = Tensor::zeros({rows, half}, alloc);
  fill(hx, 1.f);
  dropout_forward(hx, 0.5f, 42, &step_key, ids, 1, hm, hy);  // (the control: one column off)
  int differ = 0;
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < half; ++j) differ += hm.data()[i * half + j] != m.data()[i * cols + j];
  EXPECT_GT(differ, 5);
}

// GeGLU (Gemma's MLP gate) against PyTorch's gelu(approximate="tanh") written out in double, its
// gradient against central differences of that; SwiGLU's values would fail (the negative control).
TEST(Backend, GegluIsTheTanhGeluGateInDouble) {
  Allocator alloc;
  const std::int64_t rows = 3, f = 5;
  Tensor x = Tensor::zeros({rows, 2 * f}, alloc), y = Tensor::zeros({rows, f}, alloc);
  for (std::int64_t i = 0; i < x.numel(); ++i)
    x.data()[i] = static_cast<float>(std::sin(1.7 * static_cast<double>(i)) * 3);
  const auto gelu = [](double a) {
    return 0.5 * a * (1 + std::tanh(std::sqrt(2 / M_PI) * (a + 0.044715 * a * a * a)));
  };
  geglu_forward(x, y);
  Tensor silu = Tensor::zeros({rows, f}, alloc);
  swiglu_forward(x, silu);
  double worst_silu = 0;
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < f; ++j) {
      const double a = x.data()[i * 2 * f + j], b = x.data()[i * 2 * f + f + j];
      EXPECT_NEAR(y.data()[i * f + j], gelu(a) * b, 1e-5 * (1 + std::fabs(gelu(a) * b))) << i << ", " << j;
      worst_silu = std::max(worst_silu, std::fabs(silu.data()[i * f + j] - gelu(a) * b));
    }
  EXPECT_GT(worst_silu, 1e-2);  // (SwiGLU's values are not these)
  Tensor dy = Tensor::zeros({rows, f}, alloc), dx = Tensor::zeros(x.shape(), alloc);
  for (std::int64_t i = 0; i < dy.numel(); ++i)
    dy.data()[i] = static_cast<float>(std::cos(0.3 * static_cast<double>(i)));
  geglu_backward(x, dy, dx);
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < f; ++j) {
      const double a = x.data()[i * 2 * f + j], b = x.data()[i * 2 * f + f + j], g = dy.data()[i * f + j], h = 1e-5;
      const double slope = (gelu(a + h) - gelu(a - h)) / (2 * h);
      EXPECT_NEAR(dx.data()[i * 2 * f + j], g * b * slope, 1e-4) << i << ", " << j;
      EXPECT_NEAR(dx.data()[i * 2 * f + f + j], g * gelu(a), 1e-5 * (1 + std::fabs(gelu(a)))) << i << ", " << j;
    }
}

TEST(Backend, EveryOperationIsDispatchedToCuda) {
  // Each operation on a cuda tensor reaches the CUDA backend: without CUDA it throws naming itself;
  // with CUDA but no GPU it fails with a CUDA error or a check in backend/cuda, not a crash
  // (tests/gpu compares the results with the CPU backend's).
  std::string why;
  if (!cuda::visible_gpus(&why).empty()) GTEST_SKIP() << "a GPU is visible: tests/gpu runs the operations for real";
  alignas(16) float storage[32] = {0};
  Tensor t = Tensor::wrap(storage, {2, 2}, Device::cuda);
  std::vector<std::string> thrown;
  auto expect = [&](const char* op, auto&& call) {
    try {
      call();
    } catch (const Error& e) {
      const std::string m = e.what();
      if (m.find(std::string("'") + op + "' needs the CUDA backend") != std::string::npos ||
          (cuda::compiled() && (m.find("CUDA") != std::string::npos || m.find("backend/cuda/") != std::string::npos)))
        thrown.push_back(op);
      else
        ADD_FAILURE() << op << ": " << m;
    }
  };
  std::int32_t labels[2] = {0, 1};
  expect("gemm", [&] { gemm(false, false, 1.f, t, t, 0.f, t); });
  expect("add_bias", [&] { add_bias(t, t); });
  expect("accumulate_bias_grad", [&] { accumulate_bias_grad(t, t); });
  expect("activation_forward", [&] { activation_forward(Activation::relu, t, t); });
  expect("activation_backward", [&] { activation_backward(Activation::relu, t, t, t); });
  Tensor t2 = Tensor::wrap(storage + 8, {2, 2}, Device::cuda);
  expect("copy", [&] { copy(t, t2); });
  expect("fill", [&] { fill(t, 0.f); });
  expect("fill_columns", [&] { fill_columns(t, 1, 0.f); });
  expect("scale", [&] { scale(t, 1.f); });
  expect("softmax_cross_entropy", [&] { softmax_cross_entropy(t, labels, t, 1.f, &t); });
  expect("softmax_cross_entropy_backward", [&] { softmax_cross_entropy_backward(t, labels, 0, 1.f, t); });
  Tensor rows2 = Tensor::wrap(storage + 8, {2}, Device::cuda);
  expect("row_max", [&] { row_max(t, rows2); });
  expect("softmax_partial", [&] { softmax_partial(t, rows2, labels, 0, t, t2); });
  expect("softmax_finish", [&] { softmax_finish(t, rows2, t2, t); });
  expect("regression_loss", [&] { regression_loss(RegressionLoss::mae, 1.f, t, storage, t2); });
  expect("regression_loss_backward", [&] { regression_loss_backward(RegressionLoss::mae, 1.f, t, storage, 1.f, t2); });
  expect("absolute_error_sums", [&] { absolute_error_sums(t, storage, rows2); });
  expect("count_correct", [&] { count_correct(t, labels); });
  expect("sgd_update", [&] { sgd_update(t, t, t, t, 0.f, 0.f, false); });
  expect("adam_update", [&] { adam_update(t, t, t, t, t, 0.9f, 0.999f, 1e-8f, 0.f, false); });
  Tensor arg = Tensor::wrap(storage, {4}, Device::cuda);
  expect("im2col", [&] { im2col(t, 1, 2, 2, 1, 1, 0, 4, t); });
  expect("col2im", [&] { col2im(t, 1, 2, 2, 1, 1, 0, 4, t); });
  expect("add_channel_bias", [&] { add_channel_bias(t, t); });
  expect("accumulate_channel_bias_grad", [&] { accumulate_channel_bias_grad(t, t); });
  expect("maxpool_forward", [&] { maxpool_forward(t, 1, 2, 2, 2, 2, t, arg); });
  expect("maxpool_backward", [&] { maxpool_backward(t, arg, t); });
  std::int64_t ids[2] = {0, 1};
  expect("avgpool_forward", [&] { avgpool_forward(t, 2, 2, 2, 2, 2, 2, t); });
  expect("avgpool_backward", [&] { avgpool_backward(t, 2, 2, 2, 2, 2, 2, t); });
  Tensor arg4 = Tensor::wrap(storage + 16, {4}, DType::i32, Device::cuda);
  expect("maxpool3d_forward", [&] { maxpool3d_forward(t, 1, 2, 2, 1, 1, t2, arg4); });
  expect("avgpool3d_forward", [&] { avgpool3d_forward(t, 1, 2, 2, 1, 1, t2); });
  expect("avgpool3d_backward", [&] { avgpool3d_backward(t, 1, 2, 2, 1, 1, t2); });
  expect("shift_volume", [&] { shift_volume(t, 1, 2, 2, 0, 1, 2, 2, t2); });
  expect("copy_planes", [&] { copy_planes(t, 2, 0, t2, 2, 0, 1, 2, false); });
  expect("leaky_relu_forward", [&] { leaky_relu_forward(t, 0.1f, t2); });
  expect("leaky_relu_backward", [&] { leaky_relu_backward(t, t, 0.1f, t2); });
  const std::uint64_t step_key = 7;
  expect("dropout_forward", [&] { dropout_forward(t, 0.5f, 1, &step_key, ids, 0, t, t); });
  expect("multiply", [&] { multiply(t, t, t); });
  expect("sum_of_squares", [&] { sum_of_squares(t); });
  expect("round_to_precision", [&] { round_to_precision(t, Precision::bf16); });
  Tensor half = Tensor::wrap(storage + 8, {2, 2}, DType::bf16, Device::cuda);
  expect("pack_16bit", [&] { pack_16bit(t, half); });
  expect("unpack_16bit", [&] { unpack_16bit(half, t); });
  Tensor limbs = Tensor::wrap(storage + 16, {4, 2}, DType::i64, Device::cuda);
  Tensor flag = Tensor::wrap(storage + 12, {1}, DType::i32, Device::cuda);
  expect("exact_accumulate", [&] { exact_accumulate(t, false, limbs, flag); });
  expect("exact_round", [&] { exact_round(limbs, flag, t); });
  std::vector<double> sums(4);
  std::vector<float> per(2, 1.f);
  expect("add", [&] { add(t, t, t); });
  expect("channel_moments", [&] { channel_moments(t, 2, 1, sums); });
  expect("batchnorm_grad_sums", [&] { batchnorm_grad_sums(t, t, per, per, 1, sums); });
  expect("channel_affine", [&] { channel_affine(t, per, per, 1, t); });
  expect("batchnorm_backward_data", [&] { batchnorm_backward_data(t, t, per, per, per, per, per, 1, t); });
  expect("add_bias_activation", [&] { add_bias_activation(t, t, Activation::relu, t2); });
  Tensor token_ids = Tensor::wrap(storage, {2, 2}, DType::i32, Device::cuda);
  expect("embedding_forward", [&] { embedding_forward(token_ids, t, 0, 2, t2); });
  expect("embedding_backward", [&] { embedding_backward(token_ids, t, 0, 2, t2); });
  expect("layernorm_forward", [&] { layernorm_forward(t, t, Tensor(), 2, 1e-5f, t, t, t2); });
  Tensor none;
  expect("layernorm_backward", [&] { layernorm_backward(t, t, t, t, t, 2, t2, t2, none); });
  expect("rmsnorm_forward", [&] { rmsnorm_forward(t, t, 2, 1e-5f, t, t2); });
  expect("rmsnorm_backward", [&] { rmsnorm_backward(t, t, t, t, 2, t2, t2); });
  Tensor qkv6 = Tensor::wrap(storage, {1, 1, 6}, Device::cuda);
  const std::vector<float> freq(1, 1.f);
  expect("rope_rotate", [&] { rope_rotate(qkv6, 1, 1, freq, 0, false, 1.f); });
  expect("qk_norm_forward", [&] { qk_norm_forward(qkv6, 1, 1, 1e-6f, t2); });
  expect("qk_norm_backward", [&] { qk_norm_backward(qkv6, t, 1, 1, qkv6); });
  expect("swiglu_forward", [&] { swiglu_forward(t, t2); });
  expect("swiglu_backward", [&] { swiglu_backward(t, t, t2); });
  expect("geglu_forward", [&] { geglu_forward(t, t2); });
  expect("geglu_backward", [&] { geglu_backward(t, t, t2); });
  expect("softcap_forward", [&] { softcap_forward(t2, 1.f); });
  expect("softcap_backward", [&] { softcap_backward(t, 1.f, t2); });
  Tensor qkv = Tensor::wrap(storage, {1, 1, 3}, Device::cuda),
         att = Tensor::wrap(storage + 4, {1, 1, 1, 1}, Device::cuda);
  Tensor y = Tensor::wrap(storage + 6, {1, 1, 1}, Device::cuda),
         dqkv = Tensor::wrap(storage + 8, {1, 1, 3}, Device::cuda);
  expect("attention_probs", [&] { attention_probs(qkv, 1, att); });
  expect("attention_values", [&] { attention_values(att, qkv, 1, y); });
  expect("attention_values_backward", [&] { attention_values_backward(att, qkv, y, 1, att, dqkv); });
  expect("attention_probs_backward", [&] { attention_probs_backward(att, att, qkv, 1, Precision::fp32, dqkv); });
  expect("document_numbers", [&] { document_numbers(token_ids, 0, t2); });
  expect("flash_attention_forward", [&] { flash_attention_forward(qkv, 1, 1, none, {}, y, att); });
  Tensor kv = Tensor::wrap(storage, {1, 1, 2}, Device::cuda);
  expect("flash_attention_decode", [&] { flash_attention_decode(y, kv, 1, 1, none, {}, y, att); });
  expect("flash_attention_backward", [&] { flash_attention_backward(qkv, y, att, y, 1, 1, none, {}, dqkv); });
  EXPECT_EQ(thrown, backend_operations()) << "every backend operation must have a CUDA entry point";
}

// The windows that cover an input position, as the CUDA average-pooling backward walks them
// (backend/pool_geometry.hpp): the same set as the whole-window scan, for strides, overlaps and
// a global pooling.
TEST(PoolGeometry, CoveringWindowsMatchAFullScan) {
  for (std::int64_t k : {1, 2, 3, 7})
    for (std::int64_t s : {1, 2, 3, 7})
      for (std::int64_t n : {7, 8, 12}) {
        if (k > n) continue;
        const std::int64_t out = (n - k) / s + 1;
        for (std::int64_t r = 0; r < n; ++r) {
          std::int64_t lo = out, hi = -1;  // the brute force: every output whose window holds r
          for (std::int64_t i = 0; i < out; ++i)
            if (i * s <= r && r <= i * s + k - 1) lo = std::min(lo, i), hi = std::max(hi, i);
          const auto w = backend::covering_windows(r, k, s, out);
          if (hi < 0) {
            EXPECT_GT(w.lo, w.hi) << "k=" << k << " s=" << s << " n=" << n << " r=" << r;
          } else {
            EXPECT_EQ(w.lo, lo) << "k=" << k << " s=" << s << " n=" << n << " r=" << r;
            EXPECT_EQ(w.hi, hi) << "k=" << k << " s=" << s << " n=" << n << " r=" << r;
          }
        }
      }
  const auto global = backend::covering_windows(5, 12, 12, 1);  // global pooling: one window
  EXPECT_EQ(global.lo, 0);
  EXPECT_EQ(global.hi, 0);
}

// A CPU tensor's checkpoint read is the tensor's own memory: no copy, nothing pinned.
TEST(HostBuffer, CpuTensorsAreReadInPlace) {
  Allocator alloc;
  Tensor t = Tensor::zeros({64}, alloc);
  HostBuffer buf;
  EXPECT_EQ(buf.read(t), t.data());
  EXPECT_EQ(buf.capacity(), 0u);
  EXPECT_FALSE(buf.pinned());
}

// The CUDA column sums' geometry (bias and layer-norm weight gradients): every row in exactly one
// non-empty chunk, in order; enough blocks for the GPU on tall inputs; few rows stay one chunk.
TEST(ColumnSums, ChunksCoverEveryRowOnceAndFillTheGpu) {
  for (const std::int64_t rows : {0, 1, 63, 64, 65, 1000, 8192, 16384, 65536, 1 << 20})
    for (const std::int64_t cols : {1, 31, 32, 33, 384, 768, 50304})
      for (const int sms : {1, 132}) {
        const ColumnSumPlan p = plan_column_sums(rows, cols, sms);
        const std::string at = std::to_string(rows) + "x" + std::to_string(cols) + " on " + std::to_string(sms);
        EXPECT_GE(p.column_blocks * 32, cols) << at;
        EXPECT_LT((p.column_blocks - 1) * 32, cols) << at;
        ASSERT_GE(p.chunks, 1) << at;
        EXPECT_LE(p.chunks, 1024) << at;
        if (rows == 0) continue;  // (the kernels return before launching)
        std::int64_t next = 0;
        for (std::int64_t c = 0; c < p.chunks; ++c) {
          ASSERT_EQ(p.chunk_begin(c), next) << at << " chunk " << c;
          ASSERT_GT(p.chunk_end(c), p.chunk_begin(c)) << at << " chunk " << c << " is empty";
          next = p.chunk_end(c);
        }
        EXPECT_EQ(next, rows) << at;
        if (rows >= 64 * 4 * sms) {  // tall enough: at least 4 blocks per SM
          EXPECT_GE(p.column_blocks * p.chunks, 4 * sms) << at;
        }
        if (rows < 128) {
          EXPECT_EQ(p.chunks, 1) << at;
        }
      }
  // The GPT deck's layer norms on an H200: 64 x 256 rows of 384 columns, 12 column blocks alone.
  const ColumnSumPlan gpt = plan_column_sums(64 * 256, 384, 132);
  EXPECT_GE(gpt.column_blocks * gpt.chunks, 4 * 132);
  EXPECT_GE(gpt.rows_per_chunk, 64);
}

TEST(Limits, SizesBeyondThe32BitLibrariesAreOneClearError) {
  EXPECT_EQ(backend::checked_int(2147483647, "x"), 2147483647);
  try {
    backend::checked_int(std::int64_t{3} << 30, "gemm: rows of the product");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::bad_input);
    EXPECT_NE(std::string(e.what()).find("gemm: rows of the product is 3221225472, beyond the 32-bit limit"),
              std::string::npos)
        << e.what();
  }
  // Attention's batched GEMMs: a 50 k vocabulary's T x T scores are fine, a leading dimension past
  // 2^31 is one clear error naming it.
  const BatchedGemmDims d = batched_gemm_dims(1024, 64, 1024, 3 * 768, 3 * 768, 1024, 8 * 12);
  EXPECT_EQ(d.lda, 2304);
  EXPECT_EQ(d.batch, 96);
  try {
    batched_gemm_dims(1024, 64, 1024, std::int64_t{1} << 31, 64, 64, 1);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("batched gemm: leading dimension of A is 2147483648"), std::string::npos)
        << e.what();
  }
}
