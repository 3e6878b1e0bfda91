// The FMA peak loop of bench/cpu_matmul, written once over a vector type and
// instantiated in fma_peak_avx2.cc, fma_peak_avx512.cc and fma_peak_avx512bf16.cc,
// each built for its
// instruction set (as src/device/cpu/products/gemm_microkernel.h is, for the same
// reason: V is local to each file).
#pragma once

#include <cstdint>

// 12 independent chains hide the FMA latency (4 cycles) on 2 ports. Returns
// a lane of the result so the loop is not optimized away.
template <class V>
float fma_chains(int64_t iterations) {
  typename V::reg acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = V::broadcast(static_cast<float>(i));
  typename V::reg a = V::broadcast(0.999999f), b = V::broadcast(1e-6f);
  for (int64_t it = 0; it < iterations; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) acc[i] = V::fma(acc[i], a, b);
  }
  for (int i = 1; i < 12; ++i) acc[0] = V::fma(acc[0], a, acc[i]);
  return V::first(acc[0]);
}

// Defined for the benchmark's instruction sets; call one only where it runs.
float fma_peak_avx2(int64_t iterations);
float fma_peak_avx512(int64_t iterations);
float dpbf16_peak_avx512bf16(int64_t iterations);
float tdpbf16_peak_amx(int64_t iterations);  // 4 tile instructions an iteration
