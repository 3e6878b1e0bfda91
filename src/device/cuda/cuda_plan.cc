// The cuda device's plan: its steps launched on the stream, then captured and replayed.
#include "device/cuda/cuda_plan.h"

#include <algorithm>

#include "device/cuda/codegen.h"
#include "device/cuda/elementwise.h"
#include "device/cuda/index_math.h"
#include "device/cuda/movement.h"
#include "device/cuda/nvrtc.h"
#include "device/cuda/scatter_add.h"

namespace sx::device::cuda {
namespace {

// Captured CUDA graphs kept per plan, and sets of buffers counted toward a capture: a
// caller that runs with ever new buffers drops one of each beyond these.
constexpr size_t kMostCaptures = 8;
constexpr size_t kMostCounted = 64;

// The generated kernels' launch shape: a grid-stride loop over n elements (or rows).
constexpr auto kThreads = static_cast<unsigned>(kGeneratedKernelThreads);
unsigned grid_for(int64_t n) {
  return static_cast<unsigned>(std::clamp<int64_t>((n + kThreads - 1) / kThreads, 1, 65535));
}

}  // namespace

CudaPlan::CudaPlan(CudaDevice& device, const graph::Graph& graph)
    : Plan(device, graph),
      cuda_(device),
      graph_(std::make_shared<const graph::Graph>(graph)),
      program_(plan_program(graph, [](int64_t count, int key_bits) {
        size_t bytes = 0;
        check(sort_scratch_bytes(count, key_bits, &bytes), "to size a sort's scratch");
        return bytes;
      })) {
  for (graph::NodeId id : program_.constants) constants_.push_back(device.upload(*graph.node(id).value));
  arena_ = device.device_bytes(program_.arena.size);
  if (std::any_of(program_.steps.begin(), program_.steps.end(), [](const Step& s) { return s.checks_indices; })) {
    fault_ = device.device_bytes(sizeof(IndexFault));
  }
  if (program_.kernel_names.empty()) return;
  std::vector<uint8_t> cubin = cached_cubin(program_.source, device.architecture());
  check(cudaLibraryLoadData(&library_, cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0),
        "to load the generated kernels");
  for (const std::string& name : program_.kernel_names) {
    check(cudaLibraryGetKernel(&kernels_.emplace_back(), library_, name.c_str()), "to find a generated kernel");
  }
}

CudaPlan::~CudaPlan() {
  for (auto& [addresses, exec] : captured_) cudaGraphExecDestroy(exec);
  if (library_) cudaLibraryUnload(library_);
}

void CudaPlan::enqueue(const Addresses& addresses) {
  auto at = [&](const Place& place) -> const void* {
    switch (place.kind) {
      case Place::Kind::input: return addresses[place.index];
      case Place::Kind::constant: return device_data(constants_[place.index]);
      case Place::Kind::arena: break;
    }
    return arena_->data() + place.index;
  };
  cudaStream_t stream = cuda_.stream();
  if (fault_) check(cudaMemsetAsync(fault_->data(), 0, sizeof(IndexFault), stream), "to clear its index fault");
  for (const Step& step : program_.steps) {
    if (step.n == 0 && step.checked_indices == 0) continue;
    void* out = arena_->data() + step.out;
    if (step.kind == Step::Kind::product) {
      cuda_.products().run({.n = step.columns, .k = step.length, .dtype = step.dtype}, step.batch, step.n,
                           at(step.operands[0]), at(step.operands[1]), out, stream);
      continue;
    }
    if (step.kind == Step::Kind::movement) {
      std::vector<const void*> sources;
      for (const Place& operand : step.operands) sources.push_back(at(operand));
      check(launch_movement(step.movement, sources.data(), out, step.n, graph::dtype_size(step.dtype), stream),
            "to launch a movement kernel");
      continue;
    }
    if (step.kind == Step::Kind::scatter_add) {
      check(launch_sorted_scatter(step.scatter, at(step.operands[0]), at(step.operands[1]), at(step.operands[2]), out,
                                  arena_->data() + step.scratch, reinterpret_cast<IndexFault*>(fault_->data()),
                                  step.node, stream),
            "to launch a scatter_add");
      continue;
    }
    if (step.kind == Step::Kind::elementwise && step.prim == graph::PrimId::cast) {
      check(launch_cast(step.dtype, step.cast_to, at(step.operands[0]), out, step.n, stream), "to launch a cast");
      continue;
    }
    if (step.kind == Step::Kind::elementwise) {
      check(launch_elementwise(step.prim, step.dtype, at(step.operands[0]),
                               step.operands.size() > 1 ? at(step.operands[1]) : nullptr, out, step.n, stream),
            "to launch a kernel");
      continue;
    }
    // The generated kernels' parameters: the operands, out, then n (and a row's length).
    std::vector<const void*> pointers;
    for (const Place& operand : step.operands) pointers.push_back(at(operand));
    std::vector<void*> arguments;
    for (const void*& pointer : pointers) arguments.push_back(&pointer);
    arguments.push_back(&out);
    int64_t n = step.n, length = step.length;
    arguments.push_back(&n);
    if (step.kind == Step::Kind::row) arguments.push_back(&length);
    void* fault = fault_ ? fault_->data() : nullptr;
    uint32_t node = step.node;
    if (step.checks_indices) {
      arguments.push_back(&fault);
      arguments.push_back(&node);
    }
    check(cudaLaunchKernel(reinterpret_cast<const void*>(kernels_[step.kernel]),
                           grid_for(step.threads ? step.threads : step.n), kThreads, arguments.data(), 0, stream),
          "to launch a generated kernel");
    if (step.second_kernel) {
      check(cudaLaunchKernel(reinterpret_cast<const void*>(kernels_[*step.second_kernel]),
                             grid_for(step.second_threads), kThreads, arguments.data(), 0, stream),
            "to launch a generated kernel's second pass");
    }
  }
  for (const Stage& stage : program_.stages) {
    check(cudaMemcpyAsync(arena_->data() + stage.to, at(stage.from), stage.bytes, cudaMemcpyDeviceToDevice, stream),
          "to stage an output");
  }
  const graph::Graph& graph = *graph_;
  size_t first_output = graph.inputs.size();
  for (size_t k = 0; k < program_.outputs.size(); ++k) {
    size_t bytes = static_cast<size_t>(graph::numel(graph.node(graph.outputs[k].node).shape)) *
                   graph::dtype_size(graph.node(graph.outputs[k].node).dtype);
    check(cudaMemcpyAsync(addresses[first_output + k], arena_->data() + program_.outputs[k], bytes,
                          cudaMemcpyDeviceToDevice, stream),
          "to write an output");
  }
}

cudaGraphExec_t CudaPlan::capture(const Addresses& addresses) {
  cudaStream_t stream = cuda_.stream();
  check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "to capture a step");
  cudaGraph_t captured = nullptr;
  try {
    enqueue(addresses);
  } catch (...) {
    cudaStreamEndCapture(stream, &captured);
    if (captured) cudaGraphDestroy(captured);
    throw;
  }
  check(cudaStreamEndCapture(stream, &captured), "to capture a step");
  cudaGraphExec_t exec = nullptr;
  cudaError_t status = cudaGraphInstantiate(&exec, captured, 0);
  cudaGraphDestroy(captured);
  check(status, "to instantiate a captured step");
  return exec;
}

void CudaPlan::run(std::span<const Buffer* const> inputs, std::span<Buffer* const> outputs) {
  check_inputs(*graph_, inputs);
  check_outputs(*graph_, outputs);
  Addresses addresses;
  for (const Buffer* input : inputs) addresses.push_back(device_data(*input));
  for (Buffer* output : outputs) addresses.push_back(device_data(*output));
  launch(addresses);
  if (fault_) {
    cuda_.index_faults().copy_after_run(reinterpret_cast<const IndexFault*>(fault_->data()), graph_, cuda_.stream());
  }
}

void CudaPlan::launch(const Addresses& addresses) {
  if (auto found = captured_.find(addresses); found != captured_.end()) {
    check(cudaGraphLaunch(found->second, cuda_.stream()), "to launch a captured step");
    ++replays_;
    return;
  }
  // The first run with these buffers goes step by step: a failure names its step, and a
  // plan run once is not worth capturing.
  if (runs_.size() == kMostCounted && !runs_.contains(addresses)) runs_.erase(runs_.begin());
  if (runs_[addresses]++ == 0) {
    enqueue(addresses);
    return;
  }
  runs_.erase(addresses);
  if (captured_.size() == kMostCaptures) {
    cudaGraphExecDestroy(captured_.begin()->second);
    captured_.erase(captured_.begin());
  }
  cudaGraphExec_t exec = capture(addresses);
  captured_.emplace(addresses, exec);
  check(cudaGraphLaunch(exec, cuda_.stream()), "to launch a captured step");
  ++replays_;
}

}  // namespace sx::device::cuda
