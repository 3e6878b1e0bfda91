// The forward composites the cuda device runs by kernels of its own (codegen.h): softmax
// and log_softmax over a row, layer_norm and rms_norm of a row, and gelu of an element,
// in f32 or f64 (C). Each computes its decomposition (graph/prims/composite.cc) step by
// step, every step rounded to C as that step's node stores it: the literals rounded to
// C, the row's reductions element_math.h's (added from the first element on), and exp,
// log, tanh and erf transcendental.h's. So a kernel gives the bits the decomposition
// gives on the cuda device's kernels. The generated kernels run these one thread per
// row (or element); the host tests run them against the reference.
#pragma once

#include <cstdint>

#include "device/cuda/element_math.h"
#include "device/cuda/transcendental.h"
#include "graph/host_device.h"
#include "graph/prims/scalar.h"

namespace sx::device::cuda {

// exp(x - max) of each element into y, max being the row's (reduce_max's).
template <class C>
SX_HOST_DEVICE C shifted_exps(const C* x, C* y, int64_t length) {
  const C max = row_max<C, C>(x, length);
  for (int64_t j = 0; j < length; ++j) y[j] = gpu::Exp{}(C(x[j] - max));
  return max;
}

// e / (sum e), e = exp(x - max x)
template <class C>
SX_HOST_DEVICE void softmax_row(const C* x, C* y, int64_t length) {
  shifted_exps(x, y, length);
  const C total = row_sum<C, C>(y, length);
  for (int64_t j = 0; j < length; ++j) y[j] = graph::prims::scalar::Div{}(y[j], total);
}

// x - (max + log (sum exp(x - max)))
template <class C>
SX_HOST_DEVICE void log_softmax_row(const C* x, C* y, int64_t length) {
  const C max = shifted_exps(x, y, length);
  const C logsumexp = C(max + gpu::Log{}(row_sum<C, C>(y, length)));
  for (int64_t j = 0; j < length; ++j) y[j] = C(x[j] - logsumexp);
}

// The row's mean: its sum divided by its length (a literal, rounded to C).
template <class C>
SX_HOST_DEVICE C row_mean(C total, int64_t length) {
  return graph::prims::scalar::Div{}(total, C(double(length)));
}

// Each y[j] times rsqrt(mean of the squares + eps), in place: the step both norms end with.
template <class C>
SX_HOST_DEVICE void scale_to_unit(C* y, int64_t length, double eps) {
  C squares = C(0);
  for (int64_t j = 0; j < length; ++j) squares = graph::prims::wrap_add(squares, C(y[j] * y[j]));
  const C inverse = graph::prims::scalar::Rsqrt{}(C(row_mean(squares, length) + C(eps)));
  for (int64_t j = 0; j < length; ++j) y[j] = C(y[j] * inverse);
}

// (x - mean) scaled to unit, times the weight, plus the bias (each null when absent; both
// of the row's length).
template <class C>
SX_HOST_DEVICE void layer_norm_row(const C* x, const C* weight, const C* bias, C* y, int64_t length, double eps) {
  const C mean = row_mean(row_sum<C, C>(x, length), length);
  for (int64_t j = 0; j < length; ++j) y[j] = C(x[j] - mean);
  scale_to_unit(y, length, eps);
  if (weight) {
    for (int64_t j = 0; j < length; ++j) y[j] = C(y[j] * weight[j]);
  }
  if (bias) {
    for (int64_t j = 0; j < length; ++j) y[j] = C(y[j] + bias[j]);
  }
}

// x scaled to unit, times the weight (null when absent).
template <class C>
SX_HOST_DEVICE void rms_norm_row(const C* x, const C* weight, C* y, int64_t length, double eps) {
  for (int64_t j = 0; j < length; ++j) y[j] = x[j];
  scale_to_unit(y, length, eps);
  if (weight) {
    for (int64_t j = 0; j < length; ++j) y[j] = C(y[j] * weight[j]);
  }
}

// 0.5 x (1 + tanh(0.7978845608028654 (x + 0.044715 x x x)))
template <class C>
SX_HOST_DEVICE C gelu_tanh_element(C x) {
  const C cube = C(C(C(C(0.044715) * x) * x) * x);
  const C curve = gpu::Tanh{}(C(C(0.7978845608028654) * C(x + cube)));
  return C(C(C(0.5) * x) * C(C(1) + curve));
}

// 0.5 x (1 + erf(x 0.7071067811865476))
template <class C>
SX_HOST_DEVICE C gelu_erf_element(C x) {
  const C curve = gpu::Erf{}(C(x * C(0.7071067811865476)));
  return C(C(C(0.5) * x) * C(C(1) + curve));
}

}  // namespace sx::device::cuda
