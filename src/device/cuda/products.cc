// Matrix products through cuBLASLt with an algorithm pinned per (N, K, dtype).
#include "device/cuda/products.h"

#include <fmt/format.h>

#include <memory>

#include "device/device.h"

namespace sx::device::cuda {
namespace {

// The M the algorithm is chosen for: a mid-sized batch of rows, the served and trained
// case, so that the tile suits both.
constexpr int64_t kChoosingRows = 1024;

void check_lt(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw DeviceError(fmt::format("the GPU failed {}: cuBLASLt says {} ({})", what, cublasLtGetStatusString(status),
                                  static_cast<int>(status)),
                      "E-DEVICE-008");
  }
}

cudaDataType_t data_type(graph::DType dtype) { return dtype == graph::DType::bf16 ? CUDA_R_16BF : CUDA_R_32F; }

// cuBLASLt's descriptors of one product, freed at the end of the scope. Row-major c = a · b
// is column-major cᵀ = bᵀ · aᵀ: cuBLASLt's A is our b ([n, k] column-major), its B our a.
class Descriptors {
 public:
  Descriptors(const ProductKey& key, int64_t batch, int64_t m) {
    cudaDataType_t type = data_type(key.dtype);
    check_lt(cublasLtMatmulDescCreate(&operation, CUBLAS_COMPUTE_32F, CUDA_R_32F), "to describe a product");
    auto layout = [&](cublasLtMatrixLayout_t* out, int64_t rows, int64_t cols) {
      check_lt(cublasLtMatrixLayoutCreate(out, type, static_cast<uint64_t>(rows), static_cast<uint64_t>(cols), rows),
               "to describe a matrix");
      int32_t count = static_cast<int32_t>(batch);
      int64_t stride = rows * cols;
      check_lt(cublasLtMatrixLayoutSetAttribute(*out, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)),
               "to describe a batch");
      check_lt(
          cublasLtMatrixLayoutSetAttribute(*out, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)),
          "to describe a batch");
    };
    layout(&b_layout, key.n, key.k);
    layout(&a_layout, key.k, m);
    layout(&c_layout, key.n, m);
  }
  ~Descriptors() {
    cublasLtMatrixLayoutDestroy(c_layout);
    cublasLtMatrixLayoutDestroy(a_layout);
    cublasLtMatrixLayoutDestroy(b_layout);
    cublasLtMatmulDescDestroy(operation);
  }
  Descriptors(const Descriptors&) = delete;
  Descriptors& operator=(const Descriptors&) = delete;

  cublasLtMatmulDesc_t operation = nullptr;
  cublasLtMatrixLayout_t a_layout = nullptr, b_layout = nullptr, c_layout = nullptr;
};

template <class T>
void set_config(cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attribute, T value) {
  check_lt(cublasLtMatmulAlgoConfigSetAttribute(&algo, attribute, &value, sizeof(value)), "to pin an algorithm");
}

template <class T>
T get_config(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attribute) {
  T value{};
  size_t written = 0;
  check_lt(cublasLtMatmulAlgoConfigGetAttribute(&algo, attribute, &value, sizeof(value), &written),
           "to read an algorithm");
  return value;
}

// cuBLASLt's first choice for the product `d` describes, with at most `workspace_bytes`
// of workspace. DeviceError E-DEVICE-008 where it has none.
cublasLtMatmulAlgo_t heuristic(cublasLtHandle_t handle, const ProductKey& key, const Descriptors& d,
                               uint64_t workspace_bytes) {
  cublasLtMatmulPreference_t preference = nullptr;
  check_lt(cublasLtMatmulPreferenceCreate(&preference), "to choose an algorithm");
  std::unique_ptr<cublasLtMatmulPreferenceOpaque_t, void (*)(cublasLtMatmulPreference_t)> owned(
      preference, [](cublasLtMatmulPreference_t p) { cublasLtMatmulPreferenceDestroy(p); });
  check_lt(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes,
                                                sizeof(workspace_bytes)),
           "to choose an algorithm");
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  check_lt(cublasLtMatmulAlgoGetHeuristic(handle, d.operation, d.b_layout, d.a_layout, d.c_layout, d.c_layout,
                                          preference, 1, &result, &found),
           "to choose an algorithm");
  if (found == 0) {
    throw DeviceError(
        fmt::format("cuBLASLt has no algorithm with {} bytes of workspace for products of K {} by N {} in {}",
                    workspace_bytes, key.k, key.n, graph::dtype_name(key.dtype)),
        "E-DEVICE-008");
  }
  return result.algo;
}

}  // namespace

bool has_product(graph::DType dtype) { return dtype == graph::DType::f32 || dtype == graph::DType::bf16; }

PinnedProducts::PinnedProducts() { check_lt(cublasLtCreate(&handle_), "to start cuBLASLt"); }

PinnedProducts::~PinnedProducts() { cublasLtDestroy(handle_); }

const ProductConfig& PinnedProducts::pinned(const ProductKey& key) {
  if (auto found = pinned_.find(key); found != pinned_.end()) return found->second;
  Descriptors d(key, 1, kChoosingRows);
  const cublasLtMatmulAlgo_t algo = heuristic(handle_, key, d, 0);
  ProductConfig config{
      .algo_id = get_config<int32_t>(algo, CUBLASLT_ALGO_CONFIG_ID),
      .tile = static_cast<int>(get_config<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_TILE_ID)),
      .stages = static_cast<int>(get_config<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID)),
      .swizzle = static_cast<int>(get_config<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING)),
      .custom = static_cast<int>(get_config<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION)),
      .inner_shape = static_cast<int>(get_config<uint16_t>(algo, CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID)),
      .cluster_shape = static_cast<int>(get_config<uint16_t>(algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID)),
  };
  return pinned_.emplace(key, config).first->second;
}

void PinnedProducts::run(const ProductKey& key, int64_t batch, int64_t m, const void* a, const void* b, void* c,
                         cudaStream_t stream) {
  const ProductConfig& config = pinned(key);
  Descriptors d(key, batch, m);
  cudaDataType_t type = data_type(key.dtype);
  cublasLtMatmulAlgo_t algo{};
  check_lt(
      cublasLtMatmulAlgoInit(handle_, CUBLAS_COMPUTE_32F, CUDA_R_32F, type, type, type, type, config.algo_id, &algo),
      "to rebuild a pinned algorithm");
  set_config(algo, CUBLASLT_ALGO_CONFIG_TILE_ID, static_cast<uint32_t>(config.tile));
  set_config(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, static_cast<uint32_t>(config.stages));
  set_config(algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, static_cast<uint32_t>(config.swizzle));
  set_config(algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, static_cast<uint32_t>(config.custom));
  set_config(algo, CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID, static_cast<uint16_t>(config.inner_shape));
  set_config(algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, static_cast<uint16_t>(config.cluster_shape));
  set_config(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, int32_t{1});
  set_config(algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, static_cast<uint32_t>(CUBLASLT_REDUCTION_SCHEME_NONE));
  cublasLtMatmulHeuristicResult_t check{};
  check_lt(cublasLtMatmulAlgoCheck(handle_, d.operation, d.b_layout, d.a_layout, d.c_layout, d.c_layout, &algo, &check),
           "to run a pinned algorithm for this many rows");
  if (check.workspaceSize != 0) {
    throw DeviceError(fmt::format("the pinned cuBLASLt algorithm for K {} by N {} asks for {} bytes of workspace",
                                  key.k, key.n, check.workspaceSize),
                      "E-DEVICE-008");
  }
  float one = 1.0f, zero = 0.0f;
  check_lt(cublasLtMatmul(handle_, d.operation, &one, b, d.b_layout, a, d.a_layout, &zero, c, d.c_layout, c, d.c_layout,
                          &algo, nullptr, 0, stream),
           "a matrix product");
}

void PinnedProducts::run_unpinned(const ProductKey& key, int64_t batch, int64_t m, const void* a, const void* b,
                                  void* c, void* workspace, size_t workspace_bytes, cudaStream_t stream) {
  Descriptors d(key, batch, m);
  const cublasLtMatmulAlgo_t algo = heuristic(handle_, key, d, workspace_bytes);
  float one = 1.0f, zero = 0.0f;
  check_lt(cublasLtMatmul(handle_, d.operation, &one, b, d.b_layout, a, d.a_layout, &zero, c, d.c_layout, c, d.c_layout,
                          &algo, workspace, workspace_bytes, stream),
           "a matrix product");
}

}  // namespace sx::device::cuda
