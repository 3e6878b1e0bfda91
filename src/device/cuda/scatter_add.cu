// The sorted scatter_add's kernels (scatter_add.h): the slots, CUB's stable radix sort
// of them, and the runs' additions.
#include <cub/device/device_radix_sort.cuh>

#include "device/cuda/launch_shape.h"
#include "device/cuda/scatter_add.h"
#include "graph/tensor.h"

namespace sx::device::cuda {
namespace {

template <class I>
__global__ void slot_kernel(const I* indices, int64_t count, int64_t length, uint32_t* slots, uint32_t* positions,
                            IndexFault* fault, uint32_t node) {
  for (int64_t k = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; k < count; k += int64_t{gridDim.x} * blockDim.x) {
    check_index(fault, node, indices, k, length);
    slots[k] = scatter_slot(indices[k], length);
    positions[k] = static_cast<uint32_t>(k);
  }
}

template <class S, class C>
__global__ void run_kernel(S* out, const uint32_t* slots, const uint32_t* positions, const S* updates, GatherGeometry g,
                           int64_t n) {
  for (int64_t t = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; t < n; t += int64_t{gridDim.x} * blockDim.x) {
    scatter_add_run<S, C>(out, slots, positions, updates, g, t);
  }
}

template <class T>
T* at(void* scratch, size_t offset) {
  return reinterpret_cast<T*>(static_cast<uint8_t*>(scratch) + offset);
}

}  // namespace

cudaError_t sort_scratch_bytes(int64_t count, int key_bits, size_t* bytes) {
  return cub::DeviceRadixSort::SortPairs(nullptr, *bytes, static_cast<const uint32_t*>(nullptr),
                                         static_cast<uint32_t*>(nullptr), static_cast<const uint32_t*>(nullptr),
                                         static_cast<uint32_t*>(nullptr), static_cast<int>(count), 0, key_bits);
}

cudaError_t launch_sorted_scatter(const SortedScatter& scatter, const void* x, const void* indices, const void* updates,
                                  void* out, void* scratch, IndexFault* fault, uint32_t node, cudaStream_t stream) {
  const GatherGeometry& g = scatter.geometry;
  const int64_t n = scatter.outer * g.length * g.inner;
  size_t bytes = static_cast<size_t>(n) * graph::dtype_size(scatter.dtype);
  if (bytes > 0) {
    if (cudaError_t status = cudaMemcpyAsync(out, x, bytes, cudaMemcpyDeviceToDevice, stream); status != cudaSuccess) {
      return status;
    }
  }
  if (g.count == 0) return cudaGetLastError();
  ScatterScratch places = scatter_scratch(g.count, scatter.sort_bytes);
  auto* slots = at<uint32_t>(scratch, places.slots);
  auto* positions = at<uint32_t>(scratch, places.positions);
  auto* sorted_slots = at<uint32_t>(scratch, places.sorted_slots);
  auto* sorted_positions = at<uint32_t>(scratch, places.sorted_positions);
  bool indexed = false;
  graph::visit_dtype(scatter.index_dtype, [&](auto types) {
    using I = typename decltype(types)::storage;
    if constexpr (std::is_integral_v<I> && !std::is_same_v<I, bool>) {
      slot_kernel<I><<<blocks_for(g.count), kThreads, 0, stream>>>(static_cast<const I*>(indices), g.count, g.length,
                                                                   slots, positions, fault, node);
      indexed = true;
    }
  });
  if (!indexed) return cudaErrorNotSupported;
  if (cudaError_t status = cudaGetLastError(); status != cudaSuccess) return status;
  size_t sort_bytes = scatter.sort_bytes;
  if (cudaError_t status =
          cub::DeviceRadixSort::SortPairs(at<void>(scratch, places.sort), sort_bytes, slots, sorted_slots, positions,
                                          sorted_positions, static_cast<int>(g.count), 0, slot_bits(g.length), stream);
      status != cudaSuccess) {
    return status;
  }
  const int64_t runs = scatter.outer * g.count * g.inner;
  if (runs == 0) return cudaGetLastError();
  bool found = false;
  graph::visit_dtype(scatter.dtype, [&](auto types) {
    using S = typename decltype(types)::storage;
    using C = typename decltype(types)::compute;
    if constexpr (!std::is_same_v<C, bool>) {
      run_kernel<S, C><<<blocks_for(runs), kThreads, 0, stream>>>(static_cast<S*>(out), sorted_slots, sorted_positions,
                                                                  static_cast<const S*>(updates), g, runs);
      found = true;
    }
  });
  return found ? cudaGetLastError() : cudaErrorNotSupported;
}

}  // namespace sx::device::cuda
