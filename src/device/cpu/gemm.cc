// The GEMM driver: blocking, packing and the split over threads (see gemm.h
// for the summation rule). Loops as BLIS orders them: columns in panels of
// nc, K in blocks of kc (B packed per block), rows in blocks of mc (A packed
// per block), then nr-wide slivers of B and mr-tall slivers of A meet in the
// micro-kernel. A block of K after the first accumulates into C, which holds
// f32 between blocks, so the sum goes on exactly where it stopped.
#include "device/cpu/gemm.h"

#include <algorithm>
#include <cstring>

#include "device/cpu/kernels.h"
#include "graph/tensor.h"

namespace sx::device::cpu {
namespace {

float element(const MatrixRef& m, int64_t i, int64_t j) {
  int64_t at = i * m.rows + j * m.cols;
  if (m.bf16) return static_cast<float>(static_cast<const graph::Bf16*>(m.data)[at]);
  return static_cast<const float*>(m.data)[at];
}

// Rows [row, row + rows) of A's columns [col, col + depth) as slivers of mr
// rows: sliver s holds a[p * mr + i] for its row i and column p.
void pack_a(const MatrixRef& a, int64_t row, int64_t rows, int64_t col, int64_t depth, int mr, float* out) {
  for (int64_t s = 0; s * mr < rows; ++s) {
    int64_t height = std::min<int64_t>(mr, rows - s * mr);
    float* sliver = out + s * mr * depth;
    for (int64_t i = 0; i < height; ++i) {
      int64_t r = row + s * mr + i;
      if (!a.bf16 && a.cols == 1) {
        const float* src = static_cast<const float*>(a.data) + r * a.rows + col;
        for (int64_t p = 0; p < depth; ++p) sliver[p * mr + i] = src[p];
      } else {
        for (int64_t p = 0; p < depth; ++p) sliver[p * mr + i] = element(a, r, col + p);
      }
    }
  }
}

// B's rows [row, row + depth) and columns [col, col + cols) as slivers of nr
// columns, zero past the last column: sliver s holds b[p * nr + j]. Row by
// row, so that B is read in order.
void pack_b(const MatrixRef& b, int64_t row, int64_t depth, int64_t col, int64_t cols, int nr, float* out) {
  int64_t slivers = (cols + nr - 1) / nr;
  bool plain = !b.bf16 && b.cols == 1;
  for (int64_t p = 0; p < depth; ++p) {
    const float* src = plain ? static_cast<const float*>(b.data) + (row + p) * b.rows + col : nullptr;
    for (int64_t s = 0; s < slivers; ++s) {
      int64_t width = std::min<int64_t>(nr, cols - s * nr);
      float* dst = out + (s * depth + p) * nr;
      if (plain) {
        for (int64_t j = 0; j < width; ++j) dst[j] = src[s * nr + j];
      } else {
        for (int64_t j = 0; j < width; ++j) dst[j] = element(b, row + p, col + s * nr + j);
      }
      for (int64_t j = width; j < nr; ++j) dst[j] = 0.0f;
    }
  }
}

// Columns of C a streaming step covers: its block of every row stays in L1.
constexpr int64_t kStreamColumns = 1024;

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
  int64_t region_cols = round_up((col_slivers + grid_cols_ - 1) / grid_cols_ * nr, nr);
  workspaces_.resize(static_cast<size_t>(threads_));
  for (Workspace& ws : workspaces_) {
    ws.a_pack.resize(static_cast<size_t>(mc_ * kc_));
    ws.b_pack.resize(static_cast<size_t>(kc_ * std::min(nc_, region_cols)));
    ws.tile.resize(static_cast<size_t>(mr * nr));
    ws.b_row.resize(static_cast<size_t>(std::min(region_cols, kStreamColumns)));
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

void Gemm::run_region(const Region& region, MatrixRef a, MatrixRef b, float* c, int64_t ldc, Workspace& ws) const {
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
  // One row sliver reads each B sliver once: read B in place then, unless
  // its columns are strided or bf16.
  bool packed_b = b.bf16 || b.cols != 1 || rows > mr;
  for (int64_t jc = region.col_begin; jc < region.col_end; jc += nc_) {
    int64_t ncur = std::min(nc_, region.col_end - jc);
    for (int64_t pc = 0; pc < k_; pc += kc_) {
      int64_t kcur = std::min(kc_, k_ - pc);
      bool accumulate = pc > 0;
      if (packed_b) pack_b(b, pc, kcur, jc, ncur, nr, ws.b_pack.data());
      for (int64_t ic = region.row_begin; ic < region.row_end; ic += mc_) {
        int64_t mcur = std::min(mc_, region.row_end - ic);
        pack_a(a, ic, mcur, pc, kcur, mr, ws.a_pack.data());
        for (int64_t jr = 0; jr < ncur; jr += nr) {
          int64_t cols = std::min<int64_t>(nr, ncur - jr);
          int vectors = static_cast<int>((cols + width - 1) / width);
          bool whole = vectors * width == cols;  // no column of the tile lies past C's edge
          const float* bp;
          int64_t ldb;
          if (packed_b) {
            bp = ws.b_pack.data() + jr / nr * kcur * nr;
            ldb = nr;
          } else if (whole) {
            bp = static_cast<const float*>(b.data) + pc * b.rows + jc + jr;
            ldb = b.rows;
          } else {
            pack_b(b, pc, kcur, jc + jr, cols, nr, ws.b_pack.data());
            bp = ws.b_pack.data();
            ldb = nr;
          }
          for (int64_t ir = 0; ir < mcur; ir += mr) {
            int height = static_cast<int>(std::min<int64_t>(mr, mcur - ir));
            TileKernel kernel = kernels_.tiles[height - 1][vectors - 1];
            const float* ap = ws.a_pack.data() + ir / mr * mr * kcur;
            float* cp = c + (ic + ir) * ldc + jc + jr;
            if (whole) {
              kernel(kcur, ap, bp, ldb, cp, ldc, accumulate);
              continue;
            }
            // The last columns: through a full-width tile, then copied.
            float* tile = ws.tile.data();
            for (int i = 0; i < height && accumulate; ++i) std::copy(cp + i * ldc, cp + i * ldc + cols, tile + i * nr);
            kernel(kcur, ap, bp, ldb, tile, nr, accumulate);
            for (int i = 0; i < height; ++i) std::copy(tile + i * nr, tile + i * nr + cols, cp + i * ldc);
          }
        }
      }
    }
  }
}

void Gemm::stream_region(const Region& region, MatrixRef a, MatrixRef b, float* c, int64_t ldc, Workspace& ws) const {
  bool plain_b = !b.bf16 && b.cols == 1;
  for (int64_t j0 = region.col_begin; j0 < region.col_end; j0 += kStreamColumns) {
    int64_t cols = std::min(kStreamColumns, region.col_end - j0);
    for (int64_t i = region.row_begin; i < region.row_end; ++i)
      std::fill(c + i * ldc + j0, c + i * ldc + j0 + cols, 0.0f);
    for (int64_t p = 0; p < k_; ++p) {
      const float* brow;
      if (plain_b) {
        brow = static_cast<const float*>(b.data) + p * b.rows + j0;
      } else {
        for (int64_t j = 0; j < cols; ++j) ws.b_row[static_cast<size_t>(j)] = element(b, p, j0 + j);
        brow = ws.b_row.data();
      }
      for (int64_t i = region.row_begin; i < region.row_end; ++i) {
        kernels_.axpy(cols, element(a, i, p), brow, c + i * ldc + j0);
      }
    }
  }
}

}  // namespace sx::device::cpu
