// The cuda device's elementwise kernels: a grid-stride loop of element.h's functions,
// one instance per primitive and dtype the table of element.h gives.
#include "device/cuda/element.h"
#include "device/cuda/elementwise.h"
#include "device/cuda/launch_shape.h"

namespace sx::device::cuda {
namespace {

template <class F, class S, class C>
__global__ void unary_kernel(const S* x, S* out, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    out[i] = unary_element<F, S, C>(x[i]);
  }
}

template <class F, class S, class C, class Out>
__global__ void binary_kernel(const S* a, const S* b, Out* out, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    out[i] = binary_element<F, S, C, Out>(a[i], b[i]);
  }
}

template <class SI, class CI, class SO, class CO>
__global__ void cast_kernel(const SI* x, SO* out, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    out[i] = SO(graph::prims::convert<CO>(static_cast<CI>(x[i])));
  }
}

// Calls fn(Formula, Shape, S, C) (the last two as pointers, null) for a primitive and
// dtype the kernels compute; false otherwise.
template <class Fn>
bool visit_kernel(graph::PrimId prim, graph::DType dtype, Fn&& fn) {
  bool found = false;
  visit_element(prim, [&](auto formula, auto shape, auto dtypes) {
    using DTypes = decltype(dtypes);
    graph::visit_dtype(dtype, [&](auto types) {
      using S = typename decltype(types)::storage;
      using C = typename decltype(types)::compute;
      if constexpr (DTypes::template takes<C>) {
        fn(formula, shape, static_cast<S*>(nullptr), static_cast<C*>(nullptr));
        found = true;
      }
    });
  });
  return found;
}

}  // namespace

bool has_elementwise_kernel(graph::PrimId prim, graph::DType dtype) {
  return visit_kernel(prim, dtype, [](auto, auto, auto, auto) {});
}

cudaError_t launch_elementwise(graph::PrimId prim, graph::DType dtype, const void* a, const void* b, void* out,
                               int64_t n, cudaStream_t stream) {
  bool found = visit_kernel(prim, dtype, [&](auto formula, auto shape, auto* s, auto* c) {
    using F = decltype(formula);
    using S = std::remove_pointer_t<decltype(s)>;
    using C = std::remove_pointer_t<decltype(c)>;
    const S* x = static_cast<const S*>(a);
    if constexpr (std::is_same_v<decltype(shape), Unary>) {
      unary_kernel<F, S, C><<<blocks_for(n), kThreads, 0, stream>>>(x, static_cast<S*>(out), n);
    } else if constexpr (std::is_same_v<decltype(shape), Binary>) {
      binary_kernel<F, S, C, S>
          <<<blocks_for(n), kThreads, 0, stream>>>(x, static_cast<const S*>(b), static_cast<S*>(out), n);
    } else {
      binary_kernel<F, S, C, bool>
          <<<blocks_for(n), kThreads, 0, stream>>>(x, static_cast<const S*>(b), static_cast<bool*>(out), n);
    }
  });
  if (!found) return cudaErrorNotSupported;
  return cudaGetLastError();
}

bool has_cast_kernel(graph::DType from, graph::DType to) {
  return from == graph::DType::bf16 || to == graph::DType::bf16;
}

cudaError_t launch_cast(graph::DType from, graph::DType to, const void* x, void* out, int64_t n, cudaStream_t stream) {
  if (!has_cast_kernel(from, to)) return cudaErrorNotSupported;
  graph::visit_dtype(from, [&](auto in_types) {
    using SI = typename decltype(in_types)::storage;
    using CI = typename decltype(in_types)::compute;
    graph::visit_dtype(to, [&](auto out_types) {
      using SO = typename decltype(out_types)::storage;
      using CO = typename decltype(out_types)::compute;
      if constexpr (std::is_same_v<SI, graph::Bf16> || std::is_same_v<SO, graph::Bf16>) {
        cast_kernel<SI, CI, SO, CO>
            <<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const SI*>(x), static_cast<SO*>(out), n);
      }
    });
  });
  return cudaGetLastError();
}

cudaError_t check_kernels_load() {
  cudaFuncAttributes attributes;
  return cudaFuncGetAttributes(&attributes, unary_kernel<graph::prims::scalar::Neg, float, float>);
}

}  // namespace sx::device::cuda
