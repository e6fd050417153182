// core/range's arithmetic against a per-element reference, and checkpoint/state_writes: which
// optimizer state each rank writes into a checkpoint (every owned element by exactly one of its
// owners, from its own state; nothing by a rank that does not hold it).
#include <gtest/gtest.h>

#include <random>

#include "hpctrain/core/error.hpp"
#include "hpctrain/io/checkpoint_file.hpp"
#include "hpctrain/checkpoint/state_writes.hpp"

using namespace hpctrain;

namespace {
Ranges random_ranges(std::mt19937& rng, std::int64_t n) {
  Ranges r;
  for (std::int64_t at = 0; at < n;) {
    const std::int64_t gap = rng() % 5, len = 1 + rng() % 7;
    if (at + gap >= n) break;
    r.push_back({at + gap, std::min(n, at + gap + len)});
    at = r.back().end;
  }
  return r;
}
std::vector<int> mask(const Ranges& r, std::int64_t n) {
  std::vector<int> m(static_cast<std::size_t>(n), 0);
  for (const auto& [b, e] : r)
    for (std::int64_t i = b; i < e; ++i) m[static_cast<std::size_t>(i)] = 1;
  return m;
}
}  // namespace

TEST(Ranges, IntersectAndSubtractMatchElementwise) {
  std::mt19937 rng(7);
  const std::int64_t n = 200;
  for (int trial = 0; trial < 50; ++trial) {
    const Ranges a = random_ranges(rng, n), b = random_ranges(rng, n);
    const auto ma = mask(a, n), mb = mask(b, n), mi = mask(intersect(a, b), n), ms = mask(subtract(a, b), n);
    for (std::int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(mi[static_cast<std::size_t>(i)], ma[static_cast<std::size_t>(i)] & mb[static_cast<std::size_t>(i)]);
      ASSERT_EQ(ms[static_cast<std::size_t>(i)], ma[static_cast<std::size_t>(i)] & !mb[static_cast<std::size_t>(i)]);
    }
    EXPECT_EQ(total(intersect(a, b)) + total(subtract(a, b)), total(a));
  }
}

TEST(StateWrites, EveryOwnedElementIsWrittenOnceByAnOwner) {
  // Parameters of a small model (a matrix, a bias, a 4-D kernel, a large matrix); owners: shards
  // of every size, with a tensor nobody owns (a frozen layer), or everyone owning everything.
  const std::vector<std::pair<std::int64_t, Shape>> params = {
      {0, {12, 5}}, {60, {12}}, {72, {4, 3, 3, 3}}, {180, {70, 3}}};
  const std::int64_t n = 390;
  std::mt19937 rng(3);
  for (int d = 1; d <= 5; ++d)
    for (const bool sharded : {true, false}) {
      std::vector<Ranges> owned(static_cast<std::size_t>(d));
      for (std::int64_t i = 0; i < n; ++i) {
        if (i >= 60 && i < 72) continue;  // the bias (60-71) is frozen: no owner
        const int owner = static_cast<int>(rng() % static_cast<unsigned>(d));
        for (int q = 0; q < d; ++q) {
          if (sharded && q != owner) continue;
          Ranges& o = owned[static_cast<std::size_t>(q)];
          if (!o.empty() && o.back().end == i)
            o.back().end = i + 1;
          else
            o.push_back({i, i + 1});
          if (sharded) break;
        }
      }
      std::vector<int> written(static_cast<std::size_t>(n), 0);
      for (int me = 0; me < d; ++me) {
        const Ranges w = plan_state_writes(params, owned, me);
        EXPECT_EQ(total(intersect(w, owned[static_cast<std::size_t>(me)])), total(w))
            << "a rank writes only what it holds";
        if (sharded) {
          EXPECT_EQ(w, merged(owned[static_cast<std::size_t>(me)])) << "one owner each: it writes its shard";
        } else {
          Ranges rows;  // everyone owns everything: each writes its writer rows, as the parameters
          for (const auto& [offset, shape] : params) {
            const Range r = writer_elements(shape, me, d);
            if (!r.empty()) rows.push_back({offset + r.begin, offset + r.end});
          }
          EXPECT_EQ(w, merged(intersect(rows, owned[static_cast<std::size_t>(me)])));
        }
        for (const Range& r : w)
          for (std::int64_t i = r.begin; i < r.end; ++i) ++written[static_cast<std::size_t>(i)];
      }
      for (std::int64_t i = 0; i < n; ++i)
        EXPECT_EQ(written[static_cast<std::size_t>(i)], (i >= 60 && i < 72) ? 0 : 1) << "d " << d << " " << i;
    }
}

TEST(StateWrites, AnOwnerWritesItsRowsElseTheLowestOwnerWrites) {
  // One 4 x 5 tensor, two writers: rows 0-1 (elements 0-9) are writer 0's, rows 2-3 writer 1's.
  const std::vector<std::pair<std::int64_t, Shape>> params = {{0, {4, 5}}};
  // Both own 10-11, which lie in writer 1's rows: writer 1 writes them.
  const std::vector<Ranges> overlap = {{{0, 12}}, {{0, 20}}};
  EXPECT_EQ(plan_state_writes(params, overlap, 0), (Ranges{{0, 10}}));
  EXPECT_EQ(plan_state_writes(params, overlap, 1), (Ranges{{10, 20}}));
  // 0-9: only rank 1 owns them (rank 0's rows); 10-14: only rank 0; 15-19: both, in rank 1's rows.
  const std::vector<Ranges> crossed = {{{10, 20}}, {{0, 10}, {15, 20}}};
  EXPECT_EQ(plan_state_writes(params, crossed, 0), (Ranges{{10, 15}}));
  EXPECT_EQ(plan_state_writes(params, crossed, 1), (Ranges{{0, 10}, {15, 20}}));
  // Three ranks (writer 0: rows 0-1, writer 1: rows 2-3, writer 2: none): 0-4 lie in writer 0's
  // rows but ranks 1 and 2 own them, so the lower, 1, writes them; 10-19 only rank 0 owns; 5-9
  // nobody (not written).
  const std::vector<Ranges> three = {{{10, 20}}, {{0, 5}}, {{0, 5}}};
  EXPECT_EQ(plan_state_writes(params, three, 0), (Ranges{{10, 20}}));
  EXPECT_EQ(plan_state_writes(params, three, 1), (Ranges{{0, 5}}));
  EXPECT_TRUE(plan_state_writes(params, three, 2).empty());
}

TEST(StateWrites, PositionInThePackedState) {
  const std::vector<DecayRun> runs{{{30, 40}, true, 0}, {{40, 50}, false, 10}, {{90, 100}, true, 20}};
  EXPECT_EQ(state_position(runs, 30), 0);
  EXPECT_EQ(state_position(runs, 45), 15);
  EXPECT_EQ(state_position(runs, 99), 29);
  EXPECT_THROW(state_position(runs, 50), Error);  // not owned
  EXPECT_THROW(state_position(runs, 10), Error);
}
