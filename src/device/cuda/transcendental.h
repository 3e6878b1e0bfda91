// The transcendental formulas of the generated kernels (codegen.h), which NVRTC compiles
// with every function a device function (-default-device) and -fmad=false.
//
// f32 exp, log, tanh, erf, logistic, sin and cos (and bf16's, computed in f32) are
// lane_math's templates over its scalar instance, the reference's own functions
// (exp_f32, ...): IEEE additions, multiplications, divisions, square roots and fma, each
// rounded once on the GPU as on the host, so that a kernel gives the reference's bits.
// sin's and cos's exact reduction of large arguments is graph/prims/pio2_reduction.h's,
// on the host as in the kernels.
//
// f64 exp, log, tanh, erf, logistic, sin and cos, and pow of f32 (and bf16) and f64, are
// CUDA's libdevice functions, where the reference calls the C library's: libdevice's are within
// 1 ulp (exp, log, sin, cos, tanh, erf of f64) and 2 ulp (f64 pow; 4 ulp f32 pow) of the
// exact value, the C library's within 1 ulp, so their last bits may differ from the
// reference's (docs/devices.md lists them).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "graph/host_device.h"
#include "graph/prims/lane_math.h"
#include "graph/prims/pio2_reduction.h"

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
SX_LANE_FORMULA(Sin, sin, std::sin(v))
SX_LANE_FORMULA(Cos, cos, std::cos(v))
#undef SX_LANE_FORMULA

struct Pow {
  template <class C>
  auto operator()(C a, C b) const {
    return std::pow(a, b);
  }
};

}  // namespace sx::device::cuda::gpu

#if defined(__CUDACC_RTC__)
// lane_math's sin and cos call reduce_pio2_large, defined on the host in lane_math.cc:
// in the kernels NVRTC compiles, here, by the same function.
void sx::graph::lane_math::reduce_pio2_large(float a, float* r, int32_t* q) {
  sx::graph::lane_math::reduce_pio2_in_limbs(a, r, q);
}
#endif
