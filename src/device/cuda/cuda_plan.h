// A plan of the cuda device: its program's steps (program.h) on the device's stream. Its
// generated kernels are compiled (or found in the kernel cache, nvrtc.h) and loaded, the
// arena is allocated and the constants uploaded when the plan is made, so weights given as
// constants stay on the GPU between runs, as parameters given as buffers do. A run's
// first time with a set of buffers launches its kernels one by one; a later run with the
// same buffers is captured as a CUDA graph and replayed, so that a step costs one launch.
// A plan whose kernels check indices zeroes its IndexFault (index_math.h) as a run's first
// work and has it copied back after the run (CudaDevice::index_faults): an index outside
// its axis surfaces as the cpu device's graph::IndexOutOfRange when the host next waits for
// a download or synchronizes, not from run itself, which does not wait for the GPU.
#pragma once

#include <cuda_runtime_api.h>

#include <map>
#include <memory>
#include <vector>

#include "device/cuda/cuda_device.h"
#include "device/cuda/program.h"

namespace sx::device::cuda {

class CudaPlan : public Plan {
 public:
  // DeviceError E-DEVICE-007 for a graph with a primitive without a kernel.
  CudaPlan(CudaDevice& device, const graph::Graph& graph);
  ~CudaPlan() override;
  CudaPlan(const CudaPlan&) = delete;
  CudaPlan& operator=(const CudaPlan&) = delete;

  using Plan::run;
  void run(std::span<const Buffer* const> inputs, std::span<Buffer* const> outputs) override;
  PlanMemory memory() const override {
    return {.arena_bytes = program_.arena.size, .live_peak_bytes = program_.arena.live_peak};
  }
  // How many runs replayed a captured CUDA graph.
  int replays() const { return replays_; }

 private:
  // The device addresses of one run: its inputs', then its outputs'.
  using Addresses = std::vector<uint8_t*>;
  // Puts the run on the stream: step by step, or as a captured graph.
  void launch(const Addresses& addresses);
  // Puts the program's kernels and copies on the stream.
  void enqueue(const Addresses& addresses);
  cudaGraphExec_t capture(const Addresses& addresses);

  CudaDevice& cuda_;
  std::shared_ptr<const graph::Graph> graph_;  // shared with the faults of runs not yet read
  Program program_;
  std::vector<Buffer> constants_;
  std::unique_ptr<DeviceBytes> arena_;
  std::unique_ptr<DeviceBytes> fault_;  // the runs' IndexFault; null where no kernel checks indices
  cudaLibrary_t library_ = nullptr;     // the program's generated kernels
  std::vector<cudaKernel_t> kernels_;   // by Program::kernel_names
  std::map<Addresses, cudaGraphExec_t> captured_;
  std::map<Addresses, int> runs_;  // runs so far with each set of buffers not yet captured
  int replays_ = 0;
};

}  // namespace sx::device::cuda
