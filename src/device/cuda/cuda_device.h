// The cuda device: the first GPU the CUDA runtime finds, made only where that GPU answers
// and runs this build's kernels. Its buffers are device memory from a caching allocator
// (caching_allocator.h); its copies go through pinned host staging on its one stream,
// each returning an Event; a plan (cuda_plan.h) runs on that stream too.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "device/cuda/caching_allocator.h"
#include "device/cuda/products.h"
#include "device/device.h"

namespace sx::device {

namespace cuda {

// Device memory behind a buffer or an arena, given back to its allocator's cache when
// dropped; the allocator lives as long as any of its memory.
class DeviceBytes : public Buffer::Memory {
 public:
  DeviceBytes(std::shared_ptr<CachingAllocator> allocator, size_t bytes);
  ~DeviceBytes() override { allocator_->free(data_); }
  DeviceBytes(const DeviceBytes&) = delete;
  DeviceBytes& operator=(const DeviceBytes&) = delete;
  uint8_t* data() const { return data_; }

 private:
  std::shared_ptr<CachingAllocator> allocator_;
  uint8_t* data_;
};

// A recorded point of the stream (cuda_device.cc).
struct CudaEvent;

// The device memory of a buffer of the cuda device; DeviceError when it is not one.
uint8_t* device_data(const Buffer& buffer);

// Throws DeviceError E-DEVICE-008 with the runtime's reason unless `status` is success.
void check(cudaError_t status, const char* what);

struct IndexFault;

// The index faults (index_math.h) of the runs on a stream, each copied after its run into
// pinned memory of its own, and read only once the host waits for the stream anyway (a
// download, a synchronize): checking a run costs the stream one small copy and the host
// no wait. Shared by the device and its downloads' events.
class IndexFaults {
 public:
  IndexFaults() = default;
  ~IndexFaults();
  IndexFaults(const IndexFaults&) = delete;
  IndexFaults& operator=(const IndexFaults&) = delete;

  // Puts on `stream` a copy of the fault at `fault` (device memory), written by a run of
  // `graph` put on the stream before it.
  void copy_after_run(const IndexFault* fault, std::shared_ptr<const graph::Graph> graph, cudaStream_t stream);
  // Forgets the faults of the runs done, throwing the first recorded index among them as
  // the cpu device throws it (graph::IndexOutOfRange, located in its run's graph).
  void raise();

 private:
  struct Slot {
    IndexFault* fault;  // pinned
    cudaEvent_t copied;
  };
  struct Copy {
    Slot slot;
    std::shared_ptr<const graph::Graph> graph;
  };
  std::vector<Copy> copies_;  // in the stream's order
  std::vector<Slot> free_;
  std::vector<Slot> slots_;    // every one made
  std::vector<void*> blocks_;  // their pinned memory
};

}  // namespace cuda

class CudaDevice : public Device {
 public:
  // Throws DeviceError E-DEVICE-006 with gpu_unusable_reason() when it is not empty.
  CudaDevice();
  ~CudaDevice() override;
  CudaDevice(const CudaDevice&) = delete;
  CudaDevice& operator=(const CudaDevice&) = delete;

  std::string name() const override { return "cuda"; }
  // A plan of the graph's kernels, each composite without one of its own for its form
  // expanded first; DeviceError E-DEVICE-007 naming each primitive without one
  // (cuda/program.h).
  std::unique_ptr<Plan> compile(const graph::Graph& graph) override;
  bool supports(graph::PrimId primitive) const override;
  // A composite only in the forms its kernel takes (has_composite_kernel).
  bool runs(const graph::Graph& graph, const graph::Node& node) const override;

  Buffer allocate(const graph::ValueType& type) override;
  Event upload_into(Buffer& buffer, std::span<const uint8_t> bytes) override;
  Event download_into(const Buffer& buffer, std::span<uint8_t> bytes) override;
  void synchronize() override;

  cudaStream_t stream() const { return stream_; }
  // Device memory of `bytes` from the caching allocator; DeviceError E-DEVICE-008 when the
  // GPU has none left.
  std::unique_ptr<cuda::DeviceBytes> device_bytes(size_t bytes);
  const cuda::CachingAllocator& device_memory() const { return *device_memory_; }
  const std::string& gpu() const { return gpu_; }
  // The matrix products, with their pinned algorithms: made on first use, and shared by
  // the device's plans, so that a (N, K, dtype) gets one algorithm for the process.
  cuda::PinnedProducts& products();
  // NVRTC's name of the GPU's architecture: "sm_90a" (nvrtc.h).
  const std::string& architecture() const { return architecture_; }
  // The index faults of the plans' runs: a run's surfaces as graph::IndexOutOfRange from
  // the next download's wait or synchronize.
  cuda::IndexFaults& index_faults() { return *index_faults_; }

 private:
  // Pinned host memory given to a copy, kept until the copy's event is done.
  struct InFlight {
    std::shared_ptr<cuda::CudaEvent> done;
    void* staging;
  };
  void reclaim_staging(bool all);
  // A copy of `bytes` through pinned staging, in pieces: copy_piece(staging, offset, size)
  // puts one on the stream. The event is the last piece's; waiting for a download's
  // raises the index faults of the runs before it.
  Event staged_copy(size_t bytes, const std::function<void(void*, size_t, size_t)>& copy_piece, bool download);
  std::shared_ptr<cuda::CudaEvent> record();

  std::string gpu_;  // "GPU 0 (NVIDIA H100 80GB HBM3, compute capability 9.0)"
  std::string architecture_;
  cudaStream_t stream_ = nullptr;
  std::shared_ptr<cuda::CachingAllocator> device_memory_;
  std::unique_ptr<cuda::CachingAllocator> pinned_memory_;
  std::unique_ptr<cuda::PinnedProducts> products_;
  std::vector<InFlight> in_flight_;
  std::shared_ptr<cuda::IndexFaults> index_faults_ = std::make_shared<cuda::IndexFaults>();
};

// Empty when the CUDA runtime finds a GPU that runs this build's kernels; else why not,
// with the runtime's reason: "no GPU answered: ..." where the driver or the GPU is
// missing, or the GPU that runs none of the kernels.
std::string gpu_unusable_reason();

}  // namespace sx::device
