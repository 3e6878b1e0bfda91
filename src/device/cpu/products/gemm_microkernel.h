// The register-blocked micro-kernel, written once over a vector type and
// instantiated by gemm_scalar.cc, gemm_avx2.cc, gemm_avx512.cc and
// gemm_avx512bf16.cc, each compiled for its instruction set over its type of
// simd.h, which every file has a copy of its own of: every instantiation has
// internal linkage and no copy built for a wider set can be linked in place of a
// narrower one. Use nothing but V and plain loops here: an inline library
// function would be shared between the files.
//
// V (simd.h) provides: `f`, `width` (floats per f), zero(), load(p), store(p, r),
// splat(x), fma(a, b, c) = a * b + c rounded once, widen(h) = `width` bf16
// halves at h as f32, and
// transpose_block(src, ld, rows, out, out_stride): the first `rows` (at most
// width) rows of a width x width block at src (row stride ld), transposed, so
// out[p * out_stride + i] = src[i * ld + p]; rows past `rows` are not read.
#pragma once

#include <cstdint>
#include <utility>

#include "device/cpu/products/gemm.h"

namespace sx::device::cpu::microkernel {

// Steps of K ahead that a packing tile fetches B's rows: B lies in memory, each row in a
// page of its own, and the hardware prefetchers start over at each page.
constexpr int64_t kPackRowsAhead = 16;

// Bytes along each of B's rows that a tile reading B where it lies fetches into L2 ahead
// of what it reads: the lines that the tile a few slivers on will read. Such a B may come
// from memory (a served model's weights), and with its rows a page or more apart the
// hardware prefetchers keep too few lines in flight: 8 x 768 x 50257 in f32 read B at 5
// GB/s without these fetches and at 22 with them. Where B lies in cache they cost little
// (a bf16 row, which loads a line for each of its multiplies, about 6%).
constexpr int64_t kFetchAheadBytes = 512;

// Fetches into L2 the lines of `Bytes` at `from`, kFetchAheadBytes on: a line every 64
// bytes, so that a window that slides along a row by `Bytes` from tile to tile meets
// every line however the row lies against the lines.
template <class V, int Bytes>
void fetch_ahead(const void* from) {
  const char* ahead = static_cast<const char*>(from) + kFetchAheadBytes;
#pragma GCC unroll 8
  for (int at = 0; at < Bytes; at += 64) __builtin_prefetch(ahead + at, 0, 2);
}

// Where a tile's B comes from, a step (row) at a time: row(p, bv) loads its NV vectors.
// A packed sliver, read as b[p * ldb + j]:
template <class V, int NV>
struct PackedRows {
  const float* b;
  int64_t ldb;
  void row(int64_t p, typename V::f* bv) const {
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) bv[v] = V::load(b + p * ldb + v * V::width);
  }
};

// B where it lies (row stride ldb), read as PackedRows reads a sliver, each row's lines
// ahead fetched as it goes (fetch_ahead).
template <class V, int NV>
struct RowsFetchingAhead {
  const float* b;
  int64_t ldb;
  void row(int64_t p, typename V::f* bv) const {
    constexpr int kBytes = NV * V::width * static_cast<int>(sizeof(float));
    const float* at = b + p * ldb;
    fetch_ahead<V, kBytes>(at);
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) bv[v] = V::load(at + v * V::width);
  }
};

// A packed sliver as PackedRows, each 2^shift steps also fetching into L2 a row's first
// or last line of another sliver (SliverFetch), so that the fetches spread over the
// tile's FMAs; with a row's first, the lines between them (a row wider than a line
// spans three where it does not start one: an f32 B whose rows are of odd length).
template <class V, int NV>
struct FetchingRows {
  PackedRows<V, NV> packed;
  SliverFetch fetch;
  void row(int64_t p, typename V::f* bv) const {
    packed.row(p, bv);
    const int64_t line = p >> fetch.shift;
    if ((p & ((int64_t{1} << fetch.shift) - 1)) == 0 && line < 2 * fetch.rows) {
      const char* row = fetch.first + (line >> 1) * fetch.ld;
      if ((line & 1) == 1) {
        __builtin_prefetch(row + fetch.width - 1, 0, 2);
      } else {
        for (int64_t at = 0; at < fetch.width - 1; at += 64) __builtin_prefetch(row + at, 0, 2);
      }
    }
  }
};

// B where it lies, each step's vectors made by `Source` and also stored to `packed` as
// the packing lays out a sliver (packed[p * NV * width + j]). A Source gives vector v of
// step p (vector(p, v)) and fetches the rows kPackRowsAhead steps on (ahead(p)).
template <class V, int NV, class Source>
struct PackingRows {
  Source source;
  float* packed;
  void row(int64_t p, typename V::f* bv) const {
    source.ahead(p);
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) {
      bv[v] = source.vector(p, v);
      V::store(packed + p * NV * V::width + v * V::width, bv[v]);
    }
  }
};

// The Sources. A prefetch never faults: the rows past B's end need no test.
// f32 rows (row stride ldb), step p being row p:
template <class V, int NV>
struct FloatRows {
  const float* b;
  int64_t ldb;
  // Every line of the row, which may start inside one (rows of odd length).
  void ahead(int64_t p) const {
    const char* row = reinterpret_cast<const char*>(b + (p + kPackRowsAhead) * ldb);
    constexpr int kBytes = NV * V::width * static_cast<int>(sizeof(float));
#pragma GCC unroll 4
    for (int at = 0; at < kBytes - 1; at += 64) __builtin_prefetch(row + at);
    __builtin_prefetch(row + kBytes - 1);
  }
  typename V::f vector(int64_t p, int v) const { return V::load(b + p * ldb + v * V::width); }
};

// bf16 rows (row stride ldb, in halves) widened: step p is row p ^ 1, the bf16 order
// (gemm.h) in a block that starts a pair. Every step has its pair: the caller packs an
// odd K's last one.
template <class V>
struct WidenedRows {
  const uint16_t* b;
  int64_t ldb;
  void ahead(int64_t p) const { __builtin_prefetch(b + (p + kPackRowsAhead) * ldb); }
  typename V::f vector(int64_t p, int v) const { return V::widen(b + (p ^ 1) * ldb + v * V::width); }
  // The lines ahead of step p's `Columns` columns in its row (fetch_ahead).
  template <int Columns>
  void fetch_along(int64_t p) const {
    constexpr int kBytes = Columns * static_cast<int>(sizeof(uint16_t));
    fetch_ahead<V, kBytes>(b + (p ^ 1) * ldb);
  }
};

// bf16 rows (row stride ldb, in halves) as words: step p's are rows 2p (low halves) and
// 2p + 1 (high), made by V::words. Every word holds two steps: the caller packs an odd
// K's last one.
template <class V>
struct PairRows {
  const uint16_t* b;
  int64_t ldb;
  void ahead(int64_t p) const {
    __builtin_prefetch(b + 2 * (p + kPackRowsAhead) * ldb);
    __builtin_prefetch(b + (2 * (p + kPackRowsAhead) + 1) * ldb);
  }
  typename V::f vector(int64_t p, int v) const {
    const uint16_t* low = b + 2 * p * ldb + v * V::width;
    return V::words(low, low + ldb);
  }
  // The lines ahead of step p's `Columns` columns in both its rows (fetch_ahead).
  template <int Columns>
  void fetch_along(int64_t p) const {
    constexpr int kBytes = Columns * static_cast<int>(sizeof(uint16_t));
    fetch_ahead<V, kBytes>(b + 2 * p * ldb);
    fetch_ahead<V, kBytes>(b + (2 * p + 1) * ldb);
  }
};

// A Source read as a tile's rows, without packing them: B where it lies, each row read
// once by the one tile of rows that uses it, its lines ahead fetched as it goes.
template <class V, int NV, class Source>
struct SourceRows {
  Source source;
  void row(int64_t p, typename V::f* bv) const {
    source.template fetch_along<NV * V::width>(p);
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) bv[v] = source.vector(p, v);
  }
};

// Where a tile's A comes from: at(p, i) is row i's step p.
// A packed sliver, a[p * MR + i]:
template <int MR>
struct PackedA {
  const float* a;
  float at(int64_t p, int i) const { return a[p * MR + i]; }
};

// A's rows where they lie, row i at a + i * lda.
struct RowsOfA {
  const float* a;
  int64_t lda;
  float at(int64_t p, int i) const { return a[i * lda + p]; }
};

// A's steps where they lie (a transpose read in place), step p at a + p * lda.
struct StepsOfA {
  const float* a;
  int64_t lda;
  float at(int64_t p, int i) const { return a[p * lda + i]; }
};

// C[R, NV * width] (row stride ldc) = (accumulate ? C : 0) + A * B over kc:
// A's steps from `from` (above), B's rows from `rows` (above). Each element's sum
// runs over p in order, one fma a step.
template <class V, int R, int NV, class Rows, class A>
void tile_steps(int64_t kc, A from, Rows rows, float* c, int64_t ldc, bool accumulate) {
  typename V::f acc[R][NV];
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i) {
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) acc[i][v] = accumulate ? V::load(c + i * ldc + v * V::width) : V::zero();
  }
  // Four steps a pass: fewer loop instructions among the FMAs (3 to 7% here).
#pragma GCC unroll 4
  for (int64_t p = 0; p < kc; ++p) {
    typename V::f bv[NV];
    rows.row(p, bv);
#pragma GCC unroll 16
    for (int i = 0; i < R; ++i) {
      typename V::f ai = V::splat(from.at(p, i));
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) acc[i][v] = V::fma(ai, bv[v], acc[i][v]);
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i) {
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) V::store(c + i * ldc + v * V::width, acc[i][v]);
  }
}

template <class V, int MR, int R, int NV>
void tile(int64_t kc, const float* a, const float* b, int64_t ldb, float* c, int64_t ldc, bool accumulate) {
  tile_steps<V, R, NV>(kc, PackedA<MR>{a}, PackedRows<V, NV>{b, ldb}, c, ldc, accumulate);
}

// A tile over f32 B where it lies (ldb its row stride), fetching ahead along its rows.
template <class V, int MR, int R, int NV>
void in_place_tile(int64_t kc, const float* a, const float* b, int64_t ldb, float* c, int64_t ldc, bool accumulate) {
  tile_steps<V, R, NV>(kc, PackedA<MR>{a}, RowsFetchingAhead<V, NV>{b, ldb}, c, ldc, accumulate);
}

// A tile with A where it lies, by RowsOfA or StepsOfA (InPlaceATileKernel).
template <class V, class A, int R, int NV>
void in_place_a_tile(int64_t kc, const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc,
                     bool accumulate) {
  tile_steps<V, R, NV>(kc, A{a, lda}, PackedRows<V, NV>{b, ldb}, c, ldc, accumulate);
}

// A whole tile that fetches another sliver as it goes (FetchingTileKernel).
template <class V, int MR, int NV>
void fetching_tile(int64_t kc, const float* a, const float* b, int64_t ldb, float* c, int64_t ldc, bool accumulate,
                   const SliverFetch& fetch) {
  tile_steps<V, MR, NV>(kc, PackedA<MR>{a}, FetchingRows<V, NV>{{b, ldb}, fetch}, c, ldc, accumulate);
}

// A whole tile that packs the sliver of f32 B it reads (PackingTileKernel).
template <class V, int MR, int NV>
void packing_tile(int64_t kc, const float* a, const float* b, int64_t ldb, float* packed, float* c, int64_t ldc,
                  bool accumulate) {
  tile_steps<V, MR, NV>(kc, PackedA<MR>{a}, PackingRows<V, NV, FloatRows<V, NV>>{{b, ldb}, packed}, c, ldc, accumulate);
}

// A whole tile that packs the sliver of bf16 B it reads, widened (Bf16PackingTileKernel).
template <class V, int MR, int NV>
void widening_packing_tile(int64_t kc, const float* a, const uint16_t* b, int64_t ldb, float* packed, float* c,
                           int64_t ldc, bool accumulate) {
  tile_steps<V, MR, NV>(kc, PackedA<MR>{a}, PackingRows<V, NV, WidenedRows<V>>{{b, ldb}, packed}, c, ldc, accumulate);
}

// A whole tile of pairs that packs the sliver of bf16 B it reads (Bf16PackingTileKernel).
template <class V, int MR, int NV>
void pair_packing_tile(int64_t kc, const float* a, const uint16_t* b, int64_t ldb, float* packed, float* c, int64_t ldc,
                       bool accumulate) {
  tile_steps<V, MR, NV>(kc, PackedA<MR>{a}, PackingRows<V, NV, PairRows<V>>{{b, ldb}, packed}, c, ldc, accumulate);
}

// A tile of R rows of packed pairs over bf16 B where it lies, made into words as it
// goes and not stored (PairsInPlaceTileKernel).
template <class V, int MR, int R, int NV>
void pair_in_place_tile(int64_t kc, const float* a, const uint16_t* b, int64_t ldb, float* c, int64_t ldc,
                        bool accumulate) {
  tile_steps<V, R, NV>(kc, PackedA<MR>{a}, SourceRows<V, NV, PairRows<V>>{{b, ldb}}, c, ldc, accumulate);
}

// A tile of R rows over bf16 B where it lies, widened as it goes and not stored: step p
// reads row p ^ 1, the bf16 order, so kc is even (WideningInPlaceTileKernel).
template <class V, int MR, int R, int NV>
void widening_in_place_tile(int64_t kc, const float* a, const uint16_t* b, int64_t ldb, float* c, int64_t ldc,
                            bool accumulate) {
  tile_steps<V, R, NV>(kc, PackedA<MR>{a}, SourceRows<V, NV, WidenedRows<V>>{{b, ldb}}, c, ldc, accumulate);
}

// B read through a transpose where it lies (TransposedKernel): column j's step p at
// b[j * ldb + p], f32 or bf16 halves. Each row of it lies along K, so blocks of `width`
// steps by `width` columns are transposed in registers (transpose_block, bf16 widened
// first), a step a row, for the tile's FMAs; packing B instead wrote it to a panel and
// read it back, for rows that use each of its elements once (one f32 row over 768 x 3072
// at 12 GFLOP/s packed).
template <class V, class T>
struct TransposedColumns {
  // Steps a block: a line of each row, all of it used while it is in L1 (the rows of a
  // long K lie a multiple of 4 KiB apart, in as few sets as L1 has ways).
  static constexpr int kSteps = 64 / static_cast<int>(sizeof(T)) > V::width ? 64 / static_cast<int>(sizeof(T))
                                                                            : V::width;
  const T* b;
  int64_t ldb;
  int64_t cols;
  // Elements from a column to the same column of the next tile, whose lines each block
  // fetches into L2 as it reads its own: B's rows lie one after another, so the fetches
  // run through memory in order, a tile ahead (fetching 512 bytes along each row instead
  // left the first lines of every tile's rows to be missed: 8 x 768 x 50257 in bf16 read
  // B at 8 GB/s, and at 15 with these).
  int64_t ahead;
  static float value(T x) {
    if constexpr (sizeof(T) == sizeof(float)) return x;
    else return __builtin_bit_cast(float, static_cast<uint32_t>(x) << 16);
  }
  int height(int v) const {
    const int64_t left = cols - v * V::width;
    return static_cast<int>(left < 0 ? 0 : left < V::width ? left : V::width);
  }
  // Steps [p0, p0 + kSteps) of the first `vectors` vectors of columns: block[v * kSteps
  // * width + q * width + i] is column v * width + i's step p0 + q (bf16 widened through
  // `staging`, width x width floats), the next tile's lines of them fetched.
  void transpose(int vectors, int64_t p0, float* block, float* staging) const {
    for (int v = 0; v < vectors; ++v) transpose_vector(v, p0, block + v * kSteps * V::width, staging);
  }
  // The same as a call of its own, for f32: inlined, its registers pushed the tile's sums
  // to the stack at every step (one f32 row over 768 x 3072 at 13 GFLOP/s, 18 with the
  // call), where bf16's ran faster inlined (16 against 18).
  __attribute__((noinline)) void transpose_apart(int vectors, int64_t p0, float* block, float* staging) const {
    transpose(vectors, p0, block, staging);
  }
  void transpose_vector(int v, int64_t p0, float* block, float* staging) const {
    const int rows = height(v);
    const T* from = b + v * V::width * ldb + p0;
#pragma GCC unroll 16
    for (int i = 0; i < V::width; ++i) __builtin_prefetch(from + ahead + i * ldb, 0, 2);
    for (int s = 0; s < kSteps; s += V::width) {
      if constexpr (sizeof(T) == sizeof(float)) {
        V::transpose_block(from + s, ldb, rows, block + s * V::width, V::width);
      } else {
        for (int i = 0; i < rows; ++i) V::store(staging + i * V::width, V::widen(from + s + i * ldb));
        V::transpose_block(staging, V::width, rows, block + s * V::width, V::width);
      }
    }
  }
  // Vector v's columns at step k, one at a time (the steps past the last whole block).
  typename V::f gather(int v, int64_t k) const {
    alignas(64) float lanes[V::width] = {};
    for (int i = 0; i < height(v); ++i) lanes[i] = value(b[(v * V::width + i) * ldb + k]);
    return V::load(lanes);
  }
};

// C[R, NV * width] = A * B over kc steps, A packed, B's first `cols` columns by
// TransposedColumns. Bf16Order: step p reads K's p ^ 1, an odd kc's last step
// itself (gemm.h's bf16 order; a block's steps are whole pairs); A is packed in that order.
template <class V, int MR, int R, int NV, bool Bf16Order, class T>
void transposed_tile(int64_t kc, const float* a, const T* b, int64_t ldb, int64_t cols, float* c, int64_t ldc) {
  constexpr int W = V::width, S = TransposedColumns<V, T>::kSteps;
  const TransposedColumns<V, T> columns{b, ldb, cols, NV * W * ldb};
  typename V::f acc[R][NV];
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i) {
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[i][v] = V::zero();
  }
  alignas(64) float block[NV][S * W] = {};
  alignas(64) float staging[sizeof(T) == sizeof(float) ? 1 : W * W] = {};
  int vectors = 0;  // those holding columns
  while (vectors < NV && columns.height(vectors) > 0) ++vectors;
  int64_t p0 = 0;
  for (; p0 + S <= kc; p0 += S) {
    if constexpr (sizeof(T) == sizeof(float)) columns.transpose_apart(vectors, p0, block[0], staging);
    else columns.transpose(vectors, p0, block[0], staging);
#pragma GCC unroll 8
    for (int q = 0; q < S; ++q) {
      const int column = Bf16Order ? q ^ 1 : q;
#pragma GCC unroll 16
      for (int i = 0; i < R; ++i) {
        const typename V::f ai = V::splat(a[i / MR * MR * kc + (p0 + q) * MR + i % MR]);
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) acc[i][v] = V::fma(ai, V::load(block[v] + column * W), acc[i][v]);
      }
    }
  }
  for (; p0 < kc; ++p0) {
    const int64_t k = Bf16Order && !(kc % 2 == 1 && p0 == kc - 1) ? p0 ^ 1 : p0;
    typename V::f bv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) bv[v] = columns.gather(v, k);
#pragma GCC unroll 16
    for (int i = 0; i < R; ++i) {
      const typename V::f ai = V::splat(a[i / MR * MR * kc + p0 * MR + i % MR]);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[i][v] = V::fma(ai, bv[v], acc[i][v]);
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i) {
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) V::store(c + i * ldc + v * W, acc[i][v]);
  }
}

// C[R, cols] = A * B by transposed_tile (TransposedKernel), the last columns through a
// tile of its own. One or two rows take four vectors of columns a tile, whose sums hide
// the FMA's latency; up to eight two, their sums within half of AVX-512's registers; more
// TallVectors (pairs: two, 12 x 768 x 3072 at 160 GFLOP/s against 138 with one; f32 one,
// 16 x 768 x 3072 at 94 against 81 with two).
template <class V, int MR, int R, bool Bf16Order, int TallVectors, class T>
void transposed_product(int64_t kc, const float* a, const T* b, int64_t ldb, int64_t cols, float* c, int64_t ldc) {
  constexpr int NV = R <= 2 ? KernelSet::kMaxVectors : R <= 8 ? 2 : TallVectors, kCols = NV * V::width;
  for (int64_t j = 0; j < cols; j += kCols) {
    if (cols - j >= kCols) {
      transposed_tile<V, MR, R, NV, Bf16Order>(kc, a, b + j * ldb, ldb, kCols, c + j, ldc);
      continue;
    }
    alignas(64) float tile[R * kCols];
    transposed_tile<V, MR, R, NV, Bf16Order>(kc, a, b + j * ldb, ldb, cols - j, tile, kCols);
    for (int i = 0; i < R; ++i) {
      for (int64_t q = 0; q < cols - j; ++q) c[i * ldc + j + q] = tile[i * kCols + q];
    }
  }
}

// c[j] = fma(a[S - 1], b[(S - 1) * ldb + j], ... fma(a[0], b[j], c[j])) for j < n: S
// steps of n elements' sums, in order, C loaded and stored once for all S. The last n %
// width elements one at a time, with the same single roundings.
template <class V, int S>
void axpy_steps(int64_t n, const float* a, const float* b, int64_t ldb, float* c) {
  typename V::f av[S];
#pragma GCC unroll 4
  for (int s = 0; s < S; ++s) av[s] = V::splat(a[s]);
  int64_t j = 0;
  for (; j + 4 * V::width <= n; j += 4 * V::width) {
    typename V::f cj[4];
#pragma GCC unroll 4
    for (int u = 0; u < 4; ++u) cj[u] = V::load(c + j + u * V::width);
#pragma GCC unroll 4
    for (int s = 0; s < S; ++s) {
#pragma GCC unroll 4
      for (int u = 0; u < 4; ++u) cj[u] = V::fma(av[s], V::load(b + s * ldb + j + u * V::width), cj[u]);
    }
#pragma GCC unroll 4
    for (int u = 0; u < 4; ++u) V::store(c + j + u * V::width, cj[u]);
  }
  for (; j + V::width <= n; j += V::width) {
    typename V::f cj = V::load(c + j);
#pragma GCC unroll 4
    for (int s = 0; s < S; ++s) cj = V::fma(av[s], V::load(b + s * ldb + j), cj);
    V::store(c + j, cj);
  }
  for (; j < n; ++j) {
    float cj = c[j];
    for (int s = 0; s < S; ++s) cj = __builtin_fmaf(a[s], b[s * ldb + j], cj);
    c[j] = cj;
  }
}

// AxpyKernel: axpy_steps for 1 to kAxpySteps steps.
template <class V>
void axpy(int64_t n, int steps, const float* a, const float* b, int64_t ldb, float* c) {
  static_assert(kAxpySteps == 4);
  switch (steps) {
    case 1: return axpy_steps<V, 1>(n, a, b, ldb, c);
    case 2: return axpy_steps<V, 2>(n, a, b, ldb, c);
    case 3: return axpy_steps<V, 3>(n, a, b, ldb, c);
    default: return axpy_steps<V, 4>(n, a, b, ldb, c);
  }
}

// Packs `depth` rows of an f32 B with unit column stride (row stride ldb)
// into `slivers` whole slivers of NV vectors: sliver s gets b[p * nr + j].
// Row by row, so B is read in order.
template <class V, int NV>
void pack_slivers(int64_t depth, int64_t slivers, const float* b, int64_t ldb, float* out) {
  constexpr int nr = NV * V::width;
  // Each row of a weight's panel lies in a page of its own (a row is N floats), and
  // the weights come from memory: the rows kRowsAhead on are fetched while this one is
  // copied, where the hardware prefetchers start over at each page.
  constexpr int64_t kRowsAhead = 8;
  for (int64_t p = 0; p < depth; ++p) {
    const float* src = b + p * ldb;
    if (p + kRowsAhead < depth) {
      const auto* ahead = reinterpret_cast<const char*>(src + kRowsAhead * ldb);
      for (int64_t at = 0; at < slivers * nr * static_cast<int64_t>(sizeof(float)); at += 64)
        __builtin_prefetch(ahead + at);
    }
    for (int64_t s = 0; s < slivers; ++s) {
      float* dst = out + (s * depth + p) * nr;
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) V::store(dst + v * V::width, V::load(src + s * nr + v * V::width));
    }
  }
}

// out[p * out_stride + i] = src[i * ld + p] (see TransposeKernel): blocks of
// width steps by the vector transpose, the last steps one at a time. Fetching (as
// KernelSet::pack_transposed_fetching): each block fetches into L2 the same steps of the
// rows `rows` on.
template <class V, bool Fetching = false>
void pack_transposed(int64_t depth, int64_t rows, const float* src, int64_t ld, float* out, int64_t out_stride) {
  for (int64_t i0 = 0; i0 < rows; i0 += V::width) {
    const int height = static_cast<int>(rows - i0 < V::width ? rows - i0 : V::width);
    const float* from = src + i0 * ld;
    float* to = out + i0;
    int64_t p = 0;
    for (; p + V::width <= depth; p += V::width) {
      if constexpr (Fetching) {
        for (int i = 0; i < height; ++i) __builtin_prefetch(from + (rows + i) * ld + p, 0, 2);
      }
      V::transpose_block(from + p, ld, height, to + p * out_stride, out_stride);
    }
    for (; p < depth; ++p) {
      for (int i = 0; i < height; ++i) to[p * out_stride + i] = from[i * ld + p];
    }
  }
}

// Each kind of tile as Tiles::kernel<R, NV>, for fill_rows.
template <class V, int MR>
struct PackedTiles {
  template <int R, int NV>
  static constexpr TileKernel kernel = &tile<V, MR, R, NV>;
};
template <class V, int MR>
struct InPlaceTiles {
  template <int R, int NV>
  static constexpr TileKernel kernel = &in_place_tile<V, MR, R, NV>;
};
template <class V, class A>
struct InPlaceATiles {
  template <int R, int NV>
  static constexpr InPlaceATileKernel kernel = &in_place_a_tile<V, A, R, NV>;
};
template <class V, int MR>
struct WideningInPlaceTiles {
  template <int R, int NV>
  static constexpr WideningInPlaceTileKernel kernel = &widening_in_place_tile<V, MR, R, NV>;
};
template <class V, int MR>
struct PairInPlaceTiles {
  template <int R, int NV>
  static constexpr PairsInPlaceTileKernel kernel = &pair_in_place_tile<V, MR, R, NV>;
};

// Fills table[r - 1] with transposed_product for r <= R, of T (f32 or bf16's halves).
template <class V, int MR, int R, class T, int TallVectors = 1, class Kernel>
void fill_transposed(Kernel (&table)[KernelSet::kTransposedRows]) {
  table[R - 1] = &transposed_product<V, MR, R, sizeof(T) == sizeof(uint16_t), TallVectors, T>;
  if constexpr (R > 1) fill_transposed<V, MR, R - 1, T, TallVectors>(table);
}

// Fills table[R - 1][v - 1] with Tiles::kernel<R, v> for each v in Vs + 1.
template <class Tiles, int R, class Kernel, int... Vs>
void fill_row(Kernel (&table)[KernelSet::kMaxRows][KernelSet::kMaxVectors], std::integer_sequence<int, Vs...>) {
  ((table[R - 1][Vs] = Tiles::template kernel<R, Vs + 1>), ...);
}

// Fills table[r - 1][v - 1] for r <= R, v <= NV.
template <class Tiles, int NV, int R, class Kernel>
void fill_rows(Kernel (&table)[KernelSet::kMaxRows][KernelSet::kMaxVectors]) {
  fill_row<Tiles, R>(table, std::make_integer_sequence<int, NV>{});
  if constexpr (R > 1) fill_rows<Tiles, NV, R - 1>(table);
}

template <class V, int MR, int NV>
KernelSet make_kernel_set(Isa isa) {
  static_assert(MR <= KernelSet::kMaxRows && NV <= KernelSet::kMaxVectors);
  KernelSet set{.isa = isa,
                .mr = MR,
                .nr = NV * V::width,
                .width = V::width,
                .tiles = {},
                .packing_tile = &packing_tile<V, MR, NV>,
                .fetching_tile = &fetching_tile<V, MR, NV>,
                .widening_packing_tile = &widening_packing_tile<V, MR, NV>,
                .axpy = &axpy<V>,
                .pack_slivers = &pack_slivers<V, NV>,
                .pack_transposed = &pack_transposed<V>,
                .pack_transposed_fetching = &pack_transposed<V, true>};
  fill_rows<PackedTiles<V, MR>, NV, MR>(set.tiles);
  fill_rows<InPlaceTiles<V, MR>, NV, MR>(set.in_place_tiles);
  fill_rows<WideningInPlaceTiles<V, MR>, NV, MR>(set.widening_in_place_tiles);
  // One row as many vectors wide as the table holds: more sums to hide the FMA's latency.
  fill_row<WideningInPlaceTiles<V, MR>, 1>(set.widening_in_place_tiles,
                                           std::make_integer_sequence<int, KernelSet::kMaxVectors>{});
  // Where the tiles ran faster than packing B (on a Zen 4, `cpu_matmul --b-transposed`):
  // on AVX-512 up to 16 rows (f32 over 768 x 3072: eight at 72 GFLOP/s against 62 packed,
  // 16 at 94 against 80; bf16 widened, 16 at 90 against 61); on AVX2 up to eight, whose
  // sums fill its 16 registers (f32: six at 70 against 53, eight at 55 against 53; bf16
  // widened, six at 68 against 42).
  constexpr int kRows = V::width >= 16 ? KernelSet::kTransposedRows : 8;
  set.transposed_rows = kRows;
  fill_transposed<V, MR, kRows, float>(set.transposed);
  fill_transposed<V, MR, kRows, uint16_t>(set.widening_transposed);
  fill_rows<InPlaceATiles<V, RowsOfA>, NV, MR>(set.rows_of_a_tiles);
  fill_rows<InPlaceATiles<V, StepsOfA>, NV, MR>(set.steps_of_a_tiles);
  return set;
}

}  // namespace sx::device::cpu::microkernel
