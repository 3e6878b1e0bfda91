// The cuda device: finding a GPU through the CUDA runtime, and refusing to compile
// until its kernels run graphs.
#include "device/cuda/cuda_device.h"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "device/cuda/cuda.h"
#include "device/cuda/elementwise.h"

namespace sx::device {
namespace {

// The runtime's words for a status, and its name: "no CUDA-capable device is detected
// (cudaErrorNoDevice)".
std::string runtime_reason(cudaError_t status) {
  return fmt::format("{} ({})", cudaGetErrorString(status), cudaGetErrorName(status));
}

// "GPU 0 (NAME, compute capability 9.0)", or "GPU 0" when the runtime cannot say more.
std::string describe_gpu(int index) {
  cudaDeviceProp properties;
  if (cudaGetDeviceProperties(&properties, index) != cudaSuccess) return fmt::format("GPU {}", index);
  return fmt::format("GPU {} ({}, compute capability {}.{})", index, properties.name, properties.major,
                     properties.minor);
}

}  // namespace

std::string gpu_unusable_reason() {
  int count = 0;
  if (cudaError_t status = cudaGetDeviceCount(&count); status != cudaSuccess) {
    return "no GPU answered: " + runtime_reason(status);
  }
  if (count == 0) return "no GPU answered: the CUDA runtime found none";
  if (cudaError_t status = cuda::check_kernels_load(); status != cudaSuccess) {
    return fmt::format("{} runs none of this build's kernels, which are for compute capability 8.x and 9.0: {}",
                       describe_gpu(0), runtime_reason(status));
  }
  return "";
}

CudaDevice::CudaDevice() {
  if (std::string reason = gpu_unusable_reason(); !reason.empty()) {
    throw DeviceError(fmt::format("the cuda device cannot run here: {}; use --device cpu", reason), "E-DEVICE-006");
  }
  gpu_ = describe_gpu(0);
}

std::unique_ptr<Plan> CudaDevice::compile(const graph::Graph&) {
  throw DeviceError(
      fmt::format("{} answered, but the cuda device's kernels are not in this build yet: it runs no "
                  "graph; use --device cpu",
                  gpu_));
}

std::unique_ptr<Device> make_cuda_device() { return std::make_unique<CudaDevice>(); }

}  // namespace sx::device
