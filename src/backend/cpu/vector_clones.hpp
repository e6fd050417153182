// Loops compiled twice (AVX2 + FMA, and the baseline x86-64 the build targets) and picked at load
// time by the CPU they run on (GCC's target_clones). Only for loops whose result does not depend
// on the vector width: element-wise selects, maxima and sums of one term per element, so a run
// gives the same bits on any x86-64 (no reductions here). Also have_f16c(): whether the CPU has the
// half-precision conversion instructions (fp16 rounding and 16-bit storage use them, same bits).
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define HPCT_VECTOR_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define HPCT_VECTOR_CLONES
#endif

#if defined(__x86_64__)
#include <cpuid.h>

namespace hpctrain::cpu {
inline bool have_f16c() {
  // F16C from CPUID leaf 1, ECX bit 29 (clang 14's __builtin_cpu_supports knows no "f16c"); AVX
  // as the compiler checks it (with the operating system's support for its registers)
  static const bool yes = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    return __builtin_cpu_supports("avx") && __get_cpuid(1, &a, &b, &c, &d) != 0 && (c & (1u << 29)) != 0;
  }();
  return yes;
}
}  // namespace hpctrain::cpu
#endif
