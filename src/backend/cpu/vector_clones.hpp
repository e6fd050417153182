// Loops compiled twice (AVX2 + FMA, and the baseline x86-64 the build targets) and picked at load
// time by the CPU they run on (GCC's target_clones). Only for loops whose result does not depend
// on the vector width: element-wise selects, maxima and sums of one term per element, so a run
// gives the same bits on any x86-64 (no reductions here).
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define HPCT_VECTOR_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define HPCT_VECTOR_CLONES
#endif
