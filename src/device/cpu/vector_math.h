// The cpu device's vector kernels of exp, log, tanh, erf, logistic, sin and cos on
// f32: graph/prims/lane_math.h instantiated over AVX2 and AVX-512 vectors, so they
// give the scalar instance's bits, which are the reference kernels' (see there).
// Each file that instantiates make_math_kernels (vector_math_avx2.cc, _avx512.cc)
// is built for its instruction set with a vector type local to it.
#pragma once

#include <cstdint>

#include "device/cpu/isa.h"
#include "graph/prims/lane_math.h"

namespace sx::device::cpu {

enum class MathFn : uint8_t { exp, log, tanh, erf, logistic, sin, cos };
inline constexpr int kMathFnCount = 7;

// y[i] = fn(x[i]) for i < n, n a multiple of the kernels' width.
using MathKernel = void (*)(const float* x, float* y, int64_t n);

struct MathKernels {
  int width = 1;
  MathKernel fn[kMathFnCount] = {};
};

// Each defined in its own file, compiled for its instruction set: call one only on a
// host that runs it.
const MathKernels& avx2_math_kernels();
const MathKernels& avx512_math_kernels();
// The kernels of `isa`; nullptr for scalar, whose kernels are the formulas of
// graph/prims/scalar.h themselves.
const MathKernels* math_kernels_for(Isa isa);

template <class V, typename V::f (*F)(typename V::f)>
void apply_lanes(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; i += V::width) V::store(y + i, F(V::load(x + i)));
}

template <class V>
MathKernels make_math_kernels() {
  namespace lm = graph::lane_math;
  return {.width = V::width,
          .fn = {&apply_lanes<V, lm::exp<V>>, &apply_lanes<V, lm::log<V>>, &apply_lanes<V, lm::tanh<V>>,
                 &apply_lanes<V, lm::erf<V>>, &apply_lanes<V, lm::logistic<V>>, &apply_lanes<V, lm::sin<V>>,
                 &apply_lanes<V, lm::cos<V>>}};
}

}  // namespace sx::device::cpu
