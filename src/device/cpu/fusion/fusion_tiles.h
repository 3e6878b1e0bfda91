// The kernels a fused program (fusion.h) computes its members' tiles with: per
// primitive, a loop over a tile vectorized for the instruction set (fusion_tiles.cc),
// or the vector math kernels for exp, log, tanh, erf, logistic, sin and cos.
#pragma once

#include <array>
#include <cstdint>

#include "device/cpu/isa.h"
#include "device/cpu/kernels/vector_math.h"
#include "graph/primitive.h"

namespace sx::device::cpu {

// o[i] from x[0][i] (x[1][i], x[2][i]) for i < n, bools as 0 and 1. `kernels`: the
// vector math kernels of the instruction set, null for the scalar formulas.
using TileFn = void (*)(const float* const* x, float* o, int64_t n, const MathKernels* kernels);

// A binary TileFn over `rows` rows of `length` elements whose operand x[row_source] holds
// one value a row: o[r * length + i] from x[0][...] and x[1][...], the row's value
// standing for each element of its row.
using RowTileFn = void (*)(const float* const* x, int row_source, float* o, int64_t rows, int64_t length);

struct TileKernels {
  std::array<TileFn, graph::kPrimitiveCount> by_primitive{};              // null: no tile kernel
  std::array<RowTileFn, graph::kPrimitiveCount> by_primitive_with_row{};  // null: spread the row's value
  void (*round_to_bf16)(float* o, int64_t n) = nullptr;                   // each value rounded to bf16, in place
  // out[r] = row_sum (row_reduce.h) of x's row r of `length`, for r < rows.
  void (*row_sums)(const float* x, int64_t rows, int64_t length, float* out) = nullptr;
  // o[r * length + i] = values[r] for r < rows, i < length.
  void (*spread)(const float* values, int64_t rows, int64_t length, float* o) = nullptr;
  // Contiguous operands to f32, and results from f32 to their dtypes.
  void (*widen_bf16)(const graph::Bf16* x, float* o, int64_t n) = nullptr;
  void (*widen_bool)(const bool* x, float* o, int64_t n) = nullptr;
  void (*narrow_bf16)(const float* x, graph::Bf16* o, int64_t n) = nullptr;
  // `rows` rows of n values, x's rows x_stride apart and o's o_stride: a product's tile
  // or block in one call.
  void (*narrow_bf16_rows)(const float* x, int64_t x_stride, graph::Bf16* o, int64_t o_stride, int64_t rows,
                           int64_t n) = nullptr;
  // narrow_bf16_rows's values widened back to f32 (their bits the halves' followed by
  // zeros) into o, which may be x: a bf16 product's result that only a cast to f32 reads.
  void (*round_bf16_rows)(const float* x, int64_t x_stride, float* o, int64_t o_stride, int64_t rows,
                          int64_t n) = nullptr;
  void (*narrow_bool)(const float* x, bool* o, int64_t n) = nullptr;
};

// The kernels compiled for `isa`: call them only on a host that runs it.
const TileKernels& tile_kernels_for(Isa isa);

}  // namespace sx::device::cpu
