// The indexing primitives of the generated kernels (gather, scatter_add, one_hot, iota),
// one GPU thread per result element; the host tests call them too.
//
// gather and scatter_add see their operand as [outer, length, inner], the gathered axis
// in the middle, and the indices as `count` places of it. A scatter_add thread adds, to
// its element of the operand, every update that lands there, in the order of the
// indices, as the reference adds them: a fixed order and no atomic additions, so the
// bits are the reference's whatever the batch. The scanning kernel's thread reads every
// index for its element; the sorted scatter_add (scatter_add.h) finds each element's
// updates by sorting the indices once. A kernel cannot stop at an index outside
// its axis: it records the first one in an IndexFault, which the plan turns into the
// reference's IndexOutOfRange once the run is done; meanwhile gather reads 0 for it,
// scatter_add adds nothing and one_hot gives a row of zeros, touching no memory outside.
#pragma once

#include <cstdint>

#include "graph/host_device.h"
#include "graph/prims/scalar.h"

namespace sx::device::cuda {

// The first index outside its axis that a run's kernels meet, in device memory zeroed
// before each run: the one of the lowest node and, in that node's indices, the lowest
// flat position, as the cpu device finds it (its steps run in the graph's order and
// check each node's indices in order), whatever order the GPU's threads run in. A rank
// orders them, the first having the largest. `first` holds the largest rank met so far
// (an atomicMax, so that a thread met after an earlier index stops there, and few take
// the lock); `recorded` and `value` are the index's, written together under `lock`.
struct IndexFault {
  unsigned long long first;
  unsigned long long recorded;  // 0 while none is
  long long value;
  int lock;
};

// A rank's fields: the node in the bits above kFaultPositionBits (of which the top one
// stays 0, so that no rank is 0), the position in those below.
inline constexpr int kFaultPositionBits = 40;
inline constexpr uint32_t kMostFaultNodes = uint32_t{1} << (63 - kFaultPositionBits);

SX_HOST_DEVICE inline unsigned long long fault_rank(uint32_t node, int64_t position) {
  return ~((static_cast<unsigned long long>(node) << kFaultPositionBits) | static_cast<unsigned long long>(position));
}
SX_HOST_DEVICE inline uint32_t fault_node(unsigned long long rank) {
  return static_cast<uint32_t>(~rank >> kFaultPositionBits);
}
SX_HOST_DEVICE inline int64_t fault_position(unsigned long long rank) {
  return static_cast<int64_t>(~rank & ((1ull << kFaultPositionBits) - 1));
}

// Whether `index` is outside [0, length), as the cpu device's check_indices decides:
// unsigned, so that a negative index is above every length.
template <class I>
SX_HOST_DEVICE bool index_outside(I index, int64_t length) {
  return static_cast<uint64_t>(static_cast<int64_t>(index)) >= static_cast<uint64_t>(length);
}

// Records `value`, at `position` of node `node`'s indices, unless `fault` holds an
// earlier one. On the host (the tests) one thread records at a time.
SX_HOST_DEVICE inline void record_index_fault(IndexFault* fault, uint32_t node, int64_t position, int64_t value) {
  const unsigned long long rank = fault_rank(node, position);
#ifdef __CUDA_ARCH__
  if (atomicMax(&fault->first, rank) >= rank) return;
  while (atomicCAS(&fault->lock, 0, 1) != 0) {
  }
  __threadfence();
  volatile IndexFault* held = fault;
  if (held->recorded < rank) {
    held->recorded = rank;
    held->value = value;
  }
  __threadfence();
  atomicExch(&fault->lock, 0);
#else
  if (fault->recorded >= rank) return;
  fault->first = fault->recorded = rank;
  fault->value = value;
#endif
}

// Index j of node `node`'s indices, recorded in `fault` when it is outside [0, length).
template <class I>
SX_HOST_DEVICE void check_index(IndexFault* fault, uint32_t node, const I* indices, int64_t j, int64_t length) {
  if (index_outside(indices[j], length)) record_index_fault(fault, node, j, static_cast<int64_t>(indices[j]));
}

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

// One addition of scatter_add, as the reference makes it: in C, the sum stored in S
// (bf16 rounds after each addition, not once at the end).
template <class S, class C>
SX_HOST_DEVICE S scatter_add_one(S sum, S update) {
  return S(graph::prims::wrap_add(static_cast<C>(sum), static_cast<C>(update)));
}

// Element t of scatter_add's result: x's, plus each update whose index is t's place of
// the axis, in the indices' order.
template <class S, class C, class I>
SX_HOST_DEVICE S scatter_add_element(const S* x, const I* indices, const S* updates, GatherGeometry g, int64_t t) {
  int64_t s = t % g.inner, rest = t / g.inner;
  int64_t a = rest % g.length, p = rest / g.length;
  S sum = x[t];
  for (int64_t k = 0; k < g.count; ++k) {
    if (static_cast<int64_t>(indices[k]) == a) {
      sum = scatter_add_one<S, C>(sum, updates[(p * g.count + k) * g.inner + s]);
    }
  }
  return sum;
}

// scatter_add by sorting (scatter_add.h): index k's slot is its place along the axis,
// or `length` for an index outside it, which sorts after the others and is added
// nowhere. The (slot, k) pairs sorted stably by slot give each slot's run of positions in
// the indices' order.
template <class I>
SX_HOST_DEVICE uint32_t scatter_slot(I index, int64_t length) {
  return static_cast<uint32_t>(index_outside(index, length) ? length : static_cast<int64_t>(index));
}

// Thread t's work over the sorted pairs, t being (p, j, s) of [outer, count, inner]: where
// sorted position j begins a run of one slot of the axis, the run's updates added, in
// their positions' order, to out's element (p, slot, s), which holds x's. Every other
// thread does nothing, so each element of out is written by one thread at most, and its
// sum is the reference's.
template <class S, class C>
SX_HOST_DEVICE void scatter_add_run(S* out, const uint32_t* slots, const uint32_t* positions, const S* updates,
                                    GatherGeometry g, int64_t t) {
  int64_t s = t % g.inner, rest = t / g.inner;
  int64_t j = rest % g.count, p = rest / g.count;
  const uint32_t slot = slots[j];
  if (slot == g.length || (j > 0 && slots[j - 1] == slot)) return;
  S* target = out + (p * g.length + slot) * g.inner + s;
  S sum = *target;
  for (; j < g.count && slots[j] == slot; ++j) {
    sum = scatter_add_one<S, C>(sum, updates[(p * g.count + positions[j]) * g.inner + s]);
  }
  *target = sum;
}

// Element o of one_hot's result, [indices, depth]: 1 where the index is o's place.
template <class T, class I>
SX_HOST_DEVICE T one_hot_element(const I* indices, int64_t depth, int64_t o) {
  return static_cast<int64_t>(indices[o / depth]) == o % depth ? T(1) : T(0);
}

// Element o of iota's result, stored in S: its place along the axis of `length`,
// `inner` elements after it, converted as the reference converts it (from a double to
// the compute type C, saturating).
template <class S, class C>
SX_HOST_DEVICE S iota_element(int64_t length, int64_t inner, int64_t o) {
  return S(graph::prims::convert<C>(static_cast<double>((o / inner) % length)));
}

}  // namespace sx::device::cuda
