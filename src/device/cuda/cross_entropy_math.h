// cross_entropy over the last axis of logits x stored as S (float or graph::Bf16, computed
// in C) and its gradient with respect to x, as the cuda device's kernels compute them
// (codegen.h). Each follows the decomposition (graph/prims/composite.cc) node by node,
// every value stored as S as its node stores it: a checked one_hot of the targets (1 at
// the target, else 0), log_softmax of the row (composite_math.h's), their products summed
// over the row from the first on, then those row values summed over the rows in their
// order, divided by the row count and negated. The gradient is what autodiff builds
// walking back from the loss's cotangent: each row's one_hot times -g / rows, given to
// log_softmax's gradient (gradient_math.h). A target outside the classes matches no
// class: its row reads nothing outside x, and the kernel's index check stops the run.
// So the bits are the reference's; the host tests check them against it.
#pragma once

#include <cstdint>

#include "device/cuda/gradient_math.h"

namespace sx::device::cuda {

// The value of a row's log-probability of its target, picked by the one_hot: the sum over
// the row of log_softmax(x) times the one_hot, stored as S.
template <class S, class C>
SX_HOST_DEVICE C picked_log_probability(const S* x, int64_t length, int64_t target) {
  const C max = static_cast<C>(row_max<S, C>(x, length));
  const C total = summed<S, C>(
      length, [&](int64_t j) { return stored<S>(C(gpu::Exp{}(stored<S>(C(static_cast<C>(x[j]) - max))))); });
  const C logsumexp = stored<S>(C(max + stored<S>(C(gpu::Log{}(total)))));
  return summed<S, C>(length, [&](int64_t j) {
    const C log_probability = stored<S>(C(static_cast<C>(x[j]) - logsumexp));
    return stored<S>(C(log_probability * literal<S, C>(j == target ? 1.0 : 0.0)));
  });
}

// The loss: the rows' picked values summed in C from the first on, stored as S, divided by
// the row count (a literal of S) and negated.
template <class S, class C>
SX_HOST_DEVICE S cross_entropy_loss(const float* picked, int64_t rows) {
  C total = C(0);
  for (int64_t row = 0; row < rows; ++row) total = graph::prims::wrap_add(total, static_cast<C>(picked[row]));
  const C mean = stored<S>(C(graph::prims::scalar::Div{}(stored<S>(total), literal<S, C>(double(rows)))));
  return S(C(-mean));
}

// A row's cotangent of log_softmax's value: `picked` (the cotangent of the row's picked
// value) times the one_hot's 1 at the target, times its 0 elsewhere, stored as S.
template <class S, class C>
struct OneHotCotangent {
  C picked;
  C elsewhere;
  int64_t target;
  SX_HOST_DEVICE S operator[](int64_t j) const { return S(j == target ? picked : elsewhere); }
};

// A row of the gradient with respect to x, given the loss's cotangent g and the row
// count: the picked value's cotangent is (-g) / rows.
template <class S, class C>
SX_HOST_DEVICE void cross_entropy_gradient_row(const S* x, int64_t target, S g, int64_t rows, S* dx, int64_t length) {
  const C picked = stored<S>(C(graph::prims::scalar::Div{}(C(-static_cast<C>(g)), literal<S, C>(double(rows)))));
  const OneHotCotangent<S, C> cotangent{stored<S>(C(picked * literal<S, C>(1.0))),
                                        stored<S>(C(picked * literal<S, C>(0.0))), target};
  log_softmax_gradient_row<S, C>(x, cotangent, dx, length);
}

}  // namespace sx::device::cuda
