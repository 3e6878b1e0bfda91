// The GEMM driver: blocking, packing and the split over threads (see gemm.h
// for the summation rule). Loops as BLIS orders them: columns in panels of
// nc, K in blocks of kc (B packed per block, by the first tiles that read it
// where its rows lie along memory), rows in blocks of mc (A packed per block),
// then nr-wide slivers of B and mr-tall slivers of A meet in the micro-kernel.
// A block of K after the first accumulates into C, which holds f32 between
// blocks, so the sum goes on exactly where it stopped.
#include "device/cpu/products/gemm.h"

#include <pmmintrin.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cassert>
#include <cstring>
#include <numeric>

#include "device/cpu/fusion/fusion_tiles.h"
#include "device/cpu/kernels.h"
#include "device/cpu/products/gemm_blocking.h"
#include "device/cpu/products/gemm_pairs.h"
#include "graph/tensor.h"

namespace sx::device::cpu {
namespace {

using blocking::each_even_tile;
using blocking::fetch_sliver_rows;
using blocking::NextSliver;
using blocking::RowTiles;
using blocking::SliverOrder;
using blocking::spread_fetch;

// bf16 to f32 exactly: its bits are the top half of the f32's. Inline, so
// that loops over it vectorize.
inline float widen(graph::Bf16 x) { return std::bit_cast<float>(static_cast<uint32_t>(x.bits) << 16); }

float element(const MatrixRef& m, int64_t i, int64_t j) {
  int64_t at = i * m.rows + j * m.cols;
  if (m.bf16) return widen(static_cast<const graph::Bf16*>(m.data)[at]);
  return static_cast<const float*>(m.data)[at];
}

// Row i of m's columns [col, col + n) as f32 into out; a bf16 row along memory by the
// instruction set's widening loop (the fused programs').
void read_row(const MatrixRef& m, int64_t i, int64_t col, int64_t n, float* out, Isa isa) {
  if (m.bf16 && m.cols == 1) {
    tile_kernels_for(isa).widen_bf16(static_cast<const graph::Bf16*>(m.data) + i * m.rows + col, out, n);
  } else if (m.cols == 1) {
    std::copy_n(static_cast<const float*>(m.data) + i * m.rows + col, n, out);
  } else {
    for (int64_t j = 0; j < n; ++j) out[j] = element(m, i, col + j);
  }
}

// The k a bf16 product takes at step p of a block of `depth` that starts at an even k:
// the other of p's pair, unless that lies past the block (an odd K's last term).
int64_t pair_order(int64_t p, int64_t depth) { return (p ^ 1) < depth ? p ^ 1 : p; }

// Rows [row, row + rows) of A's columns [col, col + depth) as slivers of mr
// rows: sliver s holds a[p * mr + i] for its row i and step p, step p being
// column col + order(p). Written in order, reading the sliver's rows side by side.
template <class Order>
void pack_a_steps(const KernelSet& kernels, const MatrixRef& a, int64_t row, int64_t rows, int64_t col, int64_t depth,
                  Order order, float* out) {
  const int mr = kernels.mr;
  if (a.rows == 1 && a.cols != 1) {
    // A's rows lie side by side (a transpose read in place): a step's rows are
    // contiguous, and a sliver's part of it is one run of its words. Steps are dealt
    // to the slivers kSteps at a time: their lines stay in L1 while every sliver
    // takes its part, and each sliver is written kSteps runs in a row. (A step at a
    // time, every store would go to another sliver, a sliver's length apart: a
    // stride that maps them all to a few sets of the cache. Many steps at a time,
    // their lines, a row of K apart, would do the same.)
    constexpr int64_t kSteps = 8;
    auto copy_steps = [&]<class T>(const T* base) {
      for (int64_t p0 = 0; p0 < depth; p0 += kSteps) {
        const int64_t p1 = std::min(depth, p0 + kSteps);
        for (int64_t s = 0; s * mr < rows; ++s) {
          int64_t height = std::min<int64_t>(mr, rows - s * mr);
          for (int64_t p = p0; p < p1; ++p) {
            const T* from = base + (col + order(p)) * a.cols + row + s * mr;
            float* to = out + s * mr * depth + p * mr;
            for (int64_t i = 0; i < height; ++i) to[i] = static_cast<float>(from[i]);
          }
        }
      }
    };
    if (a.bf16) copy_steps(static_cast<const graph::Bf16*>(a.data));
    else copy_steps(static_cast<const float*>(a.data));
    return;
  }
  for (int64_t s = 0; s * mr < rows; ++s) {
    int64_t height = std::min<int64_t>(mr, rows - s * mr);
    float* sliver = out + s * mr * depth;
    if (a.bf16 && a.cols == 1) {
      for (int64_t i = 0; i < height; ++i) {
        const graph::Bf16* column = static_cast<const graph::Bf16*>(a.data) + (row + s * mr + i) * a.rows + col;
        for (int64_t p = 0; p < depth; ++p) sliver[p * mr + i] = widen(column[order(p)]);
      }
      continue;
    }
    if (a.cols != 1) {
      for (int64_t p = 0; p < depth; ++p) {
        for (int64_t i = 0; i < height; ++i) sliver[p * mr + i] = element(a, row + s * mr + i, col + order(p));
      }
      continue;
    }
    // f32 rows (so steps in order): transposed by the instruction set's vectors.
    kernels.pack_transposed(depth, height, static_cast<const float*>(a.data) + (row + s * mr) * a.rows + col, a.rows,
                            sliver, mr);
  }
}

// B's rows [row, row + depth) (step p being row + order(p)) and columns
// [col, col + cols) as slivers of nr columns, zero past the last column:
// sliver s holds b[p * nr + j]. Whole slivers by the instruction set's copy,
// from B itself when it is plain f32, else from its rows widened into `wide`
// (depth x cols floats) first.
template <class Order>
void pack_b_steps(const KernelSet& kernels, const MatrixRef& b, int64_t row, int64_t depth, int64_t col, int64_t cols,
                  Order order, float* out, float* wide) {
  const int nr = kernels.nr;
  const float* src = static_cast<const float*>(b.data) + row * b.rows + col;
  int64_t ld = b.rows;
  if (b.cols != 1 && b.rows == 1 && !b.bf16) {
    // f32 columns along K (a transpose read in place; its steps in order): each
    // sliver's columns transposed by the instruction set's vectors, zero past the last.
    for (int64_t s = 0; s * nr < cols; ++s) {
      int64_t width = std::min<int64_t>(nr, cols - s * nr);
      float* sliver = out + s * depth * nr;
      const float* first = static_cast<const float*>(b.data) + row + (col + s * nr) * b.cols;
      kernels.pack_transposed(depth, width, first, b.cols, sliver, nr);
      for (int64_t p = 0; p < depth && width < nr; ++p) std::fill(sliver + p * nr + width, sliver + (p + 1) * nr, 0.0f);
    }
    return;
  }
  if (b.cols != 1 && b.rows == 1 && row % 2 == 0 && bf16_pairs::lines_of_words(b, b.cols)) {
    // bf16 columns along K (a transpose read in place) as columns of words, `order`
    // being the bf16 order.
    bf16_pairs::pack_b_widened(kernels, b, row, depth, col, cols, out, wide);
    return;
  }
  if (b.cols != 1 && b.rows == 1) {
    // bf16 columns along K (a transpose read in place) that do not lie as words: a few
    // columns at a time, read down their length side by side while the lines under them
    // stay in cache.
    constexpr int64_t kColumns = 16;
    const auto* base = static_cast<const graph::Bf16*>(b.data);
    for (int64_t j0 = 0; j0 < cols; j0 += kColumns) {
      int64_t width = std::min(kColumns, cols - j0);
      const graph::Bf16* column[kColumns];
      for (int64_t j = 0; j < width; ++j) column[j] = base + (col + j0 + j) * b.cols + row;
      for (int64_t p = 0; p < depth; ++p) {
        float* to = wide + p * cols + j0;
        const int64_t step = order(p);
        for (int64_t j = 0; j < width; ++j) to[j] = widen(column[j][step]);
      }
    }
    src = wide;
    ld = cols;
  } else if (b.bf16 || b.cols != 1) {
    for (int64_t p = 0; p < depth; ++p) read_row(b, row + order(p), col, cols, wide + p * cols, kernels.isa);
    src = wide;
    ld = cols;
  }
  int64_t whole = cols / nr;
  kernels.pack_slivers(depth, whole, src, ld, out);
  if (whole * nr == cols) return;
  int64_t width = cols - whole * nr;
  for (int64_t p = 0; p < depth; ++p) {
    float* dst = out + (whole * depth + p) * nr;
    std::copy_n(src + p * ld + whole * nr, width, dst);
    std::fill(dst + width, dst + nr, 0.0f);
  }
}

// MXCSR's flush-to-zero and denormals-are-zero for one thread's part of a bf16
// product on the f32 kernels (see gemm.h), and the caller's MXCSR back after.
class SubnormalsFlushed {
 public:
  explicit SubnormalsFlushed(bool on) : saved_(_mm_getcsr()), on_(on) {
    if (on_) _mm_setcsr(saved_ | _MM_FLUSH_ZERO_ON | _MM_DENORMALS_ZERO_ON);
  }
  ~SubnormalsFlushed() {
    if (on_) _mm_setcsr(saved_);
  }
  unsigned saved() const { return saved_; }
  SubnormalsFlushed(const SubnormalsFlushed&) = delete;
  SubnormalsFlushed& operator=(const SubnormalsFlushed&) = delete;

 private:
  unsigned saved_;
  bool on_;
};

// Up to this many rows, B is not packed: packing would cost more than it saves, with
// so few rows to use each packed element. bf16 B is widened by the tiles as they read
// it. (On a Zen 4, 8 rows over 768 x 768 ran at 85 against 63 GFLOP/s on avx2, 24 rows
// over 768 x 3072 at 71 against 98, and on avx512 16 rows at 95 against 101.)
constexpr int64_t kInPlaceRows = 12;
// Steps of K an in-place pass takes over all of C's columns before the next:
// its rows of B stream side by side, and C stays in cache between passes.
constexpr int64_t kInPlaceDepth = 32;
// The most rows of a bf16 product that go in place on the pair tiles, and the most floats
// of C over which two tiles of rows do (Gemm::in_place).
constexpr int64_t kPairsInPlaceRows = 16, kPairsInPlaceFloats = 24 * 1024;

// Up to this many slivers of B's columns, f32 A is not packed (Gemm::packed_region):
// 2 where A is resident (64 x 768 x 128 ran slower with A in place: 79 against 68% of
// the FMA's peak), 4 where A is packed a block at a time (512 and 2048 x 768 x 128 from
// 78 and 80% to 88 and 91%).
constexpr int64_t kInPlaceASlivers = 2, kInPlaceABlockSlivers = 4;

// Floats of C a streaming step covers, all rows together: they stay in L1.
constexpr int64_t kStreamFloats = 4096;

// Columns of C a streaming step of `rows` rows covers.
int64_t stream_columns(int64_t rows) { return std::max<int64_t>(64, kStreamFloats / rows / 64 * 64); }

int64_t round_up(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

// Rows of A a block packs for all of B's columns (see Gemm::Gemm).
constexpr int64_t kBlockRows = 264;

// The most words of K a block takes: kBlockRows x kc of packed A fills at most 80% of
// L2, leaving room for B's slivers. 256 to 768, in steps of 256: longer blocks of K
// pack and reload C less often, which matters most for the wide products of large
// models (bench/cpu_matmul measures them); the order of each sum is the same whatever
// the blocks.
int64_t block_words() {
  static const int64_t words = [] {
    const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    const int64_t fits = l2 > 0 ? l2 * 4 / 5 / (kBlockRows * static_cast<int64_t>(sizeof(float))) : 0;
    return std::clamp<int64_t>(fits / 256 * 256, 256, 768);
  }();
  return words;
}

// K's `words` in blocks of at most `most` words (a multiple of 16), as few as
// that allows, of equal length in whole multiples of 16 words.
int64_t even_blocks(int64_t words, int64_t most) {
  const int64_t blocks = std::max<int64_t>(1, (words + most - 1) / most);
  return std::max<int64_t>(1, round_up((words + blocks - 1) / blocks, 16));
}

// The most rows of a column of B's lines that L2 holds beside the rest, where B's rows
// lie `stride` bytes apart: rows a multiple of L2's sets apart share a set, so that a
// stride of a multiple of 4 KiB puts a column's rows in a few sets (3072 floats: 32
// sets of a Sapphire Rapids' 2048, 512 rows at 16 ways). Half the ways: the slivers
// that the tiles fetch ahead lie in those sets until their packing tile reads them,
// and the rest (packed A and B, C) takes its part of every set. Intel's processors
// only: on a Zen 4 the fetched lines survive their sets (64 x 768 x 3072 ran at 94% of
// the FMA's peak with K whole, 87% in the blocks this would choose).
int64_t rows_l2_holds(int64_t stride) {
  static const bool intel = __builtin_cpu_is("intel");
  static const std::array<long, 3> l2 = {sysconf(_SC_LEVEL2_CACHE_SIZE), sysconf(_SC_LEVEL2_CACHE_ASSOC),
                                         sysconf(_SC_LEVEL2_CACHE_LINESIZE)};
  const auto [size, ways, line] = l2;
  constexpr int64_t kAny = int64_t{1} << 40;
  if (!intel || size <= 0 || ways <= 0 || line <= 0 || stride % line != 0) return kAny;
  const int64_t sets = size / (ways * line);
  if (sets <= 0 || (sets & (sets - 1)) != 0) return kAny;  // not indexed by address bits alone
  const int64_t sets_used = sets / std::gcd(stride / line % sets, sets);
  return std::max<int64_t>(1, sets_used * ways / 2);
}

}  // namespace

const KernelSet& kernels_for(Isa isa) {
  switch (isa) {
    case Isa::avx2: return avx2_kernels();
    case Isa::avx512: return avx512_kernels();
    case Isa::avx512bf16: return avx512bf16_kernels();
    case Isa::amx: return amx_kernels();
    case Isa::scalar: break;
  }
  return scalar_kernels();
}

size_t GemmScratch::bytes() const {
  size_t floats = 0;
  for (const GemmWorkspace& ws : slots) {
    floats += ws.a_pack.size() + ws.b_pack.size() + ws.tile.size() + ws.b_row.size() + ws.b_wide.size();
  }
  size_t amx = 0;
  for (const GemmWorkspace& ws : slots) amx += ws.amx.bytes();
  return floats * sizeof(float) + amx + product.size;
}

Gemm::Gemm(const KernelSet& kernels, int64_t m, int64_t n, int64_t k, int threads, bool bf16, GemmScratch* scratch,
           int first_slot)
    : kernels_(kernels),
      m_(m),
      n_(n),
      k_(k),
      bf16_(bf16),
      amx_(bf16 && kernels.isa == Isa::amx),
      pairs_(bf16 && !amx_ && kernels.pair_tiles[0][0] != nullptr),
      words_(pairs_ ? (k + 1) / 2 : k),
      threads_(1),
      scratch_(scratch ? scratch : &own_scratch_),
      first_slot_(first_slot),
      narrow_bf16_rows_(tile_kernels_for(kernels.isa).narrow_bf16_rows),
      round_bf16_rows_(tile_kernels_for(kernels.isa).round_bf16_rows) {
  int mr = kernels.mr, nr = kernels.nr;
  // K in as few blocks as the host's L2 allows (block_words), of equal length: each
  // block costs a pass that loads and stores every tile of C. Blocks are whole
  // multiples of 16 words, so a block of bf16 steps starts a pair.
  kc_ = even_blocks(words_, block_words());
  nc_ = nr * std::max(1, 2048 / nr);
  nc_resident_ = std::max<int64_t>(nr, (64 << 10) / kc_ / nr * nr);
  // Threads take rectangles of C: rows in whole slivers of mr, columns in
  // whole slivers of nr. Of the grids that use the most threads, the one
  // that packs least (each rectangle packs its rows of A and columns of B).
  int64_t row_slivers = std::max<int64_t>(1, (m + mr - 1) / mr);
  int64_t col_slivers = std::max<int64_t>(1, (n + nr - 1) / nr);
  double best_cost = 0;
  for (int rows = 1; rows <= std::max(1, threads); ++rows) {
    int cols = std::max(1, threads) / rows;
    if (rows > row_slivers || cols > col_slivers) continue;
    double cost =
        static_cast<double>(cols) * static_cast<double>(m) + static_cast<double>(rows) * static_cast<double>(n);
    if (rows * cols > threads_ || (rows * cols == threads_ && cost < best_cost)) {
      threads_ = rows * cols;
      grid_rows_ = rows;
      grid_cols_ = cols;
      best_cost = cost;
    }
  }
  int64_t region_cols = (col_slivers + grid_cols_ - 1) / grid_cols_ * nr;
  // A region's rows in blocks of equal slivers, as few as hold 264 rows (mr 12 or 6):
  // a sequence of 128 or 256 tokens is one block, packed once for all of B, and no
  // block is a ragged few rows that stream all of B again for little work (256 rows
  // in blocks of 252 and 4 ran at 81% of peak, in one block at 87%).
  int64_t region_row_slivers = (row_slivers + grid_rows_ - 1) / grid_rows_;
  int64_t block_slivers = std::max<int64_t>(1, kBlockRows / mr);
  int64_t blocks = (region_row_slivers + block_slivers - 1) / block_slivers;
  mc_ = mr * ((region_row_slivers + blocks - 1) / blocks);
  int64_t region_rows = region_row_slivers * mr;
  resident_ = region_rows <= mc_;
  // K steps, not K's words: a region in place packs A in steps, even with pairs.
  int64_t a_floats = resident_ ? region_rows * k_ : mc_ * kc_;
  std::vector<Workspace>& slots = scratch_->slots;
  slots.resize(std::max(slots.size(), static_cast<size_t>(first_slot_ + threads_)));
  auto grow = [](LineBuffer<float>& buffer, int64_t floats) {
    if (buffer.size() < static_cast<size_t>(floats)) buffer.resize(static_cast<size_t>(floats));
  };
  for (int part = 0; part < threads_; ++part) {
    Workspace& ws = slots[static_cast<size_t>(first_slot_ + part)];
    if (amx_) {
      ws.amx.reserve(k_, region_cols);
      continue;
    }
    grow(ws.a_pack, std::max<int64_t>(1, a_floats));
    grow(ws.b_pack, kc_ * std::min(resident_ ? nc_resident_ : nc_, region_cols));  // as run_region takes panels
    grow(ws.tile, mr * nr);
    // kAxpySteps rows of a streamed block of B, or an odd K's last row of bf16 B in place
    // (as words or widened).
    grow(ws.b_row,
         std::max(kAxpySteps * std::min(region_cols, stream_columns(1)), bf16_ && k_ % 2 == 1 ? region_cols : 0));
  }
}

void Gemm::run(MatrixRef a, MatrixRef b, float* c, int64_t ldc, graph::Bf16* rounded, const BlockDone* done,
               bool rounded_in_c) {
  assert(a.bf16 == bf16_ && b.bf16 == bf16_ && !a.from_f32 && (!b.from_f32 || amx_));
  assert(!rounded_in_c || (bf16_ && !rounded));
  assert(!done || !done->whole_rows || !splits_columns());
  if (m_ == 0 || n_ == 0) return;
  int mr = kernels_.mr, nr = kernels_.nr;
  int64_t row_slivers = (m_ + mr - 1) / mr, col_slivers = (n_ + nr - 1) / nr;
  auto region = [&](int index) {
    int64_t r = index / grid_cols_, q = index % grid_cols_;
    return Region{.row_begin = std::min(m_, row_slivers * r / grid_rows_ * mr),
                  .row_end = std::min(m_, row_slivers * (r + 1) / grid_rows_ * mr),
                  .col_begin = std::min(n_, col_slivers * q / grid_cols_ * nr),
                  .col_end = std::min(n_, col_slivers * (q + 1) / grid_cols_ * nr)};
  };
  parallel_for(threads_, threads_, [&](int64_t begin, int64_t end) {
    SubnormalsFlushed flushed(bf16_);
    for (int64_t index = begin; index < end; ++index) {
      const Finish finish{.rounded = rounded,
                          .widened = rounded_in_c ? c : nullptr,
                          .done = done,
                          .part = static_cast<int>(index),
                          .caller_csr = flushed.saved()};
      run_region(region(static_cast<int>(index)), a, b, c, ldc, finish,
                 scratch_->slots[static_cast<size_t>(first_slot_ + index)]);
    }
  });
}

void Gemm::round_block(const Finish& finish, const float* values, int64_t ld, int64_t ldc, int64_t row, int64_t rows,
                       int64_t col, int64_t cols) const {
  if (finish.widened) round_bf16_rows_(values, ld, finish.widened + row * ldc + col, ldc, rows, cols);
  else narrow_bf16_rows_(values, ld, finish.rounded + row * ldc + col, ldc, rows, cols);
}

void Gemm::block_done(const Finish& finish, int64_t row, int64_t rows, int64_t col, int64_t cols) const {
  if (!bf16_) {
    (*finish.done)(finish.part, row, rows, col, cols);
    return;
  }
  const unsigned flushed = _mm_getcsr();
  _mm_setcsr(finish.caller_csr);
  (*finish.done)(finish.part, row, rows, col, cols);
  _mm_setcsr(flushed);
}

Gemm::RegionPath Gemm::path_of(int64_t rows, int64_t cols, const MatrixRef& b) const {
  if (k_ == 0) return RegionPath::empty_sum;
  if (amx_) return RegionPath::amx_tiles;  // every row, few or many: the tiles' sums are not the other kernels'
  // B whose rows do not lie along memory (a transpose read in place: x @ W^T) is
  // transposed by vectors, where reading it in place or streaming it would gather each of
  // its rows element by element (one f32 row over 768 x 3072 ran at 1.0 GFLOP/s
  // streamed, 12 packed; eight rows at 13 and 62): by the tiles of a few rows as they
  // read it, its steps along memory (that row at 18 GFLOP/s), else packed.
  if (b.cols != 1) {
    // Pairs as B's own words: an even K, and each row's steps starting a word.
    const bool words = k_ % 2 == 0 && b.cols % 2 == 0 && reinterpret_cast<uintptr_t>(b.data) % 4 == 0;
    const int most = pairs_ ? (words ? kernels_.pair_transposed_rows : 0) : kernels_.transposed_rows;
    return b.rows == 1 && resident_ && rows <= most ? RegionPath::transposed : RegionPath::packed;
  }
  if (in_place(rows, cols)) return RegionPath::in_place;
  if (rows < kernels_.mr) return RegionPath::streamed;
  return RegionPath::packed;
}

void Gemm::run_region(const Region& region, MatrixRef a, MatrixRef b, float* c, int64_t ldc, const Finish& finish,
                      Workspace& ws) {
  const int64_t rows = region.row_end - region.row_begin, cols = region.col_end - region.col_begin;
  if (rows <= 0 || cols <= 0) return;
  switch (path_of(rows, cols, b)) {
    case RegionPath::empty_sum:
      for (int64_t i = region.row_begin; i < region.row_end; ++i) {
        std::fill(c + i * ldc + region.col_begin, c + i * ldc + region.col_end, 0.0f);
      }
      break;
    case RegionPath::amx_tiles: return amx_region(region, a, b, c, ldc, finish, ws);
    case RegionPath::in_place: in_place_region(region, a, b, c, ldc, ws); break;
    case RegionPath::streamed: stream_region(region, a, b, c, ldc, ws); break;
    case RegionPath::transposed: transposed_region(region, a, b, c, ldc, ws); break;
    case RegionPath::packed: return packed_region(region, a, b, c, ldc, finish, ws);
  }
  // The paths that take the region whole: rounded and handed on after.
  if (finish.rounds()) {
    round_block(finish, c + region.row_begin * ldc + region.col_begin, ldc, ldc, region.row_begin, rows,
                region.col_begin, cols);
  }
  if (finish.done) block_done(finish, region.row_begin, rows, region.col_begin, cols);
}

void Gemm::amx_region(const Region& region, MatrixRef a, MatrixRef b, float* c, int64_t ldc, const Finish& finish,
                      Workspace& ws) const {
  // Each block is rounded and handed on as the tiles finish it, while it is in cache; a
  // rounded product's f32 sums need not reach C at all.
  const auto finished = [&](int64_t row, int64_t height, int64_t col, int64_t span, const float* values, int64_t ld) {
    if (finish.rounds()) round_block(finish, values, ld, ldc, row, height, col, span);
    if (finish.done) block_done(finish, row, height, col, span);
  };
  const AmxFinished blocks{
      .call = [](const void* callable, int64_t row, int64_t rows, int64_t col, int64_t cols, const float* values,
                 int64_t ld) { (*static_cast<const decltype(finished)*>(callable))(row, rows, col, cols, values, ld); },
      .callable = &finished,
      .whole_rows = finish.done && finish.done->whole_rows,
      .keeps_c = !finish.rounds(),
      .by_tiles = finish.done == nullptr};
  amx_product(a, b, k_, region.row_begin, region.row_end - region.row_begin, region.col_begin,
              region.col_end - region.col_begin, c, ldc, ws.amx, finish.rounds() || finish.done ? &blocks : nullptr);
}

void Gemm::packed_region(const Region& region, MatrixRef a, MatrixRef b, float* c, int64_t ldc, const Finish& finish,
                         Workspace& ws) {
  const int mr = kernels_.mr, nr = kernels_.nr, width = kernels_.width;
  const int64_t rows = region.row_end - region.row_begin;
  // Rows that fit one block of A are packed once, for every panel of B;
  // the panels are then small enough to stay in L2 while they are used.
  bool resident = resident_;
  if (!pairs_ && (b.bf16 || b.cols != 1) && ws.b_wide.size() < ws.b_pack.size()) ws.b_wide.resize(ws.b_pack.size());
  // B's steps, and one step's bytes of a sliver: where the tiles of a sliver fetch the next.
  const auto* b_bytes = static_cast<const char*>(b.data);
  const int64_t element = b.bf16 ? 2 : 4, steps_a_word = pairs_ ? 2 : 1;
  // Where A is resident, B's slivers are fetched into L2 ahead of the tiles that pack
  // them: blocks of K short enough that a sliver's rows fit the sets they fall in
  // (64 x 768 x 3072 from 72 to 78% of the FMA's peak on a Sapphire Rapids), the
  // panels of B as wide as the longer blocks'.
  int64_t kc = kc_, nc = resident ? nc_resident_ : nc_;
  if (resident && b.cols == 1) {
    kc = std::min(kc_,
                  even_blocks(words_, std::max<int64_t>(16, rows_l2_holds(b.rows * element) / steps_a_word / 16 * 16)));
    nc = std::max<int64_t>(nr, nc_resident_ * kc_ / kc / nr * nr);
  }
  const int64_t rows_padded = round_up(rows, mr);
  const auto& tiles = pairs_ ? kernels_.pair_tiles : kernels_.tiles;
  // One block of K: a tile's sums are done where it computes them, and only their
  // rounded values go to memory.
  const bool rounded_only = finish.rounds() && words_ <= kc;
  // An epilogue takes each block of rows, its panel's columns, as its last block of K
  // finishes: its packed A is not read again. (Where A is resident, the panels of B
  // still to come read it; an epilogue's reads and writes between them pushed it out of
  // L2, 5% slower than the region at its end.) Whole rows need a panel of all columns.
  // Else it takes the region at its end.
  const bool whole_rows = finish.done && finish.done->whole_rows;
  const bool by_block = finish.done && !resident && (!whole_rows || nc >= region.col_end - region.col_begin);
  // B whose rows lie along memory is packed by the tiles that first read it, its loads
  // among their FMAs, rather than in a pass before them that waits on memory (products
  // of few rows are otherwise bound by that pass): f32 as it is, bf16 widened, or as
  // words of two steps where the pair tiles run.
  const Bf16PackingTileKernel bf16_packing_tile = pairs_ ? kernels_.pair_packing_tile : kernels_.widening_packing_tile;
  // f32 A whose rows lie along memory, over a few slivers of B: each sliver of A would
  // serve so few tiles that packing it costs more than it saves (512 x 256 x 64 spent a
  // fifth of its time packing A: 69% of the FMA's peak packed, 86% in place). The tiles
  // read A's rows where they lie, and B is packed before them.
  const bool a_in_place =
      !bf16_ && (a.cols == 1 || a.rows == 1) &&
      region.col_end - region.col_begin <= (resident ? kInPlaceASlivers : kInPlaceABlockSlivers) * nr;
  const bool packs_in_tiles =
      b.cols == 1 && !a_in_place && (b.bf16 ? bf16_packing_tile != nullptr : kernels_.packing_tile != nullptr);
  for (int64_t pc = 0; pc < words_ && resident && !a_in_place; pc += kc) {
    pack_a_tiles(a, region.row_begin, rows, pc, std::min(kc, words_ - pc), ws.a_pack.data() + pc * rows_padded);
  }
  for (int64_t jc = region.col_begin; jc < region.col_end; jc += nc) {
    int64_t ncur = std::min(nc, region.col_end - jc);
    for (int64_t pc = 0; pc < words_; pc += kc) {
      int64_t kcur = std::min(kc, words_ - pc);
      bool accumulate = pc > 0, last = pc + kcur == words_;
      if (!packs_in_tiles) pack_b(b, pc, kcur, jc, ncur, ws.b_pack.data(), ws.b_wide.data());
      for (int64_t ic = region.row_begin; ic < region.row_end; ic += mc_) {
        int64_t mcur = std::min(mc_, region.row_end - ic);
        const float* a_block = ws.a_pack.data() + (resident ? pc * rows_padded : 0);
        if (!resident && !a_in_place) pack_a_tiles(a, ic, mcur, pc, kcur, ws.a_pack.data());
        const RowTiles row_tiles{mcur, mr};
        for (int64_t jr = 0; jr < ncur; jr += nr) {
          int64_t cols = std::min<int64_t>(nr, ncur - jr);
          int vectors = static_cast<int>((cols + width - 1) / width);
          bool whole = vectors * width == cols;  // no column of the tile lies past C's edge
          float* bp = ws.b_pack.data() + jr / nr * kcur * nr;
          // The first block of rows packs each sliver of B: a whole one in its first tile.
          const bool packs_here = packs_in_tiles && ic == region.row_begin;
          // (An odd K's last step has no pair: packed before, as the rest of its block.)
          const bool whole_pairs = !b.bf16 || (pairs_ ? 2 * (pc + kcur) <= k_ : kcur % 2 == 0);
          const bool packing = packs_here && cols == nr && mcur >= mr && whole_pairs;
          if (packs_here && !packing) pack_b(b, pc, kcur, jc + jr, cols, bp, ws.b_wide.data());
          // Its tiles fetch the next sliver to pack into L2, a part each: else the next
          // packing tile would wait on memory for its whole sliver, at 11 times the
          // bandwidth of the rest.
          // The sliver after next, so that its rows have the time of a whole sliver to
          // arrive: products of 64 rows of a B that lies in memory wait on it.
          NextSliver next;
          if (packs_here) {
            const SliverOrder order{region.col_begin, region.col_end, nc, nr, kc, words_};
            next = order.after(order.after({pc, jc + jr, kcur}));
          }
          const int64_t tiles_here = row_tiles.count(), fetch_depth = next.depth * steps_a_word;
          // Where A is resident (few rows, each sliver of B used by a few tiles), the whole
          // tiles after the packing one fetch it a line every few steps among their FMAs
          // (fetching_tile). Fetched at a tile's start, the lines held the tile's own
          // loads up behind them (on a Sapphire Rapids, 64 x 768 x 3072 and
          // 64 x 3072 x 768 went from 65 and 75% of the FMA's peak to 72 and 84%). Where
          // those tiles are too few to take at most a line a step, or the tiles run on
          // pairs, or A is packed a block at a time, each tile fetches its part as it starts.
          const int64_t fetchers = row_tiles.whole() - 1;
          const bool spread = resident && next.depth > 0 && !pairs_ && cols == nr && fetchers > 0 &&
                              2 * ((fetch_depth + fetchers - 1) / fetchers) <= kcur;
          const char* next_sliver = b_bytes + (next.row * steps_a_word * b.rows + next.col) * element;
          for (int64_t t = 0; t < tiles_here; ++t) {
            const int64_t ir = row_tiles.first(t);
            SliverFetch fetch;
            if (next.depth > 0 && !spread) {
              fetch_sliver_rows(next_sliver, b.rows * element, nr * element, fetch_depth * t / tiles_here,
                                fetch_depth * (t + 1) / tiles_here);
            } else if (spread && t > 0 && t <= fetchers) {
              fetch = spread_fetch(next_sliver, b.rows * element, nr * element, fetch_depth * (t - 1) / fetchers,
                                   fetch_depth * t / fetchers, kcur);
            }
            const int height = row_tiles.height(t);
            const float* ap = a_block + t * mr * kcur;
            float* cp = c + (ic + ir) * ldc + jc + jr;
            // The tile on C at `to` (row stride ld), B packed.
            auto plain = [&](float* to, int64_t ld, bool sum_on) {
              const auto* a_data = static_cast<const float*>(a.data);
              if (a_in_place && a.cols == 1) {
                kernels_.rows_of_a_tiles[height - 1][vectors - 1](kcur, a_data + (ic + ir) * a.rows + pc, a.rows, bp,
                                                                  nr, to, ld, sum_on);
              } else if (a_in_place) {
                kernels_.steps_of_a_tiles[height - 1][vectors - 1](kcur, a_data + pc * a.cols + ic + ir, a.cols, bp, nr,
                                                                   to, ld, sum_on);
              } else {
                tiles[height - 1][vectors - 1](kcur, ap, bp, nr, to, ld, sum_on);
              }
            };
            // The tile on C at `to` (row stride ld): the sliver's first packs it.
            auto compute = [&](float* to, int64_t ld, bool sum_on) {
              if (fetch.rows > 0) {
                kernels_.fetching_tile(kcur, ap, bp, nr, to, ld, sum_on, fetch);
              } else if (!packing || t > 0) {
                plain(to, ld, sum_on);
              } else if (b.bf16) {
                bf16_packing_tile(kcur, ap, static_cast<const uint16_t*>(b.data) + steps_a_word * pc * b.rows + jc + jr,
                                  b.rows, bp, to, ld, sum_on);
              } else {
                kernels_.packing_tile(kcur, ap, static_cast<const float*>(b.data) + pc * b.rows + jc + jr, b.rows, bp,
                                      to, ld, sum_on);
              }
            };
            if (rounded_only) {
              float* tile = ws.tile.data();
              compute(tile, nr, false);
              round_block(finish, tile, nr, ldc, ic + ir, height, jc + jr, cols);
              continue;
            }
            // The next tile's rows of C, while this one computes: its loads
            // start the next call, and would otherwise wait on memory.
            const int64_t next_row = ir + height,
                          next_end = t + 1 < tiles_here ? next_row + row_tiles.height(t + 1) : mcur;
            for (int64_t i = next_row; i < next_end; ++i) {
              __builtin_prefetch(c + (ic + i) * ldc + jc + jr, 1);
              __builtin_prefetch(c + (ic + i) * ldc + jc + jr + nr - 1, 1);
            }
            if (whole) {
              compute(cp, ldc, accumulate);
            } else {
              // The last columns: through a full-width tile, then copied.
              float* tile = ws.tile.data();
              for (int i = 0; i < height && accumulate; ++i)
                std::copy(cp + i * ldc, cp + i * ldc + cols, tile + i * nr);
              plain(tile, nr, accumulate);
              for (int i = 0; i < height; ++i) std::copy(tile + i * nr, tile + i * nr + cols, cp + i * ldc);
            }
            if (finish.rounds() && last) round_block(finish, cp, ldc, ldc, ic + ir, height, jc + jr, cols);
          }
        }
        if (by_block && last) block_done(finish, ic, mcur, jc, ncur);
      }
    }
  }
  if (finish.done && !by_block)
    block_done(finish, region.row_begin, rows, region.col_begin, region.col_end - region.col_begin);
}

bool Gemm::in_place(int64_t rows, int64_t cols) const {
  // Up to 16 rows (12 and 13 x 768 x 3072 ran at 79 and 77% of VDPBF16PS's peak in
  // place, 69 and 63% packed), and up to two tiles where C's rows are short (24 x 3072 x
  // 768 at 85% against 83%); 20 and 24 x 768 x 3072 ran at 75% in place, 78-80% packed.
  if (pairs_)
    return resident_ && (rows <= kPairsInPlaceRows || (rows <= 2 * kernels_.mr && rows * cols <= kPairsInPlaceFloats));
  return (rows > 1 || bf16_) && resident_ && rows <= kInPlaceRows;
}

void Gemm::pairs_in_place_region(const Region& region, MatrixRef a, MatrixRef b, float* c, int64_t ldc,
                                 Workspace& ws) const {
  const int width = kernels_.width, nr = kernels_.nr, mr = kernels_.mr;
  const int64_t rows = region.row_end - region.row_begin;
  const auto each_tile = [&](auto&& run) { each_even_tile(rows, mr, run); };
  each_tile([&](int64_t t, int64_t i, int height) {
    pack_a(a, region.row_begin + i, height, 0, words_, ws.a_pack.data() + t * mr * words_);
  });
  const int64_t vectors_end = region.col_begin + (region.col_end - region.col_begin) / width * width;
  const auto* halves = static_cast<const uint16_t*>(b.data);
  const int64_t pairs = k_ / 2;
  for (int64_t p = 0; p < pairs; p += kInPlaceDepth) {
    const int64_t kcur = std::min(kInPlaceDepth, pairs - p);
    for (int64_t j = region.col_begin; j < vectors_end;) {
      const bool whole_row = rows == 1 && kernels_.pair_in_place_row != nullptr && vectors_end - j >= 4 * nr;
      const int vectors = static_cast<int>(std::min<int64_t>(nr, vectors_end - j) / width);
      each_tile([&](int64_t t, int64_t i, int height) {
        const PairsInPlaceTileKernel kernel =
            whole_row ? kernels_.pair_in_place_row : kernels_.pair_in_place_tiles[height - 1][vectors - 1];
        kernel(kcur, ws.a_pack.data() + t * mr * words_ + p * mr, halves + 2 * p * b.rows + j, b.rows,
               c + (region.row_begin + i) * ldc + j, ldc, p > 0);
      });
      j += whole_row ? 4 * nr : nr;
    }
  }
  if (k_ % 2 == 1) {
    // An odd K's last step alone: its words made here, the high halves B's -0 as pack_b_pairs makes them.
    const int64_t cols = vectors_end - region.col_begin;
    const uint16_t* last = halves + (k_ - 1) * b.rows + region.col_begin;
    for (int64_t j = 0; j < cols; ++j) ws.b_row[j] = bf16_pairs::pair_word(last[j], bf16_pairs::kNegativeZero);
    for (int64_t j = region.col_begin; j < vectors_end; j += nr) {
      const int vectors = static_cast<int>(std::min<int64_t>(nr, vectors_end - j) / width);
      each_tile([&](int64_t t, int64_t i, int height) {
        kernels_.pair_tiles[height - 1][vectors - 1](1, ws.a_pack.data() + t * mr * words_ + pairs * mr,
                                                     ws.b_row.data() + j - region.col_begin, cols,
                                                     c + (region.row_begin + i) * ldc + j, ldc, pairs > 0);
      });
    }
  }
  if (vectors_end == region.col_end) return;
  stream_region({region.row_begin, region.row_end, vectors_end, region.col_end}, a, b, c, ldc, ws);
}

void Gemm::in_place_region(const Region& region, MatrixRef a, MatrixRef b, float* c, int64_t ldc, Workspace& ws) const {
  if (pairs_) return pairs_in_place_region(region, a, b, c, ldc, ws);
  const int width = kernels_.width, nr = kernels_.nr, mr = kernels_.mr;
  const int64_t rows = region.row_end - region.row_begin;
  const auto each_tile = [&](auto&& run) { each_even_tile(rows, mr, run); };
  each_tile([&](int64_t t, int64_t i, int height) {
    float* sliver = ws.a_pack.data() + t * mr * k_;
    if (bf16_) {
      pack_a_steps(
          kernels_, a, region.row_begin + i, height, 0, k_, [k = k_](int64_t p) { return pair_order(p, k); }, sliver);
    } else {
      pack_a(a, region.row_begin + i, height, 0, k_, sliver);
    }
  });
  int64_t vectors_end = region.col_begin + (region.col_end - region.col_begin) / width * width;
  // Each tile of these columns from step p on, `tile_cols` wide: tile(height, vectors,
  // its A, column, its C).
  auto tiles_over = [&](int64_t p, int64_t tile_cols, auto&& tile) {
    for (int64_t j = region.col_begin; j < vectors_end; j += tile_cols) {
      int vectors = static_cast<int>(std::min<int64_t>(tile_cols, vectors_end - j) / width);
      each_tile([&](int64_t t, int64_t i, int height) {
        tile(height, vectors, ws.a_pack.data() + (t * k_ + p) * mr, j, c + (region.row_begin + i) * ldc + j);
      });
    }
  };
  // f32 B read by tiles that fetch ahead along its rows (it may come from memory), bf16 B
  // by tiles that also widen it, which take whole pairs of steps; one row of bf16 by a tile
  // as wide as the table holds (one row's tile of two vectors has too few sums to hide the
  // FMA's latency).
  const int64_t tile_cols = rows == 1 && bf16_ ? KernelSet::kMaxVectors * width : nr;
  const int64_t steps = bf16_ ? k_ / 2 * 2 : k_;
  for (int64_t p = 0; p < steps; p += kInPlaceDepth) {
    const int64_t kcur = std::min(kInPlaceDepth, steps - p);
    const auto* halves = static_cast<const uint16_t*>(b.data) + p * b.rows;
    const auto* floats = static_cast<const float*>(b.data) + p * b.rows;
    tiles_over(p, tile_cols, [&](int height, int vectors, const float* ap, int64_t j, float* cp) {
      if (bf16_)
        kernels_.widening_in_place_tiles[height - 1][vectors - 1](kcur, ap, halves + j, b.rows, cp, ldc, p > 0);
      else kernels_.in_place_tiles[height - 1][vectors - 1](kcur, ap, floats + j, b.rows, cp, ldc, p > 0);
    });
  }
  if (steps < k_) {
    // An odd K's last step alone, its row widened.
    const int64_t wide_cols = vectors_end - region.col_begin;
    read_row(b, steps, region.col_begin, wide_cols, ws.b_row.data(), kernels_.isa);
    tiles_over(steps, nr, [&](int height, int vectors, const float* ap, int64_t j, float* cp) {
      kernels_.tiles[height - 1][vectors - 1](1, ap, ws.b_row.data() + j - region.col_begin, wide_cols, cp, ldc,
                                              steps > 0);
    });
  }
  if (vectors_end == region.col_end) return;
  stream_region({region.row_begin, region.row_end, vectors_end, region.col_end}, a, b, c, ldc, ws);
}

void Gemm::transposed_region(const Region& region, MatrixRef a, MatrixRef b, float* c, int64_t ldc,
                             Workspace& ws) const {
  const int64_t rows = region.row_end - region.row_begin, j = region.col_begin;
  pack_a(a, region.row_begin, rows, 0, words_, ws.a_pack.data());
  float* to = c + region.row_begin * ldc + j;
  const auto* halves = static_cast<const uint16_t*>(b.data) + j * b.cols;
  if (pairs_) {
    kernels_.pair_transposed[rows - 1](words_, ws.a_pack.data(), reinterpret_cast<const float*>(halves), b.cols / 2,
                                       region.col_end - j, to, ldc);
  } else if (bf16_) {
    kernels_.widening_transposed[rows - 1](k_, ws.a_pack.data(), halves, b.cols, region.col_end - j, to, ldc);
  } else {
    kernels_.transposed[rows - 1](k_, ws.a_pack.data(), static_cast<const float*>(b.data) + j * b.cols, b.cols,
                                  region.col_end - j, to, ldc);
  }
}

void Gemm::stream_region(const Region& region, MatrixRef a, MatrixRef b, float* c, int64_t ldc, Workspace& ws) const {
  assert(b.cols == 1);  // path_of packs any other B
  const bool plain_b = !b.bf16;
  int64_t rows = region.row_end - region.row_begin, step = stream_columns(rows);
  for (int64_t j0 = region.col_begin; j0 < region.col_end; j0 += step) {
    int64_t cols = std::min(step, region.col_end - j0);
    for (int64_t i = region.row_begin; i < region.row_end; ++i)
      std::fill(c + i * ldc + j0, c + i * ldc + j0 + cols, 0.0f);
    // kAxpySteps steps at a time, C's block loaded and stored once for them all, their
    // rows of B streaming side by side; but a step at a time where B's block is whole
    // rows shorter than a block, one run of memory that streams fastest alone. One row
    // from memory over 768 x 50257 or 4096 x 4096: 16 and 24 GB/s of B a step at a time,
    // 25 and 30 four at a time; over 3072 x 768, 42 against 21.
    const int64_t per_pass = plain_b && cols == b.rows && cols < step ? 1 : kAxpySteps;
    for (int64_t q0 = 0; q0 < k_; q0 += per_pass) {
      const int steps = static_cast<int>(std::min<int64_t>(per_pass, k_ - q0));
      int64_t p[kAxpySteps];
      for (int s = 0; s < steps; ++s) p[s] = bf16_ ? pair_order(q0 + s, k_) : q0 + s;
      const float* brows;
      int64_t ldb;
      if (plain_b) {
        brows = static_cast<const float*>(b.data) + p[0] * b.rows + j0;
        ldb = b.rows;
      } else {
        for (int s = 0; s < steps; ++s) read_row(b, p[s], j0, cols, ws.b_row.data() + s * cols, kernels_.isa);
        brows = ws.b_row.data();
        ldb = cols;
      }
      for (int64_t i = region.row_begin; i < region.row_end; ++i) {
        float coefficients[kAxpySteps];
        for (int s = 0; s < steps; ++s) coefficients[s] = element(a, i, p[s]);
        kernels_.axpy(cols, steps, coefficients, brows, ldb, c + i * ldc + j0);
      }
    }
  }
}

void Gemm::pack_a(const MatrixRef& a, int64_t row, int64_t rows, int64_t word, int64_t words, float* out) const {
  if (pairs_) {
    bf16_pairs::pack_a_pairs(kernels_, a, row, rows, word, words, k_, out);
  } else if (bf16_) {
    pack_a_steps(
        kernels_, a, row, rows, word, words, [words](int64_t p) { return pair_order(p, words); }, out);
  } else {
    pack_a_steps(
        kernels_, a, row, rows, word, words, [](int64_t p) { return p; }, out);
  }
}

void Gemm::pack_a_tiles(const MatrixRef& a, int64_t row, int64_t rows, int64_t word, int64_t words, float* out) const {
  const RowTiles tiles{rows, kernels_.mr};
  const int64_t shared = tiles.shared();
  pack_a(a, row, std::min(rows, shared * kernels_.mr), word, words, out);
  for (int64_t t = shared; t < tiles.count(); ++t)
    pack_a(a, row + tiles.first(t), tiles.height(t), word, words, out + t * kernels_.mr * words);
}

void Gemm::pack_b(const MatrixRef& b, int64_t word, int64_t words, int64_t col, int64_t cols, float* out,
                  float* wide) const {
  if (pairs_) {
    bf16_pairs::pack_b_pairs(kernels_, b, word, words, k_, col, cols, out);
  } else if (bf16_) {
    pack_b_steps(
        kernels_, b, word, words, col, cols, [words](int64_t p) { return pair_order(p, words); }, out, wide);
  } else {
    pack_b_steps(
        kernels_, b, word, words, col, cols, [](int64_t p) { return p; }, out, wide);
  }
}

}  // namespace sx::device::cpu
