// bf16 GEMM through oneDNN's matmul (backend/cpu/onednn_matmul.hpp). One
// primitive per shape, transposition and alpha/beta, kept per thread; the
// bf16 copies of the operands live in per-thread buffers that only grow.
#include "hpctrain/backend/cpu/onednn_matmul.hpp"

#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>

#include "hpctrain/core/error.hpp"

#if HPCTRAIN_HAVE_ONEDNN
#include <dnnl.hpp>
#include <map>
#include <tuple>
#include <vector>
#endif

namespace hpctrain::cpu {

namespace {
std::atomic<bool> g_enabled{false};  // process-wide like BLAS's thread count: set once by the trainer
}  // namespace

void set_bf16_math(bool on) { g_enabled = on; }
bool bf16_math_enabled() { return g_enabled; }

#if HPCTRAIN_HAVE_ONEDNN

namespace {
using dnnl::memory;
using dt = memory::data_type;

struct Engine {
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  dnnl::stream strm{eng};
};
Engine& engine() {
  thread_local Engine e;
  return e;
}

void to_bf16(const float* src, std::size_t n, std::uint16_t* dst) {
  for (std::size_t i = 0; i < n; ++i) {  // round to nearest even; NaN keeps a quiet payload
    std::uint32_t u;
    std::memcpy(&u, src + i, 4);
    const bool nan = (u & 0x7fffffffu) > 0x7f800000u;
    u += 0x7fffu + ((u >> 16) & 1u);
    dst[i] = nan ? static_cast<std::uint16_t>((u >> 16) | 0x40u) : static_cast<std::uint16_t>(u >> 16);
  }
}

// Logical [rows, cols] of a row-major buffer with leading dimension ld, transposed or not.
memory::desc operand(dt type, int rows, int cols, int ld, bool trans) {
  return memory::desc({rows, cols}, type, trans ? memory::dims{1, ld} : memory::dims{ld, 1});
}

using Key = std::tuple<bool, bool, int, int, int, int, int, int, float, float>;
struct Prim {
  dnnl::matmul mm;
  memory::desc a, b, c;
};

Prim make(const Key& key) {
  const auto [ta, tb, m, n, k, lda, ldb, ldc, alpha, beta] = key;
  Prim p;
  p.a = operand(dt::bf16, m, k, lda, ta);
  p.b = operand(dt::bf16, k, n, ldb, tb);
  p.c = memory::desc({m, n}, dt::f32, memory::dims{ldc, 1});
  dnnl::primitive_attr attr;
  if (alpha != 1.f) attr.set_output_scales(0, {alpha});
  if (beta != 0.f) {
    dnnl::post_ops ops;
    ops.append_sum(beta);
    attr.set_post_ops(ops);
  }
  p.mm = dnnl::matmul(dnnl::matmul::primitive_desc(dnnl::matmul::desc(p.a, p.b, p.c), attr, engine().eng));
  return p;
}

std::string probe() {  // what oneDNN picks for a bf16 matmul here
  try {
    const memory::desc a({64, 64}, dt::bf16, memory::format_tag::ab), c({64, 64}, dt::f32, memory::format_tag::ab);
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, a, c), engine().eng);
    return pd.impl_info_str();
  } catch (const dnnl::error& e) {
    return std::string("none (") + e.what() + ")";
  }
}
const std::string& implementation() {
  static const std::string s = probe();
  return s;
}
}  // namespace

bool bf16_gemm_native() {
  const std::string& s = implementation();
  return s.find("bf16") != std::string::npos && s.find("ref") == std::string::npos;
}
bool bf16_gemm_available() { return implementation().rfind("none", 0) != 0; }
const char* bf16_gemm_implementation() { return implementation().c_str(); }

void bf16_gemm(bool ta, bool tb, int m, int n, int k, float alpha, const float* a, int lda, const float* b, int ldb,
               float beta, float* c, int ldc) {
  if (m == 0 || n == 0) return;
  thread_local std::map<Key, Prim> prims;
  thread_local std::vector<std::uint16_t> abuf, bbuf;
  const Key key{ta, tb, m, n, k, lda, ldb, ldc, alpha, beta};
  auto it = prims.find(key);
  if (it == prims.end()) it = prims.emplace(key, make(key)).first;
  const Prim& p = it->second;
  const std::size_t an = static_cast<std::size_t>(ta ? k : m) * static_cast<std::size_t>(lda);
  const std::size_t bn = static_cast<std::size_t>(tb ? n : k) * static_cast<std::size_t>(ldb);
  if (abuf.size() < an) abuf.resize(an);
  if (bbuf.size() < bn) bbuf.resize(bn);
  to_bf16(a, an, abuf.data());
  to_bf16(b, bn, bbuf.data());
  Engine& e = engine();
  memory am(p.a, e.eng, abuf.data()), bm(p.b, e.eng, bbuf.data()), cm(p.c, e.eng, c);
  p.mm.execute(e.strm, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
  e.strm.wait();
}

#else

bool bf16_gemm_native() { return false; }
bool bf16_gemm_available() { return false; }
const char* bf16_gemm_implementation() { return "none (built without oneDNN)"; }
void bf16_gemm(bool, bool, int, int, int, float, const float*, int, const float*, int, float, float*, int) {
  throw bad_input("bf16 GEMM needs oneDNN (libdnnl-dev), but hpctrain was built without it");
}

#endif

}  // namespace hpctrain::cpu
