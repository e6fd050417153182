// Typed tensors: an i32 tensor's elements, views counted in its own elements, its bytes, reads as
// another type refused with an internal error naming both types, and grow() making a new buffer
// when the type changes.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include "hpctrain/core/error.hpp"
#include "hpctrain/tensor/tensor.hpp"

using namespace hpctrain;

TEST(Tensor, TypedElementsViewsAndWrongReads) {
  Allocator alloc;
  Tensor ids = Tensor::zeros({2, 3}, alloc, DType::i32);
  EXPECT_EQ(ids.dtype(), DType::i32);
  EXPECT_EQ(ids.bytes(), 24u);
  EXPECT_EQ(alloc.in_use(), 24u);
  for (std::int32_t i = 0; i < 6; ++i) ids.data_as<std::int32_t>()[i] = 10 + i;
  const Tensor row = ids.view(3, {3});
  EXPECT_EQ(row.dtype(), DType::i32);
  EXPECT_EQ(row.data_as<std::int32_t>()[0], 13);  // 3 elements in, not 3 floats' worth of bytes
  try {
    (void)ids.data();  // f32 elements of an i32 tensor
    FAIL() << "read as f32";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("i32 tensor [2, 3] read as f32"), std::string::npos) << e.what();
  }
  Tensor f = Tensor::zeros({4}, alloc);
  EXPECT_EQ(f.dtype(), DType::f32);
  EXPECT_THROW((void)f.data_as<std::int32_t>(), Error);
  Tensor buf;
  Tensor a = grow(buf, {4}, alloc);
  Tensor b = grow(buf, {4}, alloc, DType::i32);  // same size, another type: a new buffer
  EXPECT_EQ(b.dtype(), DType::i32);
  EXPECT_NE(b.raw(), a.raw());
}

// A tensor may outlive the allocator that made it (the gradient checker's layer once did): its
// deleter holds the allocator's counts, not a reference to the allocator. With a reference, the
// late free writes the count into the dead allocator's memory: under the sanitizers (CI's unit
// run) a heap-use-after-free; in a plain build, the bytes the next allocation of that size reuses
// (the sentinel below, on glibc) change.
TEST(Tensor, MayOutliveItsAllocator) {
  Tensor t;
  {
    auto alloc = std::make_unique<Allocator>();
    t = Tensor::zeros({1000}, *alloc);
    EXPECT_EQ(alloc->in_use(), 4000u);
    Tensor u = Tensor::zeros({10}, *alloc);
    EXPECT_EQ(alloc->peak(), 4040u);
  }
  auto sentinel = std::make_unique<std::array<unsigned char, sizeof(Allocator)>>();
  sentinel->fill(0xab);
  t.data()[999] = 1.f;  // still its own memory
  t = Tensor();         // freed now, its allocator gone
  for (unsigned char b : *sentinel) ASSERT_EQ(b, 0xab) << "freeing the tensor wrote into freed memory";
}
