// How the cpu GEMM's driver (gemm.cc) cuts a region of C into tiles and orders the
// slivers of B it packs, and the fetches into L2 ahead of the tiles that read them.
// Included by gemm.cc alone.
#pragma once

#include <algorithm>
#include <cstdint>

#include "device/cpu/products/gemm.h"

namespace sx::device::cpu::blocking {

// The tiles that a block of `rows` rows is computed in, one a sliver of packed A: whole
// slivers of mr rows, except that a last sliver under half a tile shares the rows of the
// one before it evenly. A tile of few rows has too few sums to hide its FMAs' latency
// (64 rows as 5 x 12 and 4 ran their tile of 4 at about half the FMA's rate), two of
// half a tile or more do not. Where a block has two slivers or fewer, its first tile
// stays whole: it is the one that packs B.
struct RowTiles {
  int64_t rows;
  int mr;

  int64_t count() const { return (rows + mr - 1) / mr; }
  // The first of the two tiles that share their rows, or count() where none do.
  int64_t shared() const {
    const int64_t tail = rows % mr;
    return tail > 0 && 2 * tail < mr && rows > 2 * mr ? count() - 2 : count();
  }
  // Tiles of mr rows, the first ones.
  int64_t whole() const { return std::min(rows / mr, shared()); }
  int64_t first(int64_t t) const {
    const int64_t s = shared();
    return t <= s ? t * mr : s * mr + (rows - s * mr + 1) / 2;
  }
  int height(int64_t t) const {
    const int64_t end = t + 1 < count() ? first(t + 1) : rows;
    return static_cast<int>(end - first(t));
  }
};

// A few rows (a region in place) in tiles of equal height, each packed as a sliver of its
// own: run(t, i, height) for each tile t, rows [i, i + height). A tile of one or two rows
// has too few sums to hide its multiplies' latency (13 rows run as 7 and 6, not 12 and 1;
// 8 rows in tiles of 6 as 4 and 4).
template <class Run>
void each_even_tile(int64_t rows, int mr, Run&& run) {
  const int64_t tiles = (rows + mr - 1) / mr;
  for (int64_t t = 0; t < tiles; ++t) {
    const int64_t i = rows * t / tiles;
    run(t, i, static_cast<int>(rows * (t + 1) / tiles - i));
  }
}

// A sliver of B that a product packs: rows [row, row + depth) at column col (depth 0:
// none).
struct NextSliver {
  int64_t row = 0, col = 0, depth = 0;
};

// The order in which a region packs B's slivers: panels of nc columns from col_begin,
// in each the blocks of K (kc words, of `words`), in each the slivers of nr columns.
struct SliverOrder {
  int64_t col_begin, col_end, nc, nr, kc, words;

  // The sliver packed after `s`, or none after the last.
  NextSliver after(const NextSliver& s) const {
    if (s.depth == 0) return {};
    const int64_t panel = col_begin + (s.col - col_begin) / nc * nc, panel_end = std::min(col_end, panel + nc);
    if (s.col + nr < panel_end) return {s.row, s.col + nr, s.depth};
    if (s.row + s.depth < words) return {s.row + s.depth, panel, std::min(kc, words - s.row - s.depth)};
    if (panel_end < col_end) return {0, panel_end, std::min(kc, words)};
    return {};
  }
};

// Rows [first, end) of a sliver of B, `width` bytes of rows `ld` bytes apart, fetched into
// L2: a line every 64 bytes of a row and its last byte's, so that a row that does not
// start a line (B's rows of an odd length) has every line it spans fetched. A prefetch
// never faults: columns past B's edge need no test.
inline void fetch_sliver_rows(const char* sliver, int64_t ld, int64_t width, int64_t first, int64_t end) {
  for (int64_t q = first; q < end; ++q) {
    const char* row = sliver + q * ld;
    for (int64_t at = 0; at < width - 1; at += 64) __builtin_prefetch(row + at, 0, 2);
    __builtin_prefetch(row + width - 1, 0, 2);
  }
}

// Rows [first, end) of a sliver of B (as fetch_sliver_rows) for a tile of `steps` steps
// to fetch as it computes: a row's first lines or its last every 2^shift steps, as far
// apart as fit the steps.
inline SliverFetch spread_fetch(const char* sliver, int64_t ld, int64_t width, int64_t first, int64_t end,
                                int64_t steps) {
  SliverFetch fetch{.first = sliver + first * ld, .ld = ld, .width = width, .rows = end - first};
  while (fetch.rows > 0 && (fetch.rows << (fetch.shift + 2)) <= steps) ++fetch.shift;
  return fetch;
}

}  // namespace sx::device::cpu::blocking
