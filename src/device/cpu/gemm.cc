// The GEMM driver: blocking, packing and the split over threads (see gemm.h
// for the summation rule). Loops as BLIS orders them: columns in panels of
// nc, K in blocks of kc (B packed per block), rows in blocks of mc (A packed
// per block), then nr-wide slivers of B and mr-tall slivers of A meet in the
// micro-kernel. A block of K after the first accumulates into C, which holds
// f32 between blocks, so the sum goes on exactly where it stopped.
#include "device/cpu/gemm.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "device/cpu/kernels.h"
#include "graph/tensor.h"

namespace sx::device::cpu {
namespace {

// bf16 to f32 exactly: its bits are the top half of the f32's. Inline, so
// that loops over it vectorize.
inline float widen(graph::Bf16 x) { return std::bit_cast<float>(static_cast<uint32_t>(x.bits) << 16); }

float element(const MatrixRef& m, int64_t i, int64_t j) {
  int64_t at = i * m.rows + j * m.cols;
  if (m.bf16) return widen(static_cast<const graph::Bf16*>(m.data)[at]);
  return static_cast<const float*>(m.data)[at];
}

// Row i of m's columns [col, col + n) as f32 into out.
void read_row(const MatrixRef& m, int64_t i, int64_t col, int64_t n, float* out) {
  if (m.bf16 && m.cols == 1) {
    const graph::Bf16* src = static_cast<const graph::Bf16*>(m.data) + i * m.rows + col;
    for (int64_t j = 0; j < n; ++j) out[j] = widen(src[j]);
  } else if (m.cols == 1) {
    std::copy_n(static_cast<const float*>(m.data) + i * m.rows + col, n, out);
  } else {
    for (int64_t j = 0; j < n; ++j) out[j] = element(m, i, col + j);
  }
}

// Rows [row, row + rows) of A's columns [col, col + depth) as slivers of mr
// rows: sliver s holds a[p * mr + i] for its row i and column p. Written in
// order, reading the sliver's rows side by side.
void pack_a(const MatrixRef& a, int64_t row, int64_t rows, int64_t col, int64_t depth, int mr, float* out) {
  const float* src[KernelSet::kMaxRows];
  for (int64_t s = 0; s * mr < rows; ++s) {
    int64_t height = std::min<int64_t>(mr, rows - s * mr);
    float* sliver = out + s * mr * depth;
    if (a.bf16 && a.cols == 1) {
      for (int64_t i = 0; i < height; ++i) {
        const graph::Bf16* column = static_cast<const graph::Bf16*>(a.data) + (row + s * mr + i) * a.rows + col;
        for (int64_t p = 0; p < depth; ++p) sliver[p * mr + i] = widen(column[p]);
      }
      continue;
    }
    if (a.cols != 1) {
      for (int64_t p = 0; p < depth; ++p) {
        for (int64_t i = 0; i < height; ++i) sliver[p * mr + i] = element(a, row + s * mr + i, col + p);
      }
      continue;
    }
    for (int64_t i = 0; i < height; ++i) src[i] = static_cast<const float*>(a.data) + (row + s * mr + i) * a.rows + col;
    for (int64_t p = 0; p < depth; ++p) {
      for (int64_t i = 0; i < height; ++i) sliver[p * mr + i] = src[i][p];
    }
  }
}

// B's rows [row, row + depth) and columns [col, col + cols) as slivers of nr
// columns, zero past the last column: sliver s holds b[p * nr + j]. Whole
// slivers by the instruction set's copy, from B itself when it is plain
// f32, else from its rows widened into `wide` (depth x cols floats) first.
void pack_b(const KernelSet& kernels, const MatrixRef& b, int64_t row, int64_t depth, int64_t col, int64_t cols,
            float* out, float* wide) {
  const int nr = kernels.nr;
  const float* src = static_cast<const float*>(b.data) + row * b.rows + col;
  int64_t ld = b.rows;
  if (b.bf16 || b.cols != 1) {
    for (int64_t p = 0; p < depth; ++p) read_row(b, row + p, col, cols, wide + p * cols);
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

// Floats of C a streaming step covers, all rows together: they stay in L1.
constexpr int64_t kStreamFloats = 4096;

// Columns of C a streaming step of `rows` rows covers.
int64_t stream_columns(int64_t rows) { return std::max<int64_t>(64, kStreamFloats / rows / 64 * 64); }

int64_t round_up(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

}  // namespace

const KernelSet& kernels_for(Isa isa) {
  switch (isa) {
    case Isa::avx2: return avx2_kernels();
    case Isa::avx512: return avx512_kernels();
    case Isa::scalar: break;
  }
  return scalar_kernels();
}

Gemm::Gemm(const KernelSet& kernels, int64_t m, int64_t n, int64_t k, int threads)
    : kernels_(kernels), m_(m), n_(n), k_(k), threads_(1) {
  int mr = kernels.mr, nr = kernels.nr;
  // kc rows of an nr-wide B sliver stay in L1 across the row slivers; an
  // mc x kc block of A stays in L2 across the column slivers.
  kc_ = std::clamp<int64_t>(k, 1, 256);
  mc_ = mr * std::max(1, 128 / mr);
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
  int64_t region_rows = (row_slivers + grid_rows_ - 1) / grid_rows_ * mr;
  resident_ = region_rows <= mc_;
  int64_t a_floats = resident_ ? region_rows * k : mc_ * kc_;
  workspaces_.resize(static_cast<size_t>(threads_));
  for (Workspace& ws : workspaces_) {
    ws.a_pack.resize(static_cast<size_t>(std::max<int64_t>(1, a_floats)));
    ws.b_pack.resize(static_cast<size_t>(kc_ * std::min(nc_, region_cols)));
    ws.tile.resize(static_cast<size_t>(mr * nr));
    ws.b_row.resize(static_cast<size_t>(std::min(region_cols, stream_columns(1))));
  }
}

void Gemm::run(MatrixRef a, MatrixRef b, float* c, int64_t ldc) {
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
    for (int64_t index = begin; index < end; ++index) {
      run_region(region(static_cast<int>(index)), a, b, c, ldc, workspaces_[static_cast<size_t>(index)]);
    }
  });
}

void Gemm::run_region(const Region& region, MatrixRef a, MatrixRef b, float* c, int64_t ldc, Workspace& ws) {
  const int mr = kernels_.mr, nr = kernels_.nr, width = kernels_.width;
  int64_t rows = region.row_end - region.row_begin;
  if (rows <= 0 || region.col_end <= region.col_begin) return;
  if (k_ == 0) {
    for (int64_t i = region.row_begin; i < region.row_end; ++i) {
      std::fill(c + i * ldc + region.col_begin, c + i * ldc + region.col_end, 0.0f);
    }
    return;
  }
  if (rows < mr) {
    stream_region(region, a, b, c, ldc, ws);
    return;
  }
  // Rows that fit one block of A are packed once, for every panel of B;
  // the panels are then small enough to stay in L2 while they are used.
  bool resident = resident_;
  if ((b.bf16 || b.cols != 1) && ws.b_wide.size() < ws.b_pack.size()) ws.b_wide.resize(ws.b_pack.size());
  int64_t nc = resident ? nc_resident_ : nc_, rows_padded = round_up(rows, mr);
  for (int64_t pc = 0; pc < k_ && resident; pc += kc_) {
    pack_a(a, region.row_begin, rows, pc, std::min(kc_, k_ - pc), mr, ws.a_pack.data() + pc * rows_padded);
  }
  for (int64_t jc = region.col_begin; jc < region.col_end; jc += nc) {
    int64_t ncur = std::min(nc, region.col_end - jc);
    for (int64_t pc = 0; pc < k_; pc += kc_) {
      int64_t kcur = std::min(kc_, k_ - pc);
      bool accumulate = pc > 0;
      pack_b(kernels_, b, pc, kcur, jc, ncur, ws.b_pack.data(), ws.b_wide.data());
      for (int64_t ic = region.row_begin; ic < region.row_end; ic += mc_) {
        int64_t mcur = std::min(mc_, region.row_end - ic);
        const float* a_block = ws.a_pack.data() + (resident ? pc * rows_padded : 0);
        if (!resident) pack_a(a, ic, mcur, pc, kcur, mr, ws.a_pack.data());
        for (int64_t jr = 0; jr < ncur; jr += nr) {
          int64_t cols = std::min<int64_t>(nr, ncur - jr);
          int vectors = static_cast<int>((cols + width - 1) / width);
          bool whole = vectors * width == cols;  // no column of the tile lies past C's edge
          const float* bp = ws.b_pack.data() + jr / nr * kcur * nr;
          for (int64_t ir = 0; ir < mcur; ir += mr) {
            int height = static_cast<int>(std::min<int64_t>(mr, mcur - ir));
            TileKernel kernel = kernels_.tiles[height - 1][vectors - 1];
            const float* ap = a_block + ir / mr * mr * kcur;
            float* cp = c + (ic + ir) * ldc + jc + jr;
            // The next tile's rows of C, while this one computes: its loads
            // start the next call, and would otherwise wait on memory.
            for (int64_t i = ir + mr; i < std::min(mcur, ir + 2 * mr); ++i) {
              __builtin_prefetch(c + (ic + i) * ldc + jc + jr, 1);
              __builtin_prefetch(c + (ic + i) * ldc + jc + jr + nr - 1, 1);
            }
            if (whole) {
              kernel(kcur, ap, bp, nr, cp, ldc, accumulate);
              continue;
            }
            // The last columns: through a full-width tile, then copied.
            float* tile = ws.tile.data();
            for (int i = 0; i < height && accumulate; ++i) std::copy(cp + i * ldc, cp + i * ldc + cols, tile + i * nr);
            kernel(kcur, ap, bp, nr, tile, nr, accumulate);
            for (int i = 0; i < height; ++i) std::copy(tile + i * nr, tile + i * nr + cols, cp + i * ldc);
          }
        }
      }
    }
  }
}

void Gemm::stream_region(const Region& region, MatrixRef a, MatrixRef b, float* c, int64_t ldc, Workspace& ws) const {
  bool plain_b = !b.bf16 && b.cols == 1;
  int64_t rows = region.row_end - region.row_begin, step = stream_columns(rows);
  for (int64_t j0 = region.col_begin; j0 < region.col_end; j0 += step) {
    int64_t cols = std::min(step, region.col_end - j0);
    for (int64_t i = region.row_begin; i < region.row_end; ++i)
      std::fill(c + i * ldc + j0, c + i * ldc + j0 + cols, 0.0f);
    for (int64_t p = 0; p < k_; ++p) {
      const float* brow;
      if (plain_b) {
        brow = static_cast<const float*>(b.data) + p * b.rows + j0;
      } else {
        read_row(b, p, j0, cols, ws.b_row.data());
        brow = ws.b_row.data();
      }
      for (int64_t i = region.row_begin; i < region.row_end; ++i) {
        kernels_.axpy(cols, element(a, i, p), brow, c + i * ldc + j0);
      }
    }
  }
}

}  // namespace sx::device::cpu
