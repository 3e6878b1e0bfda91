// The cuda device: the first GPU the CUDA runtime finds. It is made only where that GPU
// answers and runs this build's kernels; it runs no graph yet (its kernels so far are
// elementwise.cu's, which no plan calls), so compile refuses, saying so, and its buffers
// are host memory until then.
#pragma once

#include <memory>
#include <string>

#include "device/device.h"

namespace sx::device {

class CudaDevice : public HostDevice {
 public:
  // Throws DeviceError E-DEVICE-006 with gpu_unusable_reason() when it is not empty.
  CudaDevice();
  std::string name() const override { return "cuda"; }
  // Throws DeviceError (E-DEVICE-001): the cuda device runs no graph yet.
  std::unique_ptr<Plan> compile(const graph::Graph& graph) override;

 private:
  std::string gpu_;  // "GPU 0 (NVIDIA H100 80GB HBM3, compute capability 9.0)"
};

// Empty when the CUDA runtime finds a GPU that runs this build's kernels; else why not,
// with the runtime's reason: "no GPU answered: ..." where the driver or the GPU is
// missing, or the GPU that runs none of the kernels.
std::string gpu_unusable_reason();

}  // namespace sx::device
