// The device factory and the input checks every plan shares.
#include "device/device.h"

#include <fmt/format.h>
#include <unistd.h>

#include "device/cpu/cpu.h"
#include "device/reference/reference.h"

namespace sx::device {

std::unique_ptr<Device> make_device(std::string_view name, const DeviceOptions& options) {
  if (name == "reference") return std::make_unique<ReferenceDevice>();
  if (name == "cpu") return std::make_unique<CpuDevice>(options);
  if (name == "cuda") {
    throw DeviceError("the cuda device is not in this build: rebuild with the CUDA toolkit, or use --device cpu");
  }
  if (name == "metal") {
    throw DeviceError("the metal device is not in this build: it needs macOS with Metal; use --device cpu");
  }
  throw DeviceError(
      fmt::format("unknown device '{}': the devices are reference, cpu, cuda and metal "
                  "(this build has: reference, cpu)",
                  name));
}

std::vector<std::string> available_devices() { return {"reference", "cpu"}; }

void check_fits_in_memory(std::string_view device, double bytes) {
  double memory = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGE_SIZE));
  if (memory > 0 && bytes > memory) {
    throw DeviceMemoryError(
        fmt::format("the {} device needs {:.1f} GiB for this graph's buffers, more than the memory "
                    "of this machine",
                    device, bytes / (1 << 30)));
  }
}

namespace {

// Throws DeviceError unless `buffers` fit `named` (the graph's inputs or its
// outputs, `what` saying which) one for one, in shape and dtype.
void check_buffers(const graph::Graph& graph, const std::vector<graph::NamedNode>& named,
                   std::span<const Buffer> buffers, std::string_view what) {
  if (buffers.size() != named.size()) {
    throw DeviceError(fmt::format("run: the graph has {} {}s, got {} buffers", named.size(), what, buffers.size()));
  }
  for (size_t i = 0; i < buffers.size(); ++i) {
    const graph::Node& node = graph.node(named[i].node);
    if (buffers[i].shape() != node.shape || buffers[i].dtype() != node.dtype) {
      throw DeviceError(fmt::format("run: {} '{}' must be {}{}, got {}{}", what, named[i].name,
                                    graph::dtype_name(node.dtype), graph::shape_str(node.shape),
                                    graph::dtype_name(buffers[i].dtype()), graph::shape_str(buffers[i].shape())));
    }
  }
}

}  // namespace

void check_inputs(const graph::Graph& graph, std::span<const Buffer> inputs) {
  check_buffers(graph, graph.inputs, inputs, "input");
}

void check_outputs(const graph::Graph& graph, std::span<const Buffer> outputs) {
  check_buffers(graph, graph.outputs, outputs, "output");
}

void Plan::run_into(std::span<const Buffer> inputs, std::span<Buffer> outputs) {
  std::vector<Buffer> results = run(inputs);
  if (results.size() != outputs.size()) {
    throw DeviceError(fmt::format("run: the graph has {} outputs, got {} buffers", results.size(), outputs.size()));
  }
  for (size_t i = 0; i < results.size(); ++i) {
    if (results[i].shape() != outputs[i].shape() || results[i].dtype() != outputs[i].dtype()) {
      throw DeviceError(fmt::format("run: output {} is {}{}, its buffer {}{}", i, graph::dtype_name(results[i].dtype()),
                                    graph::shape_str(results[i].shape()), graph::dtype_name(outputs[i].dtype()),
                                    graph::shape_str(outputs[i].shape())));
    }
    std::copy(results[i].bytes().begin(), results[i].bytes().end(), outputs[i].bytes().begin());
  }
}

}  // namespace sx::device
