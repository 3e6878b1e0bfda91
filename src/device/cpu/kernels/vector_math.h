// The cpu device's vector kernels of exp, log, tanh, erf, logistic, sin and cos on
// f32: graph/prims/lane_math.h instantiated over AVX2 and AVX-512 vectors, so they
// give the scalar instance's bits, which are the reference kernels' (see there).
// Beside them, Philox 4x32-10 over a vector of counters (integer work: exact), and
// random_normal's f32 draw from its words (lane_math.h's normal), a rounding to
// bf16 (bf16_lanes.h), the elementwise parts of the composite kernels
// (composite_lanes.h), and the optimizer updates (update_lanes.h).
// Each file that instantiates make_math_kernels (vector_math_avx2.cc, _avx512.cc)
// is built for its instruction set, over its copy of that set's type in simd.h.
#pragma once

#include <algorithm>
#include <cstdint>

#include "device/cpu/isa.h"
#include "device/cpu/kernels/bf16_lanes.h"
#include "device/cpu/kernels/composite_lanes.h"
#include "device/cpu/kernels/update_lanes.h"
#include "graph/philox.h"
#include "graph/prims/lane_math.h"

namespace sx::device::cpu {

enum class MathFn : uint8_t { exp, log, tanh, erf, logistic, sin, cos };
inline constexpr int kMathFnCount = 7;

// y[i] = fn(x[i]) for i < n, n a multiple of the kernels' width.
using MathKernel = void (*)(const float* x, float* y, int64_t n);

// words[w][j] = word w of the Philox block at counter {lo32(first + j),
// hi32(first + j), 0, 0} under `key`, for j < n: n a multiple of the kernels'
// width, and lo32(first) + n at most 2^32 (the counters share their high word).
using PhiloxKernel = void (*)(uint64_t first, int64_t n, graph::PhiloxKey key, uint32_t* const* words);

// out[j] = lane_math::normal of words w0[j] and w1[j], for j < n: n a multiple of
// the kernels' width.
using NormalKernel = void (*)(const uint32_t* w0, const uint32_t* w1, float* out, int64_t n);

struct MathKernels {
  int width = 1;
  MathKernel fn[kMathFnCount] = {};
  PhiloxKernel philox = nullptr;
  NormalKernel normal = nullptr;
  MathKernel round_to_bf16 = nullptr;  // the composite kernels' rounding of a member to bf16, alone
  CompositeLanes composite;            // composite.cc's, in registers
  UpdateLanes update;                  // update.cc's, in registers
};

// Each defined in its own file, compiled for its instruction set: call one only on a
// host that runs it.
const MathKernels& avx2_math_kernels();
const MathKernels& avx512_math_kernels();
// The kernels of `isa`; nullptr for scalar, whose kernels are the formulas of
// graph/prims/scalar.h themselves.
const MathKernels* math_kernels_for(Isa isa);

// y[i] = f(x[i]) for i < n, F the formula of fn: the vector kernel over the whole
// vectors, the formula (the same bits) over the rest.
template <class F>
void apply_math(const MathKernels& kernels, MathFn fn, const float* x, float* y, int64_t n) {
  int64_t whole = n - n % kernels.width;
  kernels.fn[static_cast<int>(fn)](x, y, whole);
  for (int64_t i = whole; i < n; ++i) y[i] = F{}(x[i]);
}

// y = F(x) over whole vectors: by F2, F's instance over lane_math's Pair<V>, while two
// vectors fit (each_vector), then by F.
template <class V, typename V::f (*F)(typename V::f),
          typename graph::lane_math::Pair<V>::f (*F2)(typename graph::lane_math::Pair<V>::f)>
void apply_lanes(const float* x, float* y, int64_t n) {
  each_vector<V>(n, [&]<class L>(int64_t i) {
    if constexpr (L::width == V::width) L::store(y + i, F(L::load(x + i)));
    else L::store(y + i, F2(L::load(x + i)));
  });
}

// graph::philox4x32_10 on V::width counters a register, three registers at once:
// a round's products wait on the last's, and independent registers fill that wait
// (on Zen 3: one register 3.3 ms per million blocks, two 2.6, three 2.4; four spill
// AVX2's 16 registers). V::mul_wide gives the high and low words of each lane's
// 32 x 32-bit product.
template <class V>
void philox_lanes(uint64_t first, int64_t n, graph::PhiloxKey key, uint32_t* const* words) {
  using I = typename V::i;
  constexpr int kRegisters = 3;
  auto splat = [](uint32_t x) { return V::splat_i(static_cast<int32_t>(x)); };
  I high = splat(static_cast<uint32_t>(first >> 32)), zero = splat(0);
  for (int64_t j = 0; j < n; j += kRegisters * V::width) {
    auto registers = static_cast<int>(std::min<int64_t>(kRegisters, (n - j) / V::width));
    I c[kRegisters][4];
    for (int v = 0; v < kRegisters; ++v) {
      auto low = static_cast<uint32_t>(first + static_cast<uint64_t>(j + v * V::width));
      c[v][0] = V::iadd(splat(low), V::lane_index());
      c[v][1] = high, c[v][2] = zero, c[v][3] = zero;
    }
    graph::PhiloxKey k = key;
    for (int round = 0; round < graph::kPhiloxRounds; ++round) {
      for (int v = 0; v < kRegisters; ++v) {
        I hi0, lo0, hi1, lo1;
        V::mul_wide(c[v][0], graph::kPhiloxMultiplier0, hi0, lo0);
        V::mul_wide(c[v][2], graph::kPhiloxMultiplier1, hi1, lo1);
        c[v][0] = V::ixor(V::ixor(hi1, c[v][1]), splat(k[0]));
        c[v][1] = lo1;
        c[v][2] = V::ixor(V::ixor(hi0, c[v][3]), splat(k[1]));
        c[v][3] = lo0;
      }
      k[0] += graph::kPhiloxWeyl0;
      k[1] += graph::kPhiloxWeyl1;
    }
    for (int v = 0; v < registers; ++v) {
      for (int w = 0; w < 4; ++w) V::store_i(reinterpret_cast<int32_t*>(words[w] + j + v * V::width), c[v][w]);
    }
  }
}

template <class V>
void normal_lanes(const uint32_t* w0, const uint32_t* w1, float* out, int64_t n) {
  for (int64_t j = 0; j < n; j += V::width) {
    V::store(out + j, graph::lane_math::normal<V>(V::load_i(reinterpret_cast<const int32_t*>(w0 + j)),
                                                  V::load_i(reinterpret_cast<const int32_t*>(w1 + j))));
  }
}

template <class V>
MathKernels make_math_kernels() {
  namespace lm = graph::lane_math;
  using P = lm::Pair<V>;
  return {.width = V::width,
          .fn = {&apply_lanes<V, lm::exp<V>, lm::exp<P>>, &apply_lanes<V, lm::log<V>, lm::log<P>>,
                 &apply_lanes<V, lm::tanh<V>, lm::tanh<P>>, &apply_lanes<V, lm::erf<V>, lm::erf<P>>,
                 &apply_lanes<V, lm::logistic<V>, lm::logistic<P>>, &apply_lanes<V, lm::sin<V>, lm::sin<P>>,
                 &apply_lanes<V, lm::cos<V>, lm::cos<P>>},
          .philox = &philox_lanes<V>,
          .normal = &normal_lanes<V>,
          .round_to_bf16 = &apply_lanes<V, round_to_bf16<V>, round_to_bf16<P>>,
          .composite = make_composite_lanes<V>(),
          .update = make_update_lanes<V>()};
}

}  // namespace sx::device::cpu
