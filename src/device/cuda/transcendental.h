// The transcendental formulas of the generated kernels (codegen.h), which NVRTC compiles
// with every function a device function (-default-device) and -fmad=false.
//
// f32 exp, log, tanh, erf and logistic are lane_math's templates over its scalar
// instance, the reference's own functions (exp_f32, ...): IEEE additions,
// multiplications, divisions, square roots and fma, each rounded once on the GPU as on
// the host, so that a kernel gives the reference's bits. f32 sin and cos are not here:
// their reduction of large arguments (lane_math.cc) is host code.
//
// f64 exp, log, tanh, erf, logistic, sin and cos, and pow of f32 and f64, are CUDA's
// libdevice functions, where the reference calls the C library's: libdevice's are within
// 1 ulp (exp, log, sin, cos, tanh, erf of f64) and 2 ulp (f64 pow; 4 ulp f32 pow) of the
// exact value, the C library's within 1 ulp, so their last bits may differ from the
// reference's (docs/devices.md lists them).
#pragma once

#include <cmath>
#include <type_traits>

#include "graph/prims/lane_math.h"

namespace sx::device::cuda::gpu {

#define SX_LANE_FORMULA(Name, lane_function, f64_expression)                      \
  struct Name {                                                                   \
    template <class C>                                                            \
    auto operator()(C v) const {                                                  \
      if constexpr (std::is_same_v<C, float>) {                                   \
        return graph::lane_math::lane_function<graph::lane_math::ScalarLanes>(v); \
      } else {                                                                    \
        return f64_expression;                                                    \
      }                                                                           \
    }                                                                             \
  };
SX_LANE_FORMULA(Exp, exp, std::exp(v))
SX_LANE_FORMULA(Log, log, std::log(v))
SX_LANE_FORMULA(Tanh, tanh, std::tanh(v))
SX_LANE_FORMULA(Erf, erf, std::erf(v))
SX_LANE_FORMULA(Logistic, logistic, C(1) / (C(1) + std::exp(-v)))
#undef SX_LANE_FORMULA

// f64 only (the kernels take no f32 sin or cos).
struct Sin {
  template <class C>
  auto operator()(C v) const {
    return std::sin(v);
  }
};
struct Cos {
  template <class C>
  auto operator()(C v) const {
    return std::cos(v);
  }
};

struct Pow {
  template <class C>
  auto operator()(C a, C b) const {
    return std::pow(a, b);
  }
};

}  // namespace sx::device::cuda::gpu
