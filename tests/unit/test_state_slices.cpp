// train/state_slices: range arithmetic against a per-element reference, and the plan by which
// checkpoint writers gather the optimizer state they write (every written element from exactly
// one rank that owns it, what one rank gives another is what that one takes from it).
#include <gtest/gtest.h>

#include <random>

#include "hpctrain/io/checkpoint_file.hpp"
#include "hpctrain/train/state_slices.hpp"

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

TEST(StateSlices, IntersectAndSubtractMatchElementwise) {
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

TEST(StateSlices, EveryWrittenElementComesFromOneOwner) {
  // Parameters of a small model (a matrix, a bias, a 4-D kernel, a large matrix); owners: shards
  // of every size, with a gap nobody owns (a frozen layer), or everyone owning everything.
  const std::vector<std::pair<std::int64_t, Shape>> params = {
      {0, {12, 5}}, {60, {12}}, {72, {4, 3, 3, 3}}, {180, {70, 3}}};
  const std::int64_t n = 390;
  std::mt19937 rng(3);
  for (int d = 1; d <= 5; ++d)
    for (const bool sharded : {true, false}) {
      std::vector<Ranges> owned(static_cast<std::size_t>(d));
      if (sharded) {
        for (std::int64_t i = 0; i < n; ++i)
          if (i < 60 || i >= 72) {  // the bias (60-71) is frozen: no owner
            const std::size_t q = (i / 9 + rng() % 2) % static_cast<std::size_t>(d);
            if (!owned[q].empty() && owned[q].back().end == i)
              owned[q].back().end = i + 1;
            else
              owned[q].push_back({i, i + 1});
          }
      } else {
        for (auto& o : owned) o = {{0, n}};
      }
      std::vector<int> written(static_cast<std::size_t>(n), 0);
      std::vector<SlicePlan> plans;
      for (int me = 0; me < d; ++me) plans.push_back(plan_slices(params, owned, me));
      for (int me = 0; me < d; ++me) {
        const SlicePlan& p = plans[static_cast<std::size_t>(me)];
        ASSERT_EQ(p.writes.size(), params.size());
        for (std::size_t i = 0; i < params.size(); ++i) {  // the writer's rows of each parameter
          const Range w = writer_elements(params[i].second, me, d);
          EXPECT_EQ(p.writes[i], (Range{params[i].first + w.begin, params[i].first + w.end}));
        }
        for (const auto& [b, e] : p.writes)
          for (std::int64_t i = b; i < e; ++i) ++written[static_cast<std::size_t>(i)];
        std::vector<int> taken(static_cast<std::size_t>(n), 0);
        for (int q = 0; q < d; ++q) {
          const Ranges& t = p.take[static_cast<std::size_t>(q)];
          EXPECT_EQ(total(intersect(t, owned[static_cast<std::size_t>(q)])), total(t)) << "taken from a non-owner";
          if (q != me) {
            EXPECT_EQ(plans[static_cast<std::size_t>(q)].give[static_cast<std::size_t>(me)], t);
          }
          if (!sharded && q != me) {
            EXPECT_TRUE(t.empty()) << "everyone owns everything: no messages";
          }
          for (const auto& [b, e] : t)
            for (std::int64_t i = b; i < e; ++i) ++taken[static_cast<std::size_t>(i)];
        }
        for (const auto& [b, e] : p.writes)
          for (std::int64_t i = b; i < e; ++i)
            EXPECT_EQ(taken[static_cast<std::size_t>(i)], (sharded && i >= 60 && i < 72) ? 0 : 1) << i;
      }
      for (std::int64_t i = 0; i < n; ++i) EXPECT_EQ(written[static_cast<std::size_t>(i)], 1) << "d " << d << " " << i;
    }
}
