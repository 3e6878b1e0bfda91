// The indexing primitives of the generated kernels (gather, scatter_add, one_hot, iota),
// one GPU thread per result element; the host tests call them too.
//
// gather and scatter_add see their operand as [outer, length, inner], the gathered axis
// in the middle, and the indices as `count` places of it. A scatter_add thread adds, to
// its element of the operand, every update that lands there, in the order of the
// indices, as the reference adds them: a fixed order and no atomic additions, so the
// bits are the reference's whatever the batch. Where the reference stops the run at an
// index outside its axis (IndexOutOfRange), these cannot: gather reads 0 for it,
// scatter_add adds nothing, one_hot gives a row of zeros (docs/devices.md).
#pragma once

#include <cstdint>

#include "graph/host_device.h"
#include "graph/prims/scalar.h"

namespace sx::device::cuda {

struct GatherGeometry {
  int64_t count = 0;   // indices
  int64_t length = 0;  // of the gathered axis
  int64_t inner = 1;   // elements after it
};

// Element o of gather's result, [outer, count, inner].
template <class S, class I>
SX_HOST_DEVICE S gather_element(const S* x, const I* indices, GatherGeometry g, int64_t o) {
  int64_t s = o % g.inner, rest = o / g.inner;
  int64_t k = rest % g.count, p = rest / g.count;
  auto a = static_cast<int64_t>(indices[k]);
  if (a < 0 || a >= g.length) return S(0);
  return x[(p * g.length + a) * g.inner + s];
}

// Element t of scatter_add's result: x's, plus each update whose index is t's place of
// the axis, in the indices' order, added in C.
template <class S, class C, class I>
SX_HOST_DEVICE S scatter_add_element(const S* x, const I* indices, const S* updates, GatherGeometry g, int64_t t) {
  int64_t s = t % g.inner, rest = t / g.inner;
  int64_t a = rest % g.length, p = rest / g.length;
  C acc = static_cast<C>(x[t]);
  for (int64_t k = 0; k < g.count; ++k) {
    if (static_cast<int64_t>(indices[k]) == a) {
      acc = graph::prims::wrap_add(acc, static_cast<C>(updates[(p * g.count + k) * g.inner + s]));
    }
  }
  return S(acc);
}

// Element o of one_hot's result, [indices, depth]: 1 where the index is o's place.
template <class T, class I>
SX_HOST_DEVICE T one_hot_element(const I* indices, int64_t depth, int64_t o) {
  return static_cast<int64_t>(indices[o / depth]) == o % depth ? T(1) : T(0);
}

// Element o of iota's result: its place along the axis of `length`, `inner` elements
// after it, converted as the reference converts it (from a double, saturating).
template <class T>
SX_HOST_DEVICE T iota_element(int64_t length, int64_t inner, int64_t o) {
  return graph::prims::convert<T>(static_cast<double>((o / inner) % length));
}

}  // namespace sx::device::cuda
