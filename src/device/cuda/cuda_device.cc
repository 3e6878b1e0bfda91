// The cuda device: finding a GPU through the CUDA runtime, its memory, and its copies.
#include "device/cuda/cuda_device.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "device/cuda/codegen.h"
#include "device/cuda/cuda.h"
#include "device/cuda/cuda_plan.h"
#include "device/cuda/elementwise.h"
#include "device/cuda/nvrtc.h"
#include "device/cuda/program.h"

namespace sx::device {
namespace cuda {

struct CudaEvent {
  cudaEvent_t event = nullptr;
  CudaEvent() { check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreate"); }
  ~CudaEvent() { cudaEventDestroy(event); }
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;
};

namespace {

// Copies larger than this go through staging of this size, one piece after another, so
// that uploading a model's weights does not pin their whole size in host memory.
constexpr size_t kStagingPiece = size_t{64} << 20;

class DeviceRaw : public RawMemory {
 public:
  void* allocate(size_t bytes) override {
    void* block = nullptr;
    if (cudaMalloc(&block, bytes) != cudaSuccess) {
      cudaGetLastError();  // out of memory is not sticky: clear it for the next call
      return nullptr;
    }
    return block;
  }
  void release(void* block) override { cudaFree(block); }
};

class PinnedRaw : public RawMemory {
 public:
  void* allocate(size_t bytes) override {
    void* block = nullptr;
    if (cudaMallocHost(&block, bytes) != cudaSuccess) {
      cudaGetLastError();
      return nullptr;
    }
    return block;
  }
  void release(void* block) override { cudaFreeHost(block); }
};

// A copy's event; a download's raises the index faults of the runs before it, so that a
// failed run's outputs are never read as results.
class PendingCopy : public Event::Pending {
 public:
  PendingCopy(std::shared_ptr<CudaEvent> done, std::shared_ptr<IndexFaults> faults)
      : done_(std::move(done)), faults_(std::move(faults)) {}
  bool done() const override { return cudaEventQuery(done_->event) != cudaErrorNotReady; }
  void wait() override {
    check(cudaEventSynchronize(done_->event), "waiting for a copy");
    if (faults_) faults_->raise();
  }

 private:
  std::shared_ptr<CudaEvent> done_;
  std::shared_ptr<IndexFaults> faults_;
};

// Pinned faults made at a time, for that many runs in flight.
constexpr size_t kFaultSlotsPerBlock = 16;

// What the stream hands the host once a piece of a download is in staging.
struct StagedPiece {
  const void* staging;
  void* to;
  size_t bytes;
};
void CUDART_CB copy_out_of_staging(void* data) {
  auto* piece = static_cast<StagedPiece*>(data);
  std::memcpy(piece->to, piece->staging, piece->bytes);
  delete piece;
}

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

void check(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return;
  throw DeviceError(fmt::format("the GPU failed {}: {}", what, runtime_reason(status)), "E-DEVICE-008");
}

IndexFaults::~IndexFaults() {
  for (const Slot& slot : slots_) cudaEventDestroy(slot.copied);
  for (void* block : blocks_) cudaFreeHost(block);
}

void IndexFaults::copy_after_run(const IndexFault* fault, std::shared_ptr<const graph::Graph> graph,
                                 cudaStream_t stream) {
  if (free_.empty()) {
    void* block = nullptr;
    check(cudaMallocHost(&block, kFaultSlotsPerBlock * sizeof(IndexFault)), "to pin memory for index faults");
    blocks_.push_back(block);
    for (size_t i = 0; i < kFaultSlotsPerBlock; ++i) {
      Slot slot{static_cast<IndexFault*>(block) + i, nullptr};
      check(cudaEventCreateWithFlags(&slot.copied, cudaEventDisableTiming), "cudaEventCreate");
      slots_.push_back(slot);
      free_.push_back(slot);
    }
  }
  Slot slot = free_.back();
  check(cudaMemcpyAsync(slot.fault, fault, sizeof(IndexFault), cudaMemcpyDeviceToHost, stream),
        "to copy an index fault");
  check(cudaEventRecord(slot.copied, stream), "to record an event");
  free_.pop_back();
  copies_.push_back({slot, std::move(graph)});
}

void IndexFaults::raise() {
  size_t done = 0;
  std::optional<IndexFault> first;
  std::shared_ptr<const graph::Graph> first_graph;
  for (; done < copies_.size() && cudaEventQuery(copies_[done].slot.copied) != cudaErrorNotReady; ++done) {
    const Copy& copy = copies_[done];
    if (!first && copy.slot.fault->recorded != 0) {
      first = *copy.slot.fault;
      first_graph = copy.graph;
    }
    free_.push_back(copy.slot);
  }
  copies_.erase(copies_.begin(), copies_.begin() + static_cast<std::ptrdiff_t>(done));
  if (first) throw index_fault_error(*first_graph, *first);
}

DeviceBytes::DeviceBytes(std::shared_ptr<CachingAllocator> allocator, size_t bytes)
    : allocator_(std::move(allocator)), data_(static_cast<uint8_t*>(allocator_->allocate(bytes))) {
  if (!data_) {
    throw DeviceError(fmt::format("the GPU is out of memory: {} bytes asked for, {} in use by buffers", bytes,
                                  allocator_->bytes_in_use()),
                      "E-DEVICE-008");
  }
}

uint8_t* device_data(const Buffer& buffer) {
  auto* memory = dynamic_cast<DeviceBytes*>(buffer.memory());
  if (!memory) throw DeviceError("a buffer given to the cuda device is not one of its buffers");
  return memory->data();
}

}  // namespace cuda

std::string gpu_unusable_reason() {
  int count = 0;
  if (cudaError_t status = cudaGetDeviceCount(&count); status != cudaSuccess) {
    return "no GPU answered: " + cuda::runtime_reason(status);
  }
  if (count == 0) return "no GPU answered: the CUDA runtime found none";
  if (cudaError_t status = cuda::check_kernels_load(); status != cudaSuccess) {
    return fmt::format("{} runs none of this build's kernels, which are for compute capability 8.x and 9.0: {}",
                       cuda::describe_gpu(0), cuda::runtime_reason(status));
  }
  return "";
}

CudaDevice::CudaDevice() {
  if (std::string reason = gpu_unusable_reason(); !reason.empty()) {
    throw DeviceError(fmt::format("the cuda device cannot run here: {}; use --device cpu", reason), "E-DEVICE-006");
  }
  gpu_ = cuda::describe_gpu(0);
  cudaDeviceProp properties;
  cuda::check(cudaGetDeviceProperties(&properties, 0), "to describe itself");
  architecture_ = cuda::gpu_architecture(properties.major, properties.minor);
  cuda::check(cudaSetDevice(0), "to be chosen");
  cuda::check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "to make a stream");
  device_memory_ = std::make_shared<cuda::CachingAllocator>(std::make_unique<cuda::DeviceRaw>());
  pinned_memory_ = std::make_unique<cuda::CachingAllocator>(std::make_unique<cuda::PinnedRaw>());
}

CudaDevice::~CudaDevice() {
  cudaStreamSynchronize(stream_);
  reclaim_staging(true);
  products_.reset();
  pinned_memory_.reset();
  cudaStreamDestroy(stream_);
  // Buffers may outlive the device: the allocator lives on with the last of them.
  device_memory_->release_cached();
}

std::unique_ptr<Plan> CudaDevice::compile(const graph::Graph& graph) {
  return std::make_unique<cuda::CudaPlan>(*this, cuda::with_composites_expanded(graph));
}

bool CudaDevice::supports(graph::PrimId primitive) const { return cuda::has_kernel(primitive); }

bool CudaDevice::runs(const graph::Graph& graph, const graph::Node& node) const {
  return supports(node.op()) && (!node.prim->composite() || cuda::has_composite_kernel(graph, node));
}

cuda::PinnedProducts& CudaDevice::products() {
  if (!products_) products_ = std::make_unique<cuda::PinnedProducts>();
  return *products_;
}

std::unique_ptr<cuda::DeviceBytes> CudaDevice::device_bytes(size_t bytes) {
  return std::make_unique<cuda::DeviceBytes>(device_memory_, bytes);
}

Buffer CudaDevice::allocate(const graph::ValueType& type) {
  size_t bytes = static_cast<size_t>(graph::numel(type.shape)) * graph::dtype_size(type.dtype);
  return Buffer(type, device_bytes(bytes));
}

std::shared_ptr<cuda::CudaEvent> CudaDevice::record() {
  auto event = std::make_shared<cuda::CudaEvent>();
  cuda::check(cudaEventRecord(event->event, stream_), "to record an event");
  return event;
}

void CudaDevice::reclaim_staging(bool all) {
  auto done = [&](const InFlight& copy) {
    if (!all && cudaEventQuery(copy.done->event) == cudaErrorNotReady) return false;
    pinned_memory_->free(copy.staging);
    return true;
  };
  in_flight_.erase(std::remove_if(in_flight_.begin(), in_flight_.end(), done), in_flight_.end());
}

Event CudaDevice::staged_copy(size_t bytes, const std::function<void(void*, size_t, size_t)>& copy_piece,
                              bool download) {
  reclaim_staging(false);
  std::vector<void*> pieces;
  // The pieces are kept until the work put on the stream so far is done, even when a
  // piece fails: a copy before it may still read its staging.
  auto keep_pieces = [&] {
    std::shared_ptr<cuda::CudaEvent> done = record();
    for (void* staging : pieces) in_flight_.push_back({done, staging});
    return done;
  };
  try {
    for (size_t at = 0; at < bytes; at += cuda::kStagingPiece) {
      size_t size = std::min(cuda::kStagingPiece, bytes - at);
      void* staging = pinned_memory_->allocate(size);
      if (!staging) throw DeviceError("no pinned host memory is left to stage a copy", "E-DEVICE-008");
      pieces.push_back(staging);
      copy_piece(staging, at, size);
    }
  } catch (...) {
    keep_pieces();
    throw;
  }
  return Event(std::make_shared<cuda::PendingCopy>(keep_pieces(), download ? index_faults_ : nullptr));
}

Event CudaDevice::upload_into(Buffer& buffer, std::span<const uint8_t> bytes) {
  if (bytes.size() != buffer.byte_size()) {
    throw DeviceError(fmt::format("{} bytes given to a buffer of {}", bytes.size(), buffer.byte_size()));
  }
  uint8_t* to = cuda::device_data(buffer);
  return staged_copy(
      bytes.size(),
      [&](void* staging, size_t at, size_t size) {
        std::memcpy(staging, bytes.data() + at, size);
        cuda::check(cudaMemcpyAsync(to + at, staging, size, cudaMemcpyHostToDevice, stream_), "to copy to the GPU");
      },
      false);
}

Event CudaDevice::download_into(const Buffer& buffer, std::span<uint8_t> bytes) {
  if (bytes.size() != buffer.byte_size()) {
    throw DeviceError(fmt::format("{} bytes given for a buffer of {}", bytes.size(), buffer.byte_size()));
  }
  const uint8_t* from = cuda::device_data(buffer);
  return staged_copy(
      bytes.size(),
      [&](void* staging, size_t at, size_t size) {
        cuda::check(cudaMemcpyAsync(staging, from + at, size, cudaMemcpyDeviceToHost, stream_), "to copy from the GPU");
        auto* piece = new cuda::StagedPiece{staging, bytes.data() + at, size};
        if (cudaError_t status = cudaLaunchHostFunc(stream_, cuda::copy_out_of_staging, piece); status != cudaSuccess) {
          delete piece;
          cuda::check(status, "to copy from the GPU");
        }
      },
      true);
}

void CudaDevice::synchronize() {
  cuda::check(cudaStreamSynchronize(stream_), "to finish its work");
  reclaim_staging(true);
  index_faults_->raise();
}

std::unique_ptr<Device> make_cuda_device() { return std::make_unique<CudaDevice>(); }

}  // namespace sx::device
