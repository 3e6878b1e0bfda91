// The cuda device's elementwise kernels (elementwise.cu): one GPU thread per element,
// each computing element.h's function of its primitive.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "graph/dtype.h"
#include "graph/primitive.h"

namespace sx::device::cuda {

// Whether the kernels compute `prim` on operands of `dtype` (element.h's table).
bool has_elementwise_kernel(graph::PrimId prim, graph::DType dtype);

// Starts out[i] = prim(a[i]) (or prim(a[i], b[i])) for i < n on the current GPU, in
// `stream`; a, b and out are device memory of dtype (out: bool for a
// comparison). Returns the runtime's status of the launch; cudaErrorNotSupported for a
// primitive and dtype the kernels lack.
cudaError_t launch_elementwise(graph::PrimId prim, graph::DType dtype, const void* a, const void* b, void* out,
                               int64_t n, cudaStream_t stream);

// Whether the kernels cast from `from` to `to`: the casts to and from bf16 (the generated
// kernels cast between the others).
bool has_cast_kernel(graph::DType from, graph::DType to);

// Starts out[i] = x[i] cast from `from` to `to` (as the reference casts) for i < n, in
// `stream`; cudaErrorNotSupported for a cast the kernels lack.
cudaError_t launch_cast(graph::DType from, graph::DType to, const void* x, void* out, int64_t n, cudaStream_t stream);

// cudaSuccess when the current GPU can run this build's kernels (they are built for
// sm_80 and sm_90a, without PTX); else the runtime's reason.
cudaError_t check_kernels_load();

}  // namespace sx::device::cuda
