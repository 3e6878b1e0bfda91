// The optimizer updates the cuda device runs by kernels of their own (codegen.h): adamw
// and sgd of f32 in every form, one element of a parameter at a time. Each value is the
// node of the update's decomposition (graph/prims/update.cc) that computes it, an IEEE
// multiply, add, divide or square root of the same operands in the same order (NVRTC
// compiles with -fmad=false, so none is fused): the reference's bits. Element i of value
// k goes to out[k * n + i], where the update's node stacks its values; every operand of
// an element is read before its values are written.
#pragma once

#include <cstdint>

#include "graph/host_device.h"
#include "graph/prims/scalar.h"

namespace sx::device::cuda {

// adamw's scalar operands, in the node's order: beta1, 1 - beta1, beta2, 1 - beta2,
// sqrt(1 - beta2^t), eps, -lr / (1 - beta1^t), and 1 - lr * weight_decay where it decays.
struct AdamwScalars {
  float beta1, rest1, beta2, rest2, bias2_sqrt, eps, neg_step, decay;
};

// m = m*beta1 + (1-beta1)*g;  v = v*beta2 + ((1-beta2)*g)*g;
// p' = p*decay + (-step * m) / (sqrt(v) / sqrt(1-beta2^t) + eps)
template <bool Decays>
SX_HOST_DEVICE void adamw_element(const float* param, const float* grad, const float* m0, const float* v0,
                                  const AdamwScalars& s, float* out, int64_t n, int64_t i) {
  using graph::prims::scalar::Div, graph::prims::scalar::Sqrt;
  float p = param[i];
  if (Decays) p = p * s.decay;
  const float g = grad[i];
  const float m = m0[i] * s.beta1 + s.rest1 * g;
  const float v = v0[i] * s.beta2 + (s.rest2 * g) * g;
  const float denom = Div{}(Sqrt{}(v), s.bias2_sqrt) + s.eps;
  out[i] = p + Div{}(s.neg_step * m, denom);
  out[n + i] = m;
  out[2 * n + i] = v;
}

// g += weight_decay * p (where it decays); with momentum, buffer = g at the run's first
// step, else buffer*momentum + g, written as the second value; p' = p + (-lr) * g.
template <bool Decays, bool Momentum>
SX_HOST_DEVICE void sgd_element(const float* param, const float* grad, float neg_step, float weight_decay,
                                const float* buffer, float momentum, bool first, float* out, int64_t n, int64_t i) {
  const float p = param[i];
  float g = grad[i];
  if (Decays) g = g + weight_decay * p;
  if (Momentum && !first) g = buffer[i] * momentum + g;
  out[i] = p + neg_step * g;
  if (Momentum) out[n + i] = g;
}

}  // namespace sx::device::cuda
