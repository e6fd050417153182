// Which optimizer state each rank writes into a checkpoint (checkpoint/state_writes.hpp).
#include "hpctrain/checkpoint/state_writes.hpp"

#include <algorithm>

#include "hpctrain/core/error.hpp"
#include "hpctrain/io/checkpoint_file.hpp"

namespace hpctrain {

namespace {
// Writer w's rows of every parameter (io/checkpoint_file.hpp writer_elements), sorted.
Ranges rows_of(const std::vector<std::pair<std::int64_t, Shape>>& params, int w, int writers) {
  Ranges out;
  for (const auto& [offset, shape] : params) {
    const Range r = writer_elements(shape, w, writers);
    out.push_back({offset + r.begin, offset + r.end});
  }
  return sorted_nonempty(out);
}

Ranges unite(const Ranges& a, const Ranges& b) {
  Ranges out(a);
  out.insert(out.end(), b.begin(), b.end());
  return merged(std::move(out));
}
}  // namespace

Ranges plan_state_writes(const std::vector<std::pair<std::int64_t, Shape>>& params, const std::vector<Ranges>& owned,
                         int me) {
  const int d = static_cast<int>(owned.size());
  Ranges mine, covered;  // what the owners write in their own rows (writer rows never overlap)
  for (int q = 0; q < d; ++q) {
    const Ranges own_rows = intersect(owned[static_cast<std::size_t>(q)], rows_of(params, q, d));
    if (q == me) mine = own_rows;
    covered = unite(covered, own_rows);
  }
  Ranges rest = subtract(owned[static_cast<std::size_t>(me)], covered);  // the lowest owner writes the rest
  for (int q = 0; q < me; ++q) rest = subtract(rest, owned[static_cast<std::size_t>(q)]);
  return unite(mine, rest);
}

std::vector<Ranges> gather_owned(Communicator& dp, const Optimizer& opt) {
  Ranges mine;
  for (const DecayRun& r : opt.runs())
    if (!r.empty()) mine.push_back(r);
  std::sort(mine.begin(), mine.end());
  const int d = dp.size();
  std::int64_t n = static_cast<std::int64_t>(mine.size()), most = 0;
  dp.allreduce(&n, &most, 1, DType::i64, ReduceOp::max);
  std::vector<std::int64_t> flat(static_cast<std::size_t>(2 * most), -1), all(flat.size() * d);
  for (std::size_t i = 0; i < mine.size(); ++i) {
    flat[2 * i] = mine[i].begin;
    flat[2 * i + 1] = mine[i].end;
  }
  if (most > 0) dp.allgather(flat.data(), all.data(), flat.size(), DType::i64);
  std::vector<Ranges> owned(static_cast<std::size_t>(d));
  for (int q = 0; q < d; ++q)
    for (std::int64_t i = 0; i < most; ++i) {
      const std::int64_t* p = all.data() + (static_cast<std::int64_t>(q) * most + i) * 2;
      if (p[0] >= 0) owned[static_cast<std::size_t>(q)].push_back({p[0], p[1]});
    }
  return owned;
}

std::int64_t state_position(const std::vector<DecayRun>& runs, std::int64_t e) {
  // (The runs are sorted by their first element: own_runs cuts them in buffer order.)
  auto it =
      std::upper_bound(runs.begin(), runs.end(), e, [](std::int64_t v, const DecayRun& r) { return v < r.begin; });
  HPCT_CHECK(it != runs.begin() && e < std::prev(it)->end,
             "optimizer state of element " + std::to_string(e) + ": not an element this rank owns");
  --it;
  return it->state_at() + (e - it->begin);
}

}  // namespace hpctrain
