// Implementation of data/nfc.hpp, as UAX #15 writes the algorithm. The text goes in segments that
// start at an ASCII character (a starter nothing before it composes across or reorders with) or
// at a byte that is not UTF-8; each segment is decomposed, its combining marks ordered by class,
// and composed again.
#include "hpctrain/data/nfc.hpp"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <vector>

#include "hpctrain/data/utf8.hpp"

namespace hpctrain {

namespace {
struct CombiningRange {
  char32_t first, last;
  int ccc;
};
struct Mapping {
  char32_t a, b, c;
};
#include "nfc_tables.inc"

// Hangul syllables (Unicode's chapter 3.12): S = SBase + (L index * VCount + V index) * TCount + T index.
constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr char32_t kLCount = 19, kVCount = 21, kTCount = 28, kSCount = kLCount * kVCount * kTCount;

int combining_class(char32_t c) {
  if (c < 0x300) return 0;
  const auto* end = std::end(kCombiningClass);
  const auto* it = std::upper_bound(std::begin(kCombiningClass), end, c,
                                    [](char32_t v, const CombiningRange& r) { return v < r.first; });
  if (it == std::begin(kCombiningClass)) return 0;
  --it;
  return c <= it->last ? it->ccc : 0;
}

void decompose(char32_t c, std::vector<char32_t>& out) {
  if (c >= kSBase && c < kSBase + kSCount) {
    const char32_t s = c - kSBase;
    out.push_back(kLBase + s / (kVCount * kTCount));
    out.push_back(kVBase + s % (kVCount * kTCount) / kTCount);
    if (s % kTCount) out.push_back(kTBase + s % kTCount);
    return;
  }
  const auto* end = std::end(kDecomposition);
  const auto* it =
      std::lower_bound(std::begin(kDecomposition), end, c, [](const Mapping& m, char32_t v) { return m.a < v; });
  if (it == end || it->a != c) {
    out.push_back(c);
    return;
  }
  decompose(it->b, out);
  if (it->c) decompose(it->c, out);
}

// The primary composite of a and b, or 0.
char32_t compose(char32_t a, char32_t b) {
  if (a >= kLBase && a < kLBase + kLCount && b >= kVBase && b < kVBase + kVCount)
    return kSBase + ((a - kLBase) * kVCount + (b - kVBase)) * kTCount;
  if (a >= kSBase && a < kSBase + kSCount && (a - kSBase) % kTCount == 0 && b > kTBase && b < kTBase + kTCount)
    return a + (b - kTBase);
  const auto* end = std::end(kComposition);
  const auto* it =
      std::lower_bound(std::begin(kComposition), end, Mapping{a, b, 0},
                       [](const Mapping& x, const Mapping& y) { return x.a != y.a ? x.a < y.a : x.b < y.b; });
  return it != end && it->a == a && it->b == b ? it->c : 0;
}

// One segment's NFC, appended to `out`; `d` and `cc` are scratch.
void normalize(const std::vector<char32_t>& segment, std::vector<char32_t>& d, std::vector<int>& cc, std::string& out) {
  d.clear();
  for (char32_t c : segment) decompose(c, d);
  cc.resize(d.size());
  for (std::size_t i = 0; i < d.size(); ++i) cc[i] = combining_class(d[i]);
  for (std::size_t i = 1; i < d.size(); ++i)  // canonical ordering: a stable sort of each run of marks
    for (std::size_t j = i; j > 0 && cc[j] != 0 && cc[j - 1] > cc[j]; --j)
      std::swap(d[j], d[j - 1]), std::swap(cc[j], cc[j - 1]);
  // Composition: each mark or starter joins the last starter unless a mark of its class or a
  // higher one stands between (blocked); a leading mark has no starter (last class 256).
  std::size_t starter = 0, kept = 1;
  int last = cc.empty() || cc[0] == 0 ? 0 : 256;
  for (std::size_t i = 1; i < d.size(); ++i) {
    const char32_t joined = compose(d[starter], d[i]);
    if (joined && (last < cc[i] || last == 0)) {
      d[starter] = joined;
      continue;
    }
    if (cc[i] == 0) starter = kept;
    last = cc[i];
    d[kept++] = d[i];
  }
  for (std::size_t i = 0; i < std::min(kept, d.size()); ++i) utf8_append(out, d[i]);
}
}  // namespace

bool nfc_may_change(std::string_view utf8) {
  return std::any_of(utf8.begin(), utf8.end(), [](char c) { return static_cast<unsigned char>(c) >= 0xCC; });
}

std::string nfc(std::string_view utf8) {
  std::string out;
  out.reserve(utf8.size());
  std::vector<char32_t> segment, d;
  std::vector<int> cc;
  const auto flush = [&] {
    if (segment.size() == 1 && segment[0] < 0x80)
      out += static_cast<char>(segment[0]);
    else if (!segment.empty())
      normalize(segment, d, cc, out);
    segment.clear();
  };
  for (std::size_t at = 0; at < utf8.size();) {
    const auto [c, len] = utf8_next(utf8, at);
    if (len == 0) {  // not UTF-8: as it is, a boundary
      flush();
      out += utf8[at++];
      continue;
    }
    if (c < 0x80) flush();
    segment.push_back(c);
    at += len;
  }
  flush();
  return out;
}

}  // namespace hpctrain
