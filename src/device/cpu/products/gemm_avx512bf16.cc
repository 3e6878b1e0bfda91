// AVX512_BF16: the avx512 kernels, and for bf16 products the same 12 x 32
// tile over packed pairs, each step one VDPBF16PS (two steps of K: the odd
// term, then the even, each a fused multiply-add that reads subnormals as
// zero and flushes subnormal results; gemm.h's bf16 rule is this instruction's).
// Compiled with -mavx512f -mavx512bf16; called only after cpuid.
#include <algorithm>
#include <chrono>
#include <utility>

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

// pair_in_place_tile for S slivers of 32 columns, each step's two rows of B made into
// words by one unpack a vector rather than widened halves (two instructions a step
// against eight): an unpack keeps each 128-bit lane's columns, so the low words hold
// columns 8l + 0..3 of lane l and the high ones 8l + 4..7, and C's vectors are dealt
// into that order as they are loaded and back as they are stored. Each sum takes the
// same steps. One row takes 4 slivers at once, so that 8 sums rather than 2 hide
// VDPBF16PS's latency. Each fetches B's lines ahead along its rows as it goes.
template <int R, int S>
void pair_in_place_tile_32(int64_t kc, const float* a, const uint16_t* b, int64_t ldb, float* c, int64_t ldc,
                           bool accumulate) {
  const __m512i to_low = _mm512_setr_epi32(0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27);
  const __m512i to_high = _mm512_setr_epi32(4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31);
  const __m512i to_first = _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23);
  const __m512i to_second = _mm512_setr_epi32(8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29, 30, 31);
  constexpr int kMr = 12;  // the pair tiles' packed A
  __m512 low[R][S], high[R][S];
#pragma GCC unroll 12
  for (int i = 0; i < R; ++i) {
#pragma GCC unroll 4
    for (int s = 0; s < S; ++s) {
      if (accumulate) {
        const float* row = c + i * ldc + 32 * s;
        const __m512 first = _mm512_loadu_ps(row), second = _mm512_loadu_ps(row + 16);
        low[i][s] = _mm512_permutex2var_ps(first, to_low, second);
        high[i][s] = _mm512_permutex2var_ps(first, to_high, second);
      } else {
        low[i][s] = high[i][s] = _mm512_setzero_ps();
      }
    }
  }
#pragma GCC unroll 2
  for (int64_t p = 0; p < kc; ++p) {
#pragma GCC unroll 4
    for (int s = 0; s < S; ++s) {
      const uint16_t* even_row = b + 2 * p * ldb + 32 * s;
      microkernel::fetch_ahead<Avx512Pairs, 64>(even_row);
      microkernel::fetch_ahead<Avx512Pairs, 64>(even_row + ldb);
      const __m512i even = _mm512_loadu_si512(even_row), odd = _mm512_loadu_si512(even_row + ldb);
      const auto low_words = reinterpret_cast<__m512bh>(_mm512_unpacklo_epi16(even, odd));
      const auto high_words = reinterpret_cast<__m512bh>(_mm512_unpackhi_epi16(even, odd));
#pragma GCC unroll 12
      for (int i = 0; i < R; ++i) {
        const auto ai = reinterpret_cast<__m512bh>(_mm512_set1_ps(a[p * kMr + i]));
        low[i][s] = _mm512_dpbf16_ps(low[i][s], ai, low_words);
        high[i][s] = _mm512_dpbf16_ps(high[i][s], ai, high_words);
      }
    }
  }
#pragma GCC unroll 12
  for (int i = 0; i < R; ++i) {
#pragma GCC unroll 4
    for (int s = 0; s < S; ++s) {
      float* row = c + i * ldc + 32 * s;
      _mm512_storeu_ps(row, _mm512_permutex2var_ps(low[i][s], to_first, high[i][s]));
      _mm512_storeu_ps(row + 16, _mm512_permutex2var_ps(low[i][s], to_second, high[i][s]));
    }
  }
}

template <int... Rs>
void fill_pair_in_place_32(PairsInPlaceTileKernel (&table)[KernelSet::kMaxRows][KernelSet::kMaxVectors],
                           std::integer_sequence<int, Rs...>) {
  ((table[Rs][1] = &pair_in_place_tile_32<Rs + 1, 1>), ...);
}

KernelSet make_avx512bf16_kernels() {
  KernelSet set = avx512_kernels();
  set.isa = Isa::avx512bf16;
  microkernel::fill_rows<microkernel::PackedTiles<Avx512Pairs, 12>, 2, 12>(set.pair_tiles);
  microkernel::fill_rows<microkernel::PairInPlaceTiles<Avx512Pairs, 12>, 1, 12>(set.pair_in_place_tiles);
  fill_pair_in_place_32(set.pair_in_place_tiles, std::make_integer_sequence<int, 12>{});
  set.pair_in_place_row = &pair_in_place_tile_32<1, 4>;
  set.pair_words = &pair_words;
  set.pair_packing_tile = &microkernel::pair_packing_tile<Avx512Pairs, 12, 2>;
  // Up to 12 rows over a transposed B, two vectors of columns a tile (16 rows in one ran
  // at 143 GFLOP/s over 768 x 3072, packed at 157).
  constexpr int kPairRows = 12;
  set.pair_transposed_rows = kPairRows;
  microkernel::fill_transposed<Avx512Pairs, 12, kPairRows, float, 2>(set.pair_transposed);
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
