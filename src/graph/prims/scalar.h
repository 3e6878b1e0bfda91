// The scalar semantics of the elementwise primitives, in one place so that every
// device's kernels compute the reference's bits: integer arithmetic wraps (two's
// complement), integer division by zero gives 0, max/min propagate NaN, and a float
// converted to an integer saturates with NaN giving 0.
//
// Each elementwise primitive's formula is written here once, as a function object of
// one element (or two) in the compute type (bf16 computes in float): the reference
// kernel (prims/unary.cc, prims/binary.cc) and every device's kernels call the same
// one, so that they agree bit for bit. tests/unit/device/formula_test.cc checks it.
//
// exp, log, tanh, erf, logistic, sin and cos of f32 (and of bf16, computed in f32) are
// our own (graph/prims/lane_math.h), by its scalar instance (exp_f32, ...): the cpu
// device's vector kernels compute the same bits on every processor. f64 keeps std::'s functions, and
// pow keeps std::pow: a pow within 2 ulp needs log in more than f32 precision, which
// lane_math does not have yet.
//
// The formulas a GPU computes to the same bits (IEEE arithmetic, correctly rounded
// sqrt and division, integer and logic operations) are SX_HOST_DEVICE, for the cuda
// device's kernels (device/cuda/element.h). The others are not: exp, log, tanh, erf,
// logistic, sin and cos give lane_math's bits, and pow and f64's functions the C
// library's, which the GPU's own functions do not.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "graph/host_device.h"
#include "graph/prims/lane_math.h"

namespace sx::graph::prims {

// Integer arithmetic wraps around (two's complement), as on every device;
// floating-point arithmetic is the plain operator.
template <class C>
SX_HOST_DEVICE C wrap_add(C a, C b) {
  if constexpr (std::is_integral_v<C>) return C(uint64_t(a) + uint64_t(b));
  else return a + b;
}
template <class C>
SX_HOST_DEVICE C wrap_sub(C a, C b) {
  if constexpr (std::is_integral_v<C>) return C(uint64_t(a) - uint64_t(b));
  else return a - b;
}
template <class C>
SX_HOST_DEVICE C wrap_mul(C a, C b) {
  if constexpr (std::is_integral_v<C>) return C(uint64_t(a) * uint64_t(b));
  else return a * b;
}

template <class C>
SX_HOST_DEVICE C negate(C v) {
  if constexpr (std::is_integral_v<C>) return wrap_sub(C(0), v);
  else return -v;
}

template <class C>
SX_HOST_DEVICE C absolute(C v) {
  if constexpr (std::is_floating_point_v<C>) return std::fabs(v);
  else if constexpr (std::is_unsigned_v<C>) return v;
  else return v < 0 ? negate(v) : v;
}

template <class C>
SX_HOST_DEVICE C sign_of(C v) {
  if constexpr (std::is_unsigned_v<C>) return v > 0 ? C(1) : C(0);
  else return v > 0 ? C(1) : (v < 0 ? C(-1) : v);
}

template <class C>
SX_HOST_DEVICE C divide(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    return a / b;
  } else {
    if (b == 0) return C(0);  // integer division by zero gives 0 on every device
    if constexpr (std::is_signed_v<C>) {
      if (b == C(-1)) return wrap_sub(C(0), a);
    }
    return C(a / b);
  }
}

template <class C>
SX_HOST_DEVICE C maximum(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<C>::quiet_NaN();
  }
  return a >= b ? a : b;
}

template <class C>
SX_HOST_DEVICE C minimum(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<C>::quiet_NaN();
  }
  return a <= b ? a : b;
}

// Every conversion but a float to an integer is C++'s (two's complement wrap between
// integers).
template <class To, class From>
SX_HOST_DEVICE To convert(From v) {
  if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    if (std::isnan(v)) return To(0);
    if (v <= static_cast<From>(std::numeric_limits<To>::min())) return std::numeric_limits<To>::min();
    if (v >= static_cast<From>(std::numeric_limits<To>::max())) return std::numeric_limits<To>::max();
    return static_cast<To>(v);
  } else {
    return static_cast<To>(v);
  }
}

// The formulas, named as the primitives are. They return what the expression gives
// (the callers convert it to the compute type, or to bool for a comparison).
namespace scalar {

// Unary.
struct Neg {
  template <class C>
  SX_HOST_DEVICE auto operator()(C v) const {
    return negate(v);
  }
};
struct Abs {
  template <class C>
  SX_HOST_DEVICE auto operator()(C v) const {
    return absolute(v);
  }
};
struct Sign {
  template <class C>
  SX_HOST_DEVICE auto operator()(C v) const {
    return sign_of(v);
  }
};
struct Exp {
  template <class C>
  auto operator()(C v) const {
    if constexpr (std::is_same_v<C, float>) return lane_math::exp_f32(v);
    else return std::exp(v);
  }
};
struct Log {
  template <class C>
  auto operator()(C v) const {
    if constexpr (std::is_same_v<C, float>) return lane_math::log_f32(v);
    else return std::log(v);
  }
};
struct Sqrt {
  template <class C>
  SX_HOST_DEVICE auto operator()(C v) const {
    return std::sqrt(v);
  }
};
struct Rsqrt {
  template <class C>
  SX_HOST_DEVICE auto operator()(C v) const {
    return C(1) / std::sqrt(v);
  }
};
struct Sin {
  template <class C>
  auto operator()(C v) const {
    if constexpr (std::is_same_v<C, float>) return lane_math::sin_f32(v);
    else return std::sin(v);
  }
};
struct Cos {
  template <class C>
  auto operator()(C v) const {
    if constexpr (std::is_same_v<C, float>) return lane_math::cos_f32(v);
    else return std::cos(v);
  }
};
struct Tanh {
  template <class C>
  auto operator()(C v) const {
    if constexpr (std::is_same_v<C, float>) return lane_math::tanh_f32(v);
    else return std::tanh(v);
  }
};
struct Erf {
  template <class C>
  auto operator()(C v) const {
    if constexpr (std::is_same_v<C, float>) return lane_math::erf_f32(v);
    else return std::erf(v);
  }
};
struct Logistic {
  template <class C>
  auto operator()(C v) const {
    if constexpr (std::is_same_v<C, float>) return lane_math::logistic_f32(v);
    else return C(1) / (C(1) + std::exp(-v));
  }
};
struct LogicalNot {
  template <class C>
  SX_HOST_DEVICE auto operator()(C v) const {
    return !v;
  }
};

// Binary arithmetic and logic: the result has the operands' dtype.
struct Add {
  template <class C>
  SX_HOST_DEVICE auto operator()(C a, C b) const {
    return wrap_add(a, b);
  }
};
struct Sub {
  template <class C>
  SX_HOST_DEVICE auto operator()(C a, C b) const {
    return wrap_sub(a, b);
  }
};
struct Mul {
  template <class C>
  SX_HOST_DEVICE auto operator()(C a, C b) const {
    return wrap_mul(a, b);
  }
};
struct Div {
  template <class C>
  SX_HOST_DEVICE auto operator()(C a, C b) const {
    return divide(a, b);
  }
};
struct Pow {
  template <class C>
  auto operator()(C a, C b) const {
    return std::pow(a, b);
  }
};
struct Max {
  template <class C>
  SX_HOST_DEVICE auto operator()(C a, C b) const {
    return maximum(a, b);
  }
};
struct Min {
  template <class C>
  SX_HOST_DEVICE auto operator()(C a, C b) const {
    return minimum(a, b);
  }
};
struct LogicalAnd {
  template <class C>
  SX_HOST_DEVICE auto operator()(C a, C b) const {
    return a && b;
  }
};
struct LogicalOr {
  template <class C>
  SX_HOST_DEVICE auto operator()(C a, C b) const {
    return a || b;
  }
};

// Comparisons: the result is bool.
struct Eq {
  template <class C>
  SX_HOST_DEVICE bool operator()(C a, C b) const {
    return a == b;
  }
};
struct Ne {
  template <class C>
  SX_HOST_DEVICE bool operator()(C a, C b) const {
    return a != b;
  }
};
struct Lt {
  template <class C>
  SX_HOST_DEVICE bool operator()(C a, C b) const {
    return a < b;
  }
};
struct Le {
  template <class C>
  SX_HOST_DEVICE bool operator()(C a, C b) const {
    return a <= b;
  }
};
struct Gt {
  template <class C>
  SX_HOST_DEVICE bool operator()(C a, C b) const {
    return a > b;
  }
};
struct Ge {
  template <class C>
  SX_HOST_DEVICE bool operator()(C a, C b) const {
    return a >= b;
  }
};

}  // namespace scalar

}  // namespace sx::graph::prims
