// The cuda device's matrix products, through cuBLASLt, pinned so that a row's bits do not
// depend on how many rows run with it (the manual's promise for served calls). For each
// (N, K, dtype) cuBLASLt's heuristic picks an algorithm once; its configuration (tile,
// stages, swizzle, inner and cluster shapes) is kept with split-K off, no reduction
// scheme and no workspace, and the algorithm is rebuilt from it for every M, so that
// every row is computed by the same tile over K in the same order. cuBLASLt's heuristic
// may pick another algorithm for another M, which is what this refuses.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <map>
#include <tuple>

#include "graph/dtype.h"

namespace sx::device::cuda {

// A product's shape but M: [batch, M, K] times [batch, K, N], row-major, in one dtype.
struct ProductKey {
  int64_t n = 0, k = 0;
  graph::DType dtype = graph::DType::f32;
  bool operator<(const ProductKey& other) const {
    return std::tie(n, k, dtype) < std::tie(other.n, other.k, other.dtype);
  }
};

// Whether cuBLASLt computes products of `dtype` here: f32 (in f32, TF32 off) and bf16
// (accumulated in f32).
bool has_product(graph::DType dtype);

// What a pinned algorithm is rebuilt from.
struct ProductConfig {
  int algo_id = 0, tile = 0, stages = 0, swizzle = 0, custom = 0, inner_shape = 0, cluster_shape = 0;
};

class PinnedProducts {
 public:
  // DeviceError E-DEVICE-008 when cuBLASLt does not start.
  PinnedProducts();
  ~PinnedProducts();
  PinnedProducts(const PinnedProducts&) = delete;
  PinnedProducts& operator=(const PinnedProducts&) = delete;

  // Puts c = a · b on `stream`: `batch` products of [m, k] by [k, n], each matrix after
  // the last. DeviceError E-DEVICE-008 when cuBLASLt has no algorithm without workspace
  // for the key, or the pinned one does not run for this m.
  void run(const ProductKey& key, int64_t batch, int64_t m, const void* a, const void* b, void* c, cudaStream_t stream);
  // The same product by cuBLASLt's own choice for this m, allowed `workspace_bytes` of
  // `workspace`: what the pinning costs is measured against it (bench/cuda_products.cc).
  void run_unpinned(const ProductKey& key, int64_t batch, int64_t m, const void* a, const void* b, void* c,
                    void* workspace, size_t workspace_bytes, cudaStream_t stream);
  // The configuration pinned for `key`, choosing it when none is.
  const ProductConfig& pinned(const ProductKey& key);

 private:
  cublasLtHandle_t handle_ = nullptr;
  std::map<ProductKey, ProductConfig> pinned_;
};

}  // namespace sx::device::cuda
