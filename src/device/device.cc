// The device factory and the input checks every plan shares.
#include "device/device.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <fstream>
#include <optional>

#include "device/cpu/cpu.h"
#include "device/cuda/cuda.h"
#include "device/interrupt.h"
#include "device/reference/reference.h"
#include "graph/memory.h"
#include "graph/primitive.h"
#include "graph/shown.h"

namespace sx::device {

std::unique_ptr<Device> make_device(std::string_view name, const DeviceOptions& options) {
  if (name == "reference") return std::make_unique<ReferenceDevice>();
  if (name == "cpu") return std::make_unique<CpuDevice>(options);
  if (name == "cuda") return make_cuda_device();
  // The manual names metal, a device SexpGPU does not have: it is refused by name.
  if (name == "metal") {
    throw DeviceError("SexpGPU has no metal device: tensors run on reference, cpu or cuda; use --device cpu");
  }
  throw DeviceError(
      fmt::format("unknown device '{}': the devices are reference, cpu and cuda", graph::shown_in_message(name)));
}

std::vector<std::string> available_devices() { return {"reference", "cpu"}; }

namespace {
std::atomic<const std::atomic<bool>*> run_stop_flag{nullptr};
}  // namespace

void stop_runs_when(const std::atomic<bool>* flag) { run_stop_flag.store(flag); }

void check_interrupt() {
  const std::atomic<bool>* flag = run_stop_flag.load(std::memory_order_relaxed);
  if (flag && flag->load(std::memory_order_relaxed)) throw Interrupted();
}

namespace {

// The cgroup v2 limit of this process's group, when one is set ("max" means none).
std::optional<uint64_t> cgroup_memory_max() {
  std::ifstream file("/sys/fs/cgroup/memory.max");
  std::string text;
  if (!(file >> text)) return std::nullopt;
  uint64_t bytes = 0;
  auto parsed = std::from_chars(text.data(), text.data() + text.size(), bytes);
  if (parsed.ec != std::errc() || parsed.ptr != text.data() + text.size()) return std::nullopt;
  return bytes;
}

}  // namespace

uint64_t default_memory_limit() {
  static const uint64_t limit = [] {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    uint64_t memory = pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
    if (auto cgroup = cgroup_memory_max(); cgroup && (memory == 0 || *cgroup < memory)) memory = *cgroup;
    return memory == 0 ? UINT64_MAX : std::max<uint64_t>(memory / 4 * 3, 1);
  }();
  return limit;
}

void check_fits_in_memory(std::string_view device, double bytes) {
  graph::check_memory(bytes, [&] { return fmt::format("the {} device, running this graph,", device); });
}

namespace {

// Throws DeviceError unless `buffers` fit `named` (the graph's inputs or its
// outputs, `what` saying which) one for one, in shape and dtype.
template <class BufferPointer>
void check_buffers(const graph::Graph& graph, const std::vector<graph::NamedNode>& named,
                   std::span<BufferPointer const> buffers, std::string_view what) {
  if (buffers.size() != named.size()) {
    throw DeviceError(fmt::format("run: the graph has {} {}s, got {} buffers", named.size(), what, buffers.size()));
  }
  for (size_t i = 0; i < buffers.size(); ++i) {
    const graph::Node& node = graph.node(named[i].node);
    if (!buffers[i] || !buffers[i]->holds_memory()) {
      throw DeviceError(fmt::format("run: {} '{}' has no buffer", what, named[i].name));
    }
    if (buffers[i]->shape() != node.shape || buffers[i]->dtype() != node.dtype) {
      throw DeviceError(fmt::format("run: {} '{}' must be {}{}, got {}{}", what, named[i].name,
                                    graph::dtype_name(node.dtype), graph::shape_str(node.shape),
                                    graph::dtype_name(buffers[i]->dtype()), graph::shape_str(buffers[i]->shape())));
    }
  }
}

}  // namespace

void check_inputs(const graph::Graph& graph, std::span<const Buffer* const> inputs) {
  check_buffers(graph, graph.inputs, inputs, "input");
}

void check_outputs(const graph::Graph& graph, std::span<Buffer* const> outputs) {
  check_buffers(graph, graph.outputs, outputs, "output");
}

Buffer host_buffer(graph::Tensor value) {
  graph::ValueType type{value.shape(), value.dtype()};
  return Buffer(std::move(type), std::make_unique<HostMemory>(std::move(value)));
}

const graph::Tensor* host_tensor_if(const Buffer& buffer) {
  return buffer.memory() == nullptr ? nullptr : buffer.memory()->host_value();
}

const graph::Tensor& host_tensor(const Buffer& buffer) {
  const graph::Tensor* value = host_tensor_if(buffer);
  if (value == nullptr) throw DeviceError("a buffer without host memory was given to a host device");
  return *value;
}

graph::Tensor& host_tensor(Buffer& buffer) {
  return const_cast<graph::Tensor&>(host_tensor(static_cast<const Buffer&>(buffer)));
}

bool Device::supports(graph::PrimId primitive) const { return !graph::primitive(primitive).composite(); }

std::vector<std::string> Device::fallback_primitives() const {
  std::vector<std::string> names;
  for (const graph::Primitive* p : graph::all_primitives()) {
    if (!p->composite() && !supports(p->id)) names.emplace_back(p->name);
  }
  return names;
}

Buffer Device::upload(graph::Tensor value) {
  Buffer buffer = allocate({value.shape(), value.dtype()});
  upload_into(buffer, value.bytes()).wait();
  return buffer;
}

graph::Tensor Device::download(const Buffer& buffer) {
  graph::Tensor value(buffer.dtype(), buffer.shape());
  download_into(buffer, value.bytes()).wait();
  return value;
}

namespace {

// Throws DeviceError unless `bytes` bytes fit `buffer`.
void check_copy(const Buffer& buffer, size_t bytes, std::string_view copy) {
  if (bytes != buffer.byte_size()) {
    throw DeviceError(fmt::format("{}: {} bytes for a buffer of {}{}, which holds {}", copy, bytes,
                                  graph::dtype_name(buffer.dtype()), graph::shape_str(buffer.shape()),
                                  buffer.byte_size()));
  }
}

}  // namespace

Buffer HostDevice::allocate(const graph::ValueType& type) { return host_buffer(graph::Tensor(type.dtype, type.shape)); }

Event HostDevice::upload_into(Buffer& buffer, std::span<const uint8_t> bytes) {
  check_copy(buffer, bytes.size(), "upload");
  std::copy(bytes.begin(), bytes.end(), host_tensor(buffer).bytes().begin());
  return {};
}

Event HostDevice::download_into(const Buffer& buffer, std::span<uint8_t> bytes) {
  check_copy(buffer, bytes.size(), "download");
  std::span<const uint8_t> held = host_tensor(buffer).bytes();
  std::copy(held.begin(), held.end(), bytes.begin());
  return {};
}

Buffer HostDevice::upload(graph::Tensor value) { return host_buffer(std::move(value)); }

Plan::Plan(Device& device, const graph::Graph& graph) : device_(device) {
  for (const graph::NamedNode& out : graph.outputs) {
    const graph::Node& node = graph.node(out.node);
    output_types_.push_back({node.shape, node.dtype});
  }
}

std::vector<Buffer> Plan::run(std::span<const Buffer* const> inputs) {
  // The outputs' types are the graph's; a plan that checks its inputs first
  // reports a wrong one before anything is allocated.
  std::vector<Buffer> outputs;
  for (const graph::ValueType& type : output_types()) outputs.push_back(device_.allocate(type));
  std::vector<Buffer*> pointers;
  for (Buffer& b : outputs) pointers.push_back(&b);
  run(inputs, pointers);
  return outputs;
}

std::vector<graph::Tensor> Plan::run_host(std::span<const graph::Tensor> inputs) {
  std::vector<Buffer> buffers;
  for (const graph::Tensor& t : inputs) buffers.push_back(device_.upload(t));
  std::vector<const Buffer*> pointers;
  for (const Buffer& b : buffers) pointers.push_back(&b);
  std::vector<Buffer> outputs = run(pointers);
  std::vector<graph::Tensor> values;
  for (const Buffer& b : outputs) values.push_back(device_.download(b));
  return values;
}

}  // namespace sx::device
