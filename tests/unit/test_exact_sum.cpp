// The order-independent sums of [run] reproducible = layout (backend/exact_sum.hpp and the
// backend operations exact_accumulate / exact_round): exact for what they keep, the same limbs in
// any order of the additions (where float32 sums differ), and over "ranks" with the limbs summed
// as int64; bits below 2^-64 dropped toward zero; magnitudes from 2^24 on and non-finite values
// flagged.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "hpctrain/backend/exact_sum.hpp"
#include "hpctrain/backend/ops.hpp"

using namespace hpctrain;

TEST(ExactSum, KeepsWhatItHoldsExactly) {
  std::int64_t lo = 0, hi = 0;
  ASSERT_TRUE(exact::add(1.5f, lo, hi));
  ASSERT_TRUE(exact::add(-0.25f, lo, hi));
  ASSERT_TRUE(exact::add(std::ldexp(1.f, -60), lo, hi));
  EXPECT_EQ(exact::value_double(lo, hi), 1.25 + std::ldexp(1.0, -60));
  // 2^-64 is the unit; what is below it is dropped, toward zero, for either sign.
  std::int64_t a = 0, b = 0;
  ASSERT_TRUE(exact::add(std::ldexp(1.f, -64), a, b));
  ASSERT_TRUE(exact::add(std::ldexp(1.5f, -64), a, b));   // (1 unit of it)
  ASSERT_TRUE(exact::add(-std::ldexp(1.f, -65), a, b));   // (nothing)
  ASSERT_TRUE(exact::add(-std::ldexp(1.5f, -63), a, b));  // (-3 units)
  EXPECT_EQ(a, exact::kLoMask);                           // -1 unit: lo = 2^56 - 1, hi = -1
  EXPECT_EQ(b, -1);
  // The largest kept magnitude and the first refused ones.
  std::int64_t c = 0, d = 0;
  EXPECT_TRUE(exact::add(-std::nextafter(16777216.f, 0.f), c, d));
  EXPECT_FALSE(exact::add(16777216.f, c, d));
  EXPECT_FALSE(exact::add(NAN, c, d));
  EXPECT_FALSE(exact::add(-INFINITY, c, d));
  EXPECT_EQ(exact::value_double(c, d), -static_cast<double>(std::nextafter(16777216.f, 0.f)));
}

TEST(ExactSum, TheSameLimbsInAnyOrderWhereFloatSumsDiffer) {
  std::mt19937 rng(7);
  std::vector<float> v(4000);
  for (std::size_t i = 0; i < v.size(); ++i)
    v[i] = std::ldexp(std::uniform_real_distribution<float>(-1, 1)(rng), static_cast<int>(i % 90) - 70);
  std::int64_t lo1 = 0, hi1 = 0, lo2 = 0, hi2 = 0;
  float f1 = 0, f2 = 0;
  for (float x : v) {
    ASSERT_TRUE(exact::add(x, lo1, hi1));
    f1 += x;
  }
  std::shuffle(v.begin(), v.end(), rng);
  for (float x : v) {
    ASSERT_TRUE(exact::add(x, lo2, hi2));
    f2 += x;
  }
  EXPECT_NE(f1, f2);  // (the control: float32 sums depend on the order)
  EXPECT_EQ(lo1, lo2);
  EXPECT_EQ(hi1, hi2);
  // Three "ranks" summed apart, then their limbs added as int64: the same limbs.
  std::int64_t lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
  for (std::size_t i = 0; i < v.size(); ++i) ASSERT_TRUE(exact::add(v[i], lo[i % 3], hi[i % 3]));
  std::int64_t l = lo[0] + lo[1] + lo[2], h = hi[0] + hi[1] + hi[2];
  exact::normalize(l, h);
  EXPECT_EQ(l, lo1);
  EXPECT_EQ(h, hi1);
  // The sum, against a long double sum of the same floats (they are exact there for this range).
  long double want = 0;
  for (float x : v) want += static_cast<long double>(std::trunc(std::ldexp(static_cast<double>(x), 64))) / 0x1p64L;
  EXPECT_NEAR(exact::value_double(lo1, hi1), static_cast<double>(want), 1e-9);  // (double rounding at 2^20)
  // A double's limbs (a checkpoint's interval sums) round-trip.
  std::int64_t dl = 0, dh = 0;
  exact::from_double(-12345.6789, dl, dh);
  EXPECT_NEAR(exact::value_double(dl, dh), -12345.6789, 1e-12);
}

TEST(ExactSum, BackendOperationsSumAndFlag) {
  Allocator host(Device::cpu);
  Tensor x = Tensor::zeros({3}, host), acc = Tensor::zeros({3, 2}, host, DType::i64);
  Tensor flag = Tensor::zeros({1}, host, DType::i32), y = Tensor::zeros({3}, host);
  x.data()[0] = 0.1f, x.data()[1] = -2.f, x.data()[2] = 1e-3f;
  exact_accumulate(x, false, acc, flag);  // (then overwritten: a step's first chunk)
  exact_accumulate(x, true, acc, flag);
  exact_accumulate(x, false, acc, flag);
  exact_round(acc, flag, y);
  EXPECT_EQ(y.data()[0], 0.2f);
  EXPECT_EQ(y.data()[1], -4.f);
  EXPECT_EQ(y.data()[2], 2e-3f);
  EXPECT_EQ(*flag.data_as<std::int32_t>(), 0);
  x.data()[1] = 3e7f;  // refused: flagged, and the rounded sums are NaN
  exact_accumulate(x, false, acc, flag);
  exact_round(acc, flag, y);
  EXPECT_EQ(*flag.data_as<std::int32_t>(), 1);
  EXPECT_TRUE(std::isnan(y.data()[0]) && std::isnan(y.data()[2]));
}
