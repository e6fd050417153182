// Implementation of element ranges (core/range.hpp).
#include "hpctrain/core/range.hpp"

#include <algorithm>
#include <ostream>

namespace hpctrain {

Ranges intersect(const Ranges& a, const Ranges& b) {
  Ranges out;
  for (std::size_t i = 0, j = 0; i < a.size() && j < b.size();) {
    const std::int64_t lo = std::max(a[i].begin, b[j].begin), hi = std::min(a[i].end, b[j].end);
    if (lo < hi) out.push_back({lo, hi});
    (a[i].end < b[j].end) ? ++i : ++j;
  }
  return out;
}

Ranges subtract(const Ranges& a, const Ranges& b) {
  Ranges out;
  std::size_t j = 0;
  for (Range r : a) {
    while (j < b.size() && b[j].end <= r.begin) ++j;
    for (std::size_t k = j; k < b.size() && b[k].begin < r.end; ++k) {
      if (b[k].begin > r.begin) out.push_back({r.begin, b[k].begin});
      r.begin = std::max(r.begin, b[k].end);
    }
    if (!r.empty()) out.push_back(r);
  }
  return out;
}

std::int64_t total(const Ranges& r) {
  std::int64_t n = 0;
  for (const Range& x : r) n += x.size();
  return n;
}

Ranges sorted_nonempty(Ranges r) {
  r.erase(std::remove_if(r.begin(), r.end(), [](const Range& x) { return x.empty(); }), r.end());
  std::sort(r.begin(), r.end());
  return r;
}

Ranges merged(Ranges r) {
  Ranges out;
  for (const Range& x : sorted_nonempty(std::move(r))) {
    if (!out.empty() && x.begin <= out.back().end)
      out.back().end = std::max(out.back().end, x.end);
    else
      out.push_back(x);
  }
  return out;
}

std::ostream& operator<<(std::ostream& os, const Range& r) { return os << "[" << r.begin << ", " << r.end << ")"; }

}  // namespace hpctrain
