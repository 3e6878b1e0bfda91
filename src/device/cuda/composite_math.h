// The forward composites the cuda device runs by kernels of their own (codegen.h): softmax
// and log_softmax over a row, layer_norm and rms_norm of a row, and gelu of an element,
// stored as S (float, double or graph::Bf16) and computed in C (S's compute type: float
// for Bf16). Each computes its decomposition (graph/prims/composite.cc) step by step,
// every step's value rounded to S as that step's node stores it: the literals rounded to
// S as a cast of them rounds, the row's reductions element_math.h's (added in C from the
// first element on, as the reference adds), and exp, log, tanh and erf transcendental.h's
// (in C). So a kernel gives the bits the decomposition gives on the cuda device's
// kernels. The generated kernels run these one thread per row (or element); the host
// tests run them against the reference.
#pragma once

#include <cstdint>

#include "device/cuda/element_math.h"
#include "device/cuda/transcendental.h"
#include "graph/host_device.h"
#include "graph/prims/scalar.h"

namespace sx::device::cuda {

// A step's value v as its node stores it: rounded to S, read back in C.
template <class S, class C>
SX_HOST_DEVICE C stored(C v) {
  return static_cast<C>(S(v));
}

// A literal of the decomposition cast to S, in C (as the reference casts an f64 to S).
template <class S, class C>
SX_HOST_DEVICE C literal(double v) {
  return stored<S>(C(v));
}

// exp(x - max) of each element into y, max being the row's (reduce_max's), returned in C.
template <class S, class C>
SX_HOST_DEVICE C shifted_exps(const S* x, S* y, int64_t length) {
  const C max = static_cast<C>(row_max<S, C>(x, length));
  for (int64_t j = 0; j < length; ++j) y[j] = S(gpu::Exp{}(stored<S>(C(static_cast<C>(x[j]) - max))));
  return max;
}

// e / (sum e), e = exp(x - max x)
template <class S, class C>
SX_HOST_DEVICE void softmax_row(const S* x, S* y, int64_t length) {
  shifted_exps<S, C>(x, y, length);
  const C total = static_cast<C>(row_sum<S, C>(y, length));
  for (int64_t j = 0; j < length; ++j) y[j] = S(graph::prims::scalar::Div{}(static_cast<C>(y[j]), total));
}

// x - (max + log (sum exp(x - max)))
template <class S, class C>
SX_HOST_DEVICE void log_softmax_row(const S* x, S* y, int64_t length) {
  const C max = shifted_exps<S, C>(x, y, length);
  const C log_total = stored<S>(C(gpu::Log{}(static_cast<C>(row_sum<S, C>(y, length)))));
  const C logsumexp = stored<S>(C(max + log_total));
  for (int64_t j = 0; j < length; ++j) y[j] = S(C(static_cast<C>(x[j]) - logsumexp));
}

// The row's mean: its sum divided by its length (a literal).
template <class S, class C>
SX_HOST_DEVICE C row_mean(S total, int64_t length) {
  return stored<S>(C(graph::prims::scalar::Div{}(static_cast<C>(total), literal<S, C>(double(length)))));
}

// Each y[j] times rsqrt(mean of the squares + eps), in place: the step both norms end with.
template <class S, class C>
SX_HOST_DEVICE void scale_to_unit(S* y, int64_t length, double eps) {
  C squares = C(0);
  for (int64_t j = 0; j < length; ++j) {
    const C v = static_cast<C>(y[j]);
    squares = graph::prims::wrap_add(squares, stored<S>(C(v * v)));
  }
  const C shifted = stored<S>(C(row_mean<S, C>(S(squares), length) + literal<S, C>(eps)));
  const C inverse = stored<S>(C(graph::prims::scalar::Rsqrt{}(shifted)));
  for (int64_t j = 0; j < length; ++j) y[j] = S(C(static_cast<C>(y[j]) * inverse));
}

// y[j] times w[j] (or plus it, with Add): the weight's (the bias's) step, when w is given.
template <class S, class C, bool Add>
SX_HOST_DEVICE void apply_row(S* y, const S* w, int64_t length) {
  if (!w) return;
  for (int64_t j = 0; j < length; ++j) {
    const C a = static_cast<C>(y[j]), b = static_cast<C>(w[j]);
    y[j] = S(C(Add ? a + b : a * b));
  }
}

// (x - mean) scaled to unit, times the weight, plus the bias (each null when absent; both
// of the row's length).
template <class S, class C>
SX_HOST_DEVICE void layer_norm_row(const S* x, const S* weight, const S* bias, S* y, int64_t length, double eps) {
  const C mean = row_mean<S, C>(row_sum<S, C>(x, length), length);
  for (int64_t j = 0; j < length; ++j) y[j] = S(C(static_cast<C>(x[j]) - mean));
  scale_to_unit<S, C>(y, length, eps);
  apply_row<S, C, false>(y, weight, length);
  apply_row<S, C, true>(y, bias, length);
}

// x scaled to unit, times the weight (null when absent).
template <class S, class C>
SX_HOST_DEVICE void rms_norm_row(const S* x, const S* weight, S* y, int64_t length, double eps) {
  for (int64_t j = 0; j < length; ++j) y[j] = x[j];
  scale_to_unit<S, C>(y, length, eps);
  apply_row<S, C, false>(y, weight, length);
}

// 0.5 x (1 + tanh(0.7978845608028654 (x + 0.044715 x x x)))
template <class S, class C>
SX_HOST_DEVICE S gelu_tanh_element(S stored_x) {
  const C x = static_cast<C>(stored_x);
  const C cube = stored<S>(C(stored<S>(C(stored<S>(C(literal<S, C>(0.044715) * x)) * x)) * x));
  const C inner = stored<S>(C(literal<S, C>(0.7978845608028654) * stored<S>(C(x + cube))));
  const C curve = stored<S>(C(gpu::Tanh{}(inner)));
  return S(C(stored<S>(C(literal<S, C>(0.5) * x)) * stored<S>(C(C(1) + curve))));
}

// 0.5 x (1 + erf(x 0.7071067811865476))
template <class S, class C>
SX_HOST_DEVICE S gelu_erf_element(S stored_x) {
  const C x = static_cast<C>(stored_x);
  const C curve = stored<S>(C(gpu::Erf{}(stored<S>(C(x * literal<S, C>(0.7071067811865476))))));
  return S(C(stored<S>(C(literal<S, C>(0.5) * x)) * stored<S>(C(C(1) + curve))));
}

}  // namespace sx::device::cuda
