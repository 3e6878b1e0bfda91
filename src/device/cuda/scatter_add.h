// scatter_add on the cuda device by sorting its indices, deterministic and in time
// linear in the updates: each index k becomes the pair (slot, k) (index_math.h's
// scatter_slot), CUB's radix sort orders the pairs by slot, keeping the indices' order
// within a slot (it is stable), and one thread per (run of a slot, element of the inner
// axes) adds the run's updates in that order (scatter_add_run): the reference's
// additions in its order, so its bits, with no atomic additions. The result starts as a
// copy of x. The slot kernel checks each index as the scanning kernel does, recording the
// first outside its axis in the run's IndexFault.
//
// Slots and positions are 32-bit: a scatter_add of more indices, or along a longer axis,
// runs by the scanning kernel (codegen.h's generate_index_kernel) instead.
#pragma once

#include <cuda_runtime_api.h>

#include <bit>
#include <cstdint>
#include <limits>

#include "device/cuda/index_math.h"
#include "graph/dtype.h"

namespace sx::device::cuda {

// One sorted scatter_add: x and updates of `dtype`, x as [outer, length, inner],
// geometry.count indices of `index_dtype`; sort_bytes the scratch CUB's sort needs.
struct SortedScatter {
  graph::DType dtype = graph::DType::f32;
  graph::DType index_dtype = graph::DType::i32;
  GatherGeometry geometry;
  int64_t outer = 0;
  size_t sort_bytes = 0;
};

// Whether `count` indices along an axis of `length` fit the sort's 32-bit slots and
// positions (CUB counts its items in an int).
inline bool sorts_scatter(int64_t count, int64_t length) {
  return count <= std::numeric_limits<int32_t>::max() && length < std::numeric_limits<int32_t>::max();
}

// The bits of a slot in [0, length]: the bits the sort orders.
inline int slot_bits(int64_t length) { return static_cast<int>(std::bit_width(static_cast<uint64_t>(length))); }

// Where the scratch of a sorted scatter_add holds its arrays (bytes from its start, each
// 256-aligned): the slots and positions before and after the sort, then CUB's scratch;
// `bytes` in all.
struct ScatterScratch {
  size_t slots = 0, positions = 0, sorted_slots = 0, sorted_positions = 0, sort = 0, bytes = 0;
};
inline ScatterScratch scatter_scratch(int64_t count, size_t sort_bytes) {
  auto aligned = [](size_t bytes) { return (bytes + 255) / 256 * 256; };
  size_t array = aligned(static_cast<size_t>(count) * sizeof(uint32_t));
  return {.slots = 0,
          .positions = array,
          .sorted_slots = 2 * array,
          .sorted_positions = 3 * array,
          .sort = 4 * array,
          .bytes = 4 * array + aligned(sort_bytes)};
}

// The scratch CUB's radix sort of `count` pairs by keys of `key_bits` needs, in *bytes,
// as the current GPU's architecture sets it.
cudaError_t sort_scratch_bytes(int64_t count, int key_bits, size_t* bytes);

// Starts `scatter` on the current GPU in `stream`, writing out (of x's size) from x,
// indices and updates, in `scratch` (scatter_scratch's bytes); an index outside its axis
// is recorded in `fault` under `node`. Returns the runtime's status of the launches.
cudaError_t launch_sorted_scatter(const SortedScatter& scatter, const void* x, const void* indices, const void* updates,
                                  void* out, void* scratch, IndexFault* fault, uint32_t node, cudaStream_t stream);

}  // namespace sx::device::cuda
