// The optimizer state a checkpoint writer needs (train/state_slices.hpp).
#include "hpctrain/train/state_slices.hpp"

#include <algorithm>

#include "hpctrain/core/error.hpp"
#include "hpctrain/io/checkpoint_file.hpp"

namespace hpctrain {

namespace {
// Writer w's ranges: one per parameter in `params` order (some empty).
Ranges writes_of(const std::vector<std::pair<std::int64_t, Shape>>& params, int w, int writers) {
  Ranges out;
  for (const auto& [offset, shape] : params) {
    const Range r = writer_elements(shape, w, writers);
    out.push_back({offset + r.begin, offset + r.end});
  }
  return out;
}

// Where writer w takes each of its elements from: itself when it owns it, else the lowest owner.
std::vector<Ranges> sources(const Ranges& writes, const std::vector<Ranges>& owned, int w) {
  std::vector<Ranges> take(owned.size());
  Ranges left = sorted_nonempty(writes);
  take[static_cast<std::size_t>(w)] = intersect(left, owned[static_cast<std::size_t>(w)]);
  left = subtract(left, owned[static_cast<std::size_t>(w)]);
  for (std::size_t q = 0; q < owned.size() && !left.empty(); ++q) {
    if (static_cast<int>(q) == w) continue;
    take[q] = intersect(left, owned[q]);
    left = subtract(left, take[q]);
  }
  return take;  // (what is left nobody owns: zeros)
}

// Position of element e in a rank's slice: the writes ranges with their running offsets.
class SlicePositions {
 public:
  explicit SlicePositions(const Ranges& writes) {
    std::int64_t at = 0;
    for (const Range& r : writes) {
      if (!r.empty()) starts_.push_back({r.begin, r.end, at});
      at += r.size();
    }
    std::sort(starts_.begin(), starts_.end(), [](const Entry& x, const Entry& y) { return x.begin < y.begin; });
  }
  std::int64_t at(std::int64_t b, std::int64_t e) const {  // [b, e) lies in one range
    auto it =
        std::upper_bound(starts_.begin(), starts_.end(), b, [](std::int64_t v, const Entry& x) { return v < x.begin; });
    HPCT_CHECK(it != starts_.begin() && e <= std::prev(it)->end, "state slice: a range outside the writer's rows");
    --it;
    return it->at + (b - it->begin);
  }

 private:
  struct Entry {
    std::int64_t begin, end, at;
  };
  std::vector<Entry> starts_;
};

// Copies the state of [b, e) (owned by this rank) from its compact block `compact` to `out`.
void copy_owned(const std::vector<DecayRun>& runs, const float* compact, std::int64_t b, std::int64_t e, float* out) {
  for (const DecayRun& r : runs) {
    const std::int64_t lo = std::max(b, r.begin), hi = std::min(e, r.end);
    if (lo < hi) std::copy_n(compact + r.state_at() + (lo - r.begin), hi - lo, out + (lo - b));
  }
}
}  // namespace

SlicePlan plan_slices(const std::vector<std::pair<std::int64_t, Shape>>& params, const std::vector<Ranges>& owned,
                      int me) {
  const int d = static_cast<int>(owned.size());
  SlicePlan plan;
  plan.writes = writes_of(params, me, d);
  plan.take = sources(plan.writes, owned, me);
  plan.give.resize(owned.size());
  for (int q = 0; q < d; ++q)
    if (q != me) plan.give[static_cast<std::size_t>(q)] = sources(writes_of(params, q, d), owned, q)[me];
  return plan;
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

void gather_slices(Communicator& dp, const Optimizer& opt, const SlicePlan& plan, const float* compact,
                   std::vector<float>& slice) {
  const std::int64_t k_count = static_cast<std::int64_t>(opt.state_names().size());
  const std::int64_t s = opt.state_elems(), wn = total(plan.writes);
  slice.assign(static_cast<std::size_t>(wn * k_count), 0.f);  // (capacity kept when reused)
  const SlicePositions pos(plan.writes);
  const auto& runs = opt.runs();
  const int me = dp.rank();
  std::vector<std::vector<float>> out(plan.give.size()), in(plan.take.size());
  std::vector<Request> pending;
  for (std::size_t q = 0; q < plan.take.size(); ++q) {
    const std::int64_t n = total(plan.take[q]) * k_count;
    if (static_cast<int>(q) == me || n == 0) continue;
    in[q].resize(static_cast<std::size_t>(n));
    pending.push_back(dp.irecv(in[q].data(), in[q].size(), DType::f32, static_cast<int>(q)));
  }
  for (std::size_t q = 0; q < plan.give.size(); ++q) {
    const std::int64_t n = total(plan.give[q]) * k_count;
    if (n == 0) continue;
    out[q].resize(static_cast<std::size_t>(n));
    float* at = out[q].data();
    for (std::int64_t k = 0; k < k_count; ++k)
      for (const Range& r : plan.give[q]) {
        copy_owned(runs, compact + k * s, r.begin, r.end, at);
        at += r.size();
      }
    pending.push_back(dp.isend(out[q].data(), out[q].size(), DType::f32, static_cast<int>(q)));
  }
  for (std::int64_t k = 0; k < k_count; ++k)  // this rank's own elements meanwhile
    for (const Range& r : plan.take[static_cast<std::size_t>(me)])
      copy_owned(runs, compact + k * s, r.begin, r.end, slice.data() + k * wn + pos.at(r.begin, r.end));
  for (Request& r : pending) r->wait();
  for (std::size_t q = 0; q < in.size(); ++q) {
    const float* at = in[q].data();
    if (in[q].empty()) continue;
    for (std::int64_t k = 0; k < k_count; ++k)
      for (const Range& r : plan.take[q]) {
        std::copy_n(at, r.size(), slice.data() + k * wn + pos.at(r.begin, r.end));
        at += r.size();
      }
  }
}

}  // namespace hpctrain
