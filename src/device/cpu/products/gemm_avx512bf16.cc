// AVX512_BF16: the avx512 kernels, and for bf16 products the same 12 x 32
// tile over packed pairs, each step one VDPBF16PS (two steps of K: the odd
// term, then the even, each a fused multiply-add that reads subnormals as
// zero and flushes subnormal results; gemm.h's bf16 rule is this instruction's).
// Compiled with -mavx512f -mavx512bf16; called only after cpuid.
#include <algorithm>
#include <chrono>

#include "device/cpu/products/gemm_microkernel.h"
#include "device/cpu/simd.h"

namespace sx::device::cpu {
namespace {

// A "float" here is a word of two bf16 (low: step 2w, high: step 2w + 1).
struct Avx512Pairs : simd::Avx512 {
  static f fma(f a_pairs, f b_pairs, f c) {
    return _mm512_dpbf16_ps(c, reinterpret_cast<__m512bh>(a_pairs), reinterpret_cast<__m512bh>(b_pairs));
  }
  // Sixteen words: each half widened to 32 bits, the high one shifted up.
  static f words(const uint16_t* low, const uint16_t* high) {
    __m512i l = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(low)));
    __m512i h = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(high)));
    return _mm512_castsi512_ps(_mm512_or_si512(l, _mm512_slli_epi32(h, 16)));
  }
};

void pair_words(int64_t n, const uint16_t* low, const uint16_t* high, float* out) {
  using Words = Avx512Pairs;
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) Words::store(out + j, Words::words(low + j, high + j));
  if (j == n) return;
  // The last few through buffers of a whole vector, so no load reads past the halves.
  alignas(64) uint16_t lo[16] = {}, hi[16] = {};
  alignas(64) float last[16];
  std::copy(low + j, low + n, lo);
  std::copy(high + j, high + n, hi);
  _mm512_store_ps(last, Words::words(lo, hi));
  std::copy(last, last + (n - j), out + j);
}

KernelSet make_avx512bf16_kernels() {
  KernelSet set = avx512_kernels();
  set.isa = Isa::avx512bf16;
  microkernel::fill_rows<Avx512Pairs, 12, 2>(set.pair_tiles);
  microkernel::fill_rows<Avx512Pairs, 12, 2>(set.pair_in_place_tiles);
  set.pair_words = &pair_words;
  set.pair_packing_tile = &microkernel::pair_packing_tile<Avx512Pairs, 12, 2>;
  return set;
}

// Instructions a second of 12 independent chains of `step`, the best of three short runs.
template <class Step>
double chain_rate(Step step) {
  constexpr int kChains = 12, kIterations = 20000;
  double best = 0;
  volatile float sink = 0;  // the chains' results are used, so they are computed
  for (int run = 0; run < 3; ++run) {
    __m512 acc[kChains];
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i));
    auto start = std::chrono::steady_clock::now();
    for (int it = 0; it < kIterations; ++it) {
#pragma GCC unroll 12
      for (__m512& a : acc) a = step(a);
    }
    std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    for (const __m512& a : acc) sink = sink + _mm512_cvtss_f32(a);
    best = std::max(best, kChains * kIterations / std::max(took.count(), 1e-9));
  }
  return best;
}

}  // namespace

bool pair_products_outrun_fma() {
  static const bool outrun = [] {
    __m512 a = _mm512_set1_ps(0.999f), b = _mm512_set1_ps(1e-6f);
    double fma = chain_rate([&](__m512 c) { return _mm512_fmadd_ps(c, a, b); });
    double pairs = chain_rate(
        [&](__m512 c) { return _mm512_dpbf16_ps(c, reinterpret_cast<__m512bh>(a), reinterpret_cast<__m512bh>(b)); });
    return 32 * pairs >= 16 * fma;  // products a second: 32 an instruction against 16
  }();
  return outrun;
}

const KernelSet& avx512bf16_kernels() {
  static const KernelSet set = make_avx512bf16_kernels();
  return set;
}

}  // namespace sx::device::cpu
