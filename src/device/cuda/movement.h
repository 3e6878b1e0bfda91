// The movement primitives on the cuda device (reshape, transpose, broadcast, slice, concat,
// pad), each as strided copies of elements between an operand and the result, and a fill
// of the result first for pad. A copy walks an index space in row-major order; its
// element i is read at src_offset + sum(index[d] * src_stride[d]) and written at the
// same with dst_. The kernels (movement.cu) and the host tests call the same
// copy_places, so that the index arithmetic is tested where no GPU is.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "device/cuda/strided.h"
#include "graph/graph.h"
#include "graph/host_device.h"

namespace sx::device::cuda {

struct StridedCopy {
  int32_t rank = 0;
  int64_t shape[kMostAxes] = {};
  int64_t src_stride[kMostAxes] = {};
  int64_t dst_stride[kMostAxes] = {};
  int64_t src_offset = 0, dst_offset = 0;
};

// Where element i of the copy's walk is read (*src) and written (*dst), in elements.
SX_HOST_DEVICE inline void copy_places(const StridedCopy& copy, int64_t i, int64_t* src, int64_t* dst) {
  *src = copy.src_offset + strided_offset(copy.rank, copy.shape, copy.src_stride, i);
  *dst = copy.dst_offset + strided_offset(copy.rank, copy.shape, copy.dst_stride, i);
}

inline int64_t copy_length(const StridedCopy& copy) {
  int64_t n = 1;
  for (int32_t axis = 0; axis < copy.rank; ++axis) n *= copy.shape[axis];
  return n;
}

// A movement node's work: `copies[k]` reads the node's input k (concat has one per
// input), after the result is filled with `fill` (pad's value, in the dtype's bits)
// when `fills`.
struct Movement {
  std::vector<StridedCopy> copies;
  bool fills = false;
  uint64_t fill = 0;
};

// Whether the cuda device moves `prim` by copies: one of the movement primitives above.
bool moves_by_copies(graph::PrimId prim);

// Whether the cuda device moves `node` by copies: one of those, of at most kMostAxes
// axes (a reshape of any).
bool movable(const graph::Graph& graph, graph::NodeId node);

// The copies of a movable node.
Movement plan_movement(const graph::Graph& graph, graph::NodeId node);

// Starts `movement` on the current GPU in `stream`: `sources[k]` is copies[k]'s operand,
// `out` the result of n elements of element_bytes (1, 2, 4 or 8) each. Returns the
// runtime's status of the launches.
cudaError_t launch_movement(const Movement& movement, const void* const* sources, void* out, int64_t n,
                            size_t element_bytes, cudaStream_t stream);

}  // namespace sx::device::cuda
