// The optimizer updates of one parameter (update.cc) over V (graph/prims/lane_math.h's
// contract): adamw and sgd in each of their forms, each value of an element computed in
// registers from one read of the parameter, the gradient and the state. Every member is
// the node of the decomposition (graph/prims/update.cc) that computes it, an IEEE
// multiply, add, divide or square root of the same operands in the same order, never
// fused: every instance (the scalar one and each instruction set's, built with
// -ffp-contract=off) gives the decomposition's bits. Each element's operands are all read
// before its values are written, so a value may be written over an operand's bytes.
#pragma once

#include <array>
#include <cstdint>

namespace sx::device::cpu {

// One update's operands and where its values go, for a run of its step.
struct UpdateArgs {
  const float* param = nullptr;
  const float* grad = nullptr;
  const float* state[2] = {};  // adamw: m and v; sgd with momentum: the buffer
  float* values[3] = {};       // per value (adamw: parameter, m, v; sgd: parameter, buffer); null: not written
  // The scalar operands: adamw's beta1, 1 - beta1, beta2, 1 - beta2, sqrt(1 - beta2^t),
  // eps, -lr / (1 - beta1^t) and 1 - lr * weight_decay; sgd's -lr, weight_decay and momentum.
  float scalars[8] = {};
  float grad_scale = 1;  // the gradient's factor, where the step scales it
  bool first = false;    // sgd with momentum: the run's first step (the buffer starts as the gradient)
};

// Elements [begin, begin + count) of an update; count a multiple of the lanes' width.
using UpdateKernel = void (*)(const UpdateArgs& a, int64_t begin, int64_t count);

template <class V>
void store_value(float* into, int64_t at, typename V::f value) {
  if (into != nullptr) V::store(into + at, value);
}

// m = m*beta1 + (1-beta1)*g;  v = v*beta2 + ((1-beta2)*g)*g;
// p' = p*decay + (-step * m) / (sqrt(v) / sqrt(1-beta2^t) + eps)
template <class V, bool Decays, bool Scaled>
void adamw_lanes(const UpdateArgs& a, int64_t begin, int64_t count) {
  using F = typename V::f;
  const F beta1 = V::splat(a.scalars[0]), rest1 = V::splat(a.scalars[1]), beta2 = V::splat(a.scalars[2]),
          rest2 = V::splat(a.scalars[3]), bias2_sqrt = V::splat(a.scalars[4]), eps = V::splat(a.scalars[5]),
          neg_step = V::splat(a.scalars[6]), decay = V::splat(a.scalars[7]), scale = V::splat(a.grad_scale);
  for (int64_t i = begin; i < begin + count; i += V::width) {
    F p = V::load(a.param + i);
    if constexpr (Decays) p = V::mul(p, decay);
    F g = V::load(a.grad + i);
    if constexpr (Scaled) g = V::mul(g, scale);
    const F m = V::add(V::mul(V::load(a.state[0] + i), beta1), V::mul(rest1, g));
    const F v = V::add(V::mul(V::load(a.state[1] + i), beta2), V::mul(V::mul(rest2, g), g));
    const F denom = V::add(V::div(V::sqrt(v), bias2_sqrt), eps);
    store_value<V>(a.values[0], i, V::add(p, V::div(V::mul(neg_step, m), denom)));
    store_value<V>(a.values[1], i, m);
    store_value<V>(a.values[2], i, v);
  }
}

// g += weight_decay * p;  buffer = g at the first step, else buffer*momentum + g;
// p' = p + (-lr) * buffer (or * g without momentum)
template <class V, bool Decays, bool Momentum, bool Scaled>
void sgd_lanes(const UpdateArgs& a, int64_t begin, int64_t count) {
  using F = typename V::f;
  const F neg_step = V::splat(a.scalars[0]), weight_decay = V::splat(a.scalars[1]), factor = V::splat(a.scalars[2]),
          scale = V::splat(a.grad_scale);
  const bool combines = Momentum && !a.first;
  for (int64_t i = begin; i < begin + count; i += V::width) {
    const F p = V::load(a.param + i);
    F g = V::load(a.grad + i);
    if constexpr (Scaled) g = V::mul(g, scale);
    if constexpr (Decays) g = V::add(g, V::mul(weight_decay, p));
    if (combines) g = V::add(V::mul(V::load(a.state[0] + i), factor), g);
    store_value<V>(a.values[0], i, V::add(p, V::mul(neg_step, g)));
    if constexpr (Momentum) store_value<V>(a.values[1], i, g);
  }
}

// Indexed [decays][scaled], and sgd's [decays][momentum][scaled].
struct UpdateLanes {
  std::array<std::array<UpdateKernel, 2>, 2> adamw{};
  std::array<std::array<std::array<UpdateKernel, 2>, 2>, 2> sgd{};
};

template <class V>
UpdateLanes make_update_lanes() {
  return {.adamw = {{{&adamw_lanes<V, false, false>, &adamw_lanes<V, false, true>},
                     {&adamw_lanes<V, true, false>, &adamw_lanes<V, true, true>}}},
          .sgd = {{{{{&sgd_lanes<V, false, false, false>, &sgd_lanes<V, false, false, true>},
                     {&sgd_lanes<V, false, true, false>, &sgd_lanes<V, false, true, true>}}},
                   {{{&sgd_lanes<V, true, false, false>, &sgd_lanes<V, true, false, true>},
                     {&sgd_lanes<V, true, true, false>, &sgd_lanes<V, true, true, true>}}}}}};
}

}  // namespace sx::device::cpu
