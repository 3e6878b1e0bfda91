// The cpu device's kernels, as steps prepared at compile time: a step knows
// its node's shapes and dtypes and its thread count, and at run time only
// reads its inputs' bytes and writes its output's.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>

#include "graph/graph.h"

namespace sx::device::cpu {

// in[i]: the bytes of the node's i-th input; out: the node's output buffer.
using Step = std::function<void(const uint8_t* const* in, uint8_t* out)>;

// Work below about this many element operations runs on one thread: an
// OpenMP fork and join costs a few microseconds.
inline constexpr int64_t kGrain = 1 << 15;

// Threads for `work` element operations, at most `cores`.
inline int threads_for(int64_t work, int cores) {
  if (work < 2 * kGrain) return 1;
  return static_cast<int>(std::min<int64_t>(cores, work / kGrain));
}

// Calls body(begin, end) over [0, n) split into `threads` equal contiguous
// chunks, one per thread of the pool. Which thread runs a chunk never
// changes what an element's value is.
template <class Body>
void parallel_for(int64_t n, int threads, Body body) {
  if (threads <= 1 || n < 2) {
    body(int64_t{0}, n);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    int64_t t = omp_get_thread_num(), count = omp_get_num_threads();
    int64_t chunk = (n + count - 1) / count;
    int64_t begin = std::min(n, t * chunk), end = std::min(n, begin + chunk);
    if (begin < end) body(begin, end);
  }
}

// Each returns the step for `node` (whose inputs are graph.nodes[node.inputs])
// or nullopt when this family has no fast kernel for it.
std::optional<Step> elementwise_step(const graph::Graph& graph, const graph::Node& node, int cores);
std::optional<Step> reduce_step(const graph::Graph& graph, const graph::Node& node, int cores);
std::optional<Step> movement_step(const graph::Graph& graph, const graph::Node& node, int cores);

struct KernelSet;

// Matrix products with the micro-kernels of `kernels`. `weights_broadcast`:
// the right operand is a broadcast node that only adds batch axes to a
// [k, n] matrix, and the step reads that matrix (the broadcast's input) in
// its place.
Step matmul_step(const graph::Graph& graph, const graph::Node& node, int cores, bool weights_broadcast,
                 const KernelSet& kernels);

}  // namespace sx::device::cpu
