// The tile kernels of each instruction set: fusion_loops.inc compiled three times.
// This file is built for the baseline processor with floating-point contraction off
// (src/device/CMakeLists.txt); the pragmas raise the target of the loops alone, so
// no function that other files share is compiled for a wider set than the baseline.
#include "device/cpu/fusion/fusion_tiles.h"

#include "device/cpu/kernels/row_reduce.h"
#include "graph/prims/scalar.h"

namespace sx::device::cpu {
namespace {

namespace scalar = graph::prims::scalar;

namespace baseline {
#include "device/cpu/fusion/fusion_loops.inc"
}  // namespace baseline

namespace avx2 {
#pragma GCC push_options
#pragma GCC target("avx2")
#include "device/cpu/fusion/fusion_loops.inc"
#pragma GCC pop_options
}  // namespace avx2

namespace avx512 {
#pragma GCC push_options
#pragma GCC target("avx512f")
#include "device/cpu/fusion/fusion_loops.inc"
#pragma GCC pop_options
}  // namespace avx512

// The transcendental functions: the vector math kernels (already one per set), or
// the formula where the set has none.
template <class F, MathFn Fn>
void math(const float* const* x, float* o, int64_t n, const MathKernels* kernels) {
  if (kernels != nullptr) {
    apply_math<F>(*kernels, Fn, x[0], o, n);
    return;
  }
  for (int64_t i = 0; i < n; ++i) o[i] = static_cast<float>(F{}(x[0][i]));
}

// The table of one set's Loops. Built here, for the baseline: only the loops run
// the set's instructions.
template <class L>
TileKernels make_tile_kernels() {
  TileKernels k;
  auto set = [&](graph::PrimId id, TileFn fn) { k.by_primitive[graph::index_of(id)] = fn; };
  using graph::PrimId;
  set(PrimId::neg, L::template unary<scalar::Neg>);
  set(PrimId::abs, L::template unary<scalar::Abs>);
  set(PrimId::sign, L::template unary<scalar::Sign>);
  set(PrimId::sqrt, L::template unary<scalar::Sqrt>);
  set(PrimId::rsqrt, L::template unary<scalar::Rsqrt>);
  set(PrimId::cast, L::copy);  // the member's rounding to its dtype does the rest
  set(PrimId::add, L::template binary<scalar::Add>);
  set(PrimId::sub, L::template binary<scalar::Sub>);
  set(PrimId::mul, L::template binary<scalar::Mul>);
  set(PrimId::div, L::template binary<scalar::Div>);
  auto set_with_row = [&](graph::PrimId id, RowTileFn fn) { k.by_primitive_with_row[graph::index_of(id)] = fn; };
  set_with_row(PrimId::add, L::template binary_with_row<scalar::Add>);
  set_with_row(PrimId::sub, L::template binary_with_row<scalar::Sub>);
  set_with_row(PrimId::mul, L::template binary_with_row<scalar::Mul>);
  set_with_row(PrimId::div, L::template binary_with_row<scalar::Div>);
  set(PrimId::pow, L::template binary<scalar::Pow>);
  set(PrimId::max, L::template binary<scalar::Max>);
  set(PrimId::min, L::template binary<scalar::Min>);
  set(PrimId::eq, L::template compare<scalar::Eq>);
  set(PrimId::ne, L::template compare<scalar::Ne>);
  set(PrimId::lt, L::template compare<scalar::Lt>);
  set(PrimId::le, L::template compare<scalar::Le>);
  set(PrimId::gt, L::template compare<scalar::Gt>);
  set(PrimId::ge, L::template compare<scalar::Ge>);
  set(PrimId::where, L::where);
  set(PrimId::exp, math<scalar::Exp, MathFn::exp>);
  set(PrimId::log, math<scalar::Log, MathFn::log>);
  set(PrimId::sin, math<scalar::Sin, MathFn::sin>);
  set(PrimId::cos, math<scalar::Cos, MathFn::cos>);
  set(PrimId::tanh, math<scalar::Tanh, MathFn::tanh>);
  set(PrimId::erf, math<scalar::Erf, MathFn::erf>);
  set(PrimId::logistic, math<scalar::Logistic, MathFn::logistic>);
  k.round_to_bf16 = L::round_to_bf16;
  k.widen_bf16 = L::widen_bf16;
  k.widen_bool = L::widen_bool;
  k.spread = L::spread;
  k.row_sums = L::row_sums;
  k.narrow_bf16 = L::narrow_bf16;
  k.narrow_bf16_rows = L::narrow_bf16_rows;
  k.round_bf16_rows = L::round_bf16_rows;
  k.narrow_bool = L::narrow_bool;
  return k;
}

}  // namespace

const TileKernels& tile_kernels_for(Isa isa) {
  switch (isa) {
    case Isa::avx2: {
      static const TileKernels kernels = make_tile_kernels<avx2::Loops>();
      return kernels;
    }
    case Isa::avx512:
    case Isa::avx512bf16:
    case Isa::amx: {
      static const TileKernels kernels = make_tile_kernels<avx512::Loops>();
      return kernels;
    }
    case Isa::scalar: break;
  }
  static const TileKernels kernels = make_tile_kernels<baseline::Loops>();
  return kernels;
}

}  // namespace sx::device::cpu
