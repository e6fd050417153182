// The one range type of "which elements": of a flat buffer (the parameter store's queries, the
// optimizer's runs, checkpoint slices) or of one tensor axis (placements).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <vector>

namespace hpctrain {

// Elements [begin, end) of a flat buffer (or of one tensor axis).
struct Range {
  std::int64_t begin = 0, end = 0;
  std::int64_t size() const { return end - begin; }
  bool empty() const { return end <= begin; }
  bool operator==(const Range& o) const { return begin == o.begin && end == o.end; }
  bool operator!=(const Range& o) const { return !(*this == o); }
  bool operator<(const Range& o) const { return begin < o.begin || (begin == o.begin && end < o.end); }
};
using Ranges = std::vector<Range>;  // sorted and disjoint where a function says so

Ranges intersect(const Ranges& a, const Ranges& b);  // both sorted and disjoint
Ranges subtract(const Ranges& a, const Ranges& b);   // a's elements not in b (both sorted and disjoint)
std::int64_t total(const Ranges& r);
Ranges sorted_nonempty(Ranges r);
Ranges merged(Ranges r);  // sorted, disjoint, with touching ranges joined: one form for each set
std::ostream& operator<<(std::ostream& os, const Range& r);  // "[begin, end)" (test failures)

}  // namespace hpctrain
