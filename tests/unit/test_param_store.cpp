// model/param_store: placements (replicated, sharded, sharded part by part: fused q|k|v with
// grouped-query sizes, fused gate|up) against blocks written out by hand, their errors, and the
// store's layout queries (layers, tied copies, frozen ranges) on a store built by hand.
#include <gtest/gtest.h>

#include "hpctrain/core/error.hpp"
#include "hpctrain/model/param_store.hpp"

using namespace hpctrain;

namespace {
// Every rank's blocks of `p` over `n` ranks cover the axis once, in blocks of equal total size.
void expect_partition(const Placement& p, const Shape& shape, int n) {
  const std::int64_t len = shape[static_cast<std::size_t>(p.axis)];
  std::vector<int> seen(static_cast<std::size_t>(len), 0);
  for (int c = 0; c < n; ++c) {
    const Ranges b = local_blocks(p, shape, c, n, "t");
    EXPECT_EQ(total(b) * n, len);
    for (const Range& r : b)
      for (std::int64_t i = r.begin; i < r.end; ++i) ++seen[static_cast<std::size_t>(i)];
  }
  for (int s : seen) EXPECT_EQ(s, 1);
}
}  // namespace

TEST(Placement, ReplicatedHoldsEverything) {
  EXPECT_EQ(local_blocks(Placement::replicated(), {6, 4}, 1, 2, "t"), (Ranges{{0, 6}}));
  EXPECT_EQ(local_shape(Placement::replicated(), {6, 4}, 1, 2, "t"), (Shape{6, 4}));
}

TEST(Placement, ShardedCutsOneAxisIntoEqualBlocks) {
  const Placement rows = Placement::sharded(0), cols = Placement::sharded(1);
  EXPECT_EQ(local_blocks(rows, {8, 4}, 0, 2, "t"), (Ranges{{0, 4}}));
  EXPECT_EQ(local_blocks(rows, {8, 4}, 1, 2, "t"), (Ranges{{4, 8}}));
  EXPECT_EQ(local_blocks(cols, {8, 4}, 3, 4, "t"), (Ranges{{3, 4}}));
  EXPECT_EQ(local_shape(cols, {8, 4}, 3, 4, "t"), (Shape{8, 1}));
  expect_partition(rows, {8, 4}, 4);
}

TEST(Placement, FusedPartsAreCutOneByOne) {
  // q|k|v of 4 query heads and 2 key/value heads of size 3 (grouped-query): 12 | 6 | 6 rows.
  // Over 2 ranks each holds 2 query heads and 1 key/value head: rows [0,6) [12,15) [18,21) and
  // [6,12) [15,18) [21,24). A plain cut would give rank 0 all of q.
  const Placement qkv = Placement::sharded(0, {12, 6, 6});
  EXPECT_EQ(local_blocks(qkv, {24, 5}, 0, 2, "qkv"), (Ranges{{0, 6}, {12, 15}, {18, 21}}));
  EXPECT_EQ(local_blocks(qkv, {24, 5}, 1, 2, "qkv"), (Ranges{{6, 12}, {15, 18}, {21, 24}}));
  EXPECT_EQ(local_shape(qkv, {24, 5}, 1, 2, "qkv"), (Shape{12, 5}));
  expect_partition(qkv, {24, 5}, 2);
  // gate|up of hidden 8 as [C, 2F] cut along the columns: each rank half of gate and half of up.
  const Placement gate_up = Placement::sharded(1, {8, 8});
  EXPECT_EQ(local_blocks(gate_up, {4, 16}, 1, 4, "w"), (Ranges{{2, 4}, {10, 12}}));
  expect_partition(gate_up, {4, 16}, 4);
}

TEST(Placement, ErrorsNameTheTensorAndTheNumbers) {
  auto message = [](const Placement& p, const Shape& s, int n) {
    try {
      local_blocks(p, s, 0, n, "05_attention/qkv");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message(Placement::sharded(0, {12, 6, 6}), {24, 5}, 4).find("05_attention/qkv: a part of 6"),
            std::string::npos);  // 6 rows of k over 4 ranks
  EXPECT_NE(message(Placement::sharded(0, {12, 6}), {24, 5}, 2).find("must add up to 24"), std::string::npos);
  EXPECT_NE(message(Placement::sharded(2), {24, 5}, 2).find("axis 2"), std::string::npos);
  EXPECT_NE(message(Placement::sharded(0), {6, 5}, 4).find("does not divide into 4"), std::string::npos);
}

TEST(ParamStore, LayoutLayersCopiesAndFrozenRanges) {
  ParamStore s;
  ParamInfo w{"dense.0.weight", 0, 0, {3, 2}, {3, 2}, Init::zeros, 1, 1, 0.02f, -1, {}, {}, 0, ""};
  ParamInfo b{"dense.0.bias", 0, 6, {3}, {3}, Init::zeros, 1, 1, 0.02f, -1, {}, {}, 0, ""};
  ParamInfo e{"embedding.0.weight", 0, 9, {4, 2}, {4, 2}, Init::zeros, 1, 1, 0.02f, -1, {}, {}, 1, ""};
  s.add_layer();
  EXPECT_EQ(s.add(w), 0);
  EXPECT_EQ(s.add(b), 6);
  s.add_layer();  // (no parameters: an activation)
  s.add_layer();
  EXPECT_EQ(s.add_copy(e), 9);  // a tied weight held by an earlier stage
  Allocator alloc;
  s.allocate(alloc);
  EXPECT_EQ(s.size(), 17);
  EXPECT_EQ(s.params().numel(), 17);
  EXPECT_EQ(s.grads().numel(), 17);
  EXPECT_EQ(s.layer(0), (Range{0, 9}));
  EXPECT_EQ(s.layer(1), (Range{0, 0}));
  EXPECT_EQ(s.layer(2), (Range{9, 17}));
  EXPECT_EQ(s.copies(), (Ranges{{9, 17}}));
  EXPECT_EQ(s.tensors()[2].global_offset, 9);  // the copy keeps the original's name and initialization key
  s.set_frozen({true, true, false});
  EXPECT_EQ(s.frozen_ranges(), (Ranges{{0, 9}}));  // (the empty layer adds none)
  EXPECT_TRUE(s.frozen(1));
  EXPECT_FALSE(s.frozen(2));
  const auto buckets = s.buckets(1);
  ASSERT_EQ(buckets.size(), 1u);  // the frozen layers are in no bucket
  EXPECT_EQ(static_cast<const Range&>(buckets[0]), (Range{9, 17}));
  EXPECT_THROW(s.add(w), Error);  // the layout is fixed once allocated
}

TEST(ParamStore, WholeTensorOwnersBalanceBySizeAndSkipFrozenTensors) {
  ParamStore s;
  const std::vector<Shape> shapes{{10, 10}, {10}, {30, 2}, {5}, {40}};  // 100, 10, 60, 5, 40 elements
  std::int64_t global = 0;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    s.add_layer();
    s.add({"dense." + std::to_string(i) + ".weight",
           0,
           global,
           shapes[i],
           shapes[i],
           Init::zeros,
           1,
           1,
           0.02f,
           -1,
           {},
           {},
           i,
           ""});
    global += numel(shapes[i]);
  }
  Allocator alloc;
  s.allocate(alloc);
  s.set_frozen({false, false, false, true, false});  // the 5-element tensor trains not: nobody owns it
  const auto owners = s.tensor_owners(s.buckets(1), 2);
  // Largest first, each to the least loaded rank (ties: the lowest): 100 -> 0, 60 -> 1, 40 -> 1
  // (60 < 100), then 10 -> 0 (100 = 100: the lowest). Listed in buffer order.
  ASSERT_EQ(owners.size(), 4u);
  EXPECT_EQ(owners[0], (std::pair<Range, int>{{0, 100}, 0}));
  EXPECT_EQ(owners[1], (std::pair<Range, int>{{100, 110}, 0}));
  EXPECT_EQ(owners[2], (std::pair<Range, int>{{110, 170}, 1}));
  EXPECT_EQ(owners[3], (std::pair<Range, int>{{175, 215}, 1}));
  const auto one = s.tensor_owners(s.buckets(1), 1);
  for (const auto& [r, owner] : one) EXPECT_EQ(owner, 0);
}
