// The device interface: a device owns buffers (allocate, upload,
// download) and compiles a graph into a plan; a plan runs on the device's
// buffers and writes the device's buffers. Every device takes the same
// graph; `reference` is the specification the others are tested against.
// Devices are chosen by name with make_device; one not in this build is
// refused by name, never replaced by another in silence.
#pragma once

#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "device/buffer.h"
#include "graph/graph.h"
#include "graph/tensor.h"

namespace sx::device {

// A device cannot be made, or a plan was given the wrong buffers. The
// message is what the user should do; the code is its diagnostic's
// (device/codes.cc): E-DEVICE-001 unless the refusal has its own.
class DeviceError : public std::runtime_error {
 public:
  explicit DeviceError(const std::string& message, const char* code = "E-DEVICE-001")
      : std::runtime_error(message), code_(code) {}
  const char* code() const { return code_; }

 private:
  const char* code_;  // a literal: copying the error cannot throw
};

// The memory limit of a command given none (graph/memory.h): 3/4 of the
// machine's physical memory, or of its cgroup v2 memory.max when that is
// lower; read once. No limit when neither can be read.
uint64_t default_memory_limit();

// Throws graph::MemoryLimitError when `bytes` of buffers the `device` plans
// for a graph pass the memory limit: refused before allocating, so that a
// huge graph is an error, not a process killed by the kernel's OOM killer.
void check_fits_in_memory(std::string_view device, double bytes);

struct DeviceOptions {
  // Threads for the cpu device; 0 = all cores. Other devices ignore it.
  int cpu_cores = 0;
  // The cpu device's instruction set: "scalar", "avx2", "avx512", "avx512bf16"; empty for
  // SEXPGPU_CPU_ISA, else the widest this host runs (see cpu/isa.h).
  std::string cpu_isa = {};
};

// What a plan holds for its runs: its arena (every buffer it computes, placed
// by liveness), the least any arena could be (the most bytes alive at one
// step), and its steps' scratch (the packing buffers of its matrix products).
// Zero for a device that allocates as it runs.
struct PlanMemory {
  size_t arena_bytes = 0;
  size_t live_peak_bytes = 0;
  size_t scratch_bytes = 0;
};

class Device;

class Plan {
 public:
  Plan(Device& device, const graph::Graph& graph);
  virtual ~Plan() = default;
  virtual PlanMemory memory() const { return {}; }

  // Runs the graph on `inputs` (one buffer of this device per graph input, in
  // the order of graph.inputs, each of that input's shape and dtype) and
  // writes `outputs` (one per graph output, likewise); else DeviceError
  // naming the first that does not fit. An output may be one of the inputs
  // (donation: a parameter updated in place): every input is read before any
  // output is written. On cpu, after the first run this allocates nothing. An index
  // outside its axis stops the run (graph::IndexOutOfRange, located at its node of the
  // graph the plan runs); an output written over an input may then be half written.
  virtual void run(std::span<const Buffer* const> inputs, std::span<Buffer* const> outputs) = 0;
  // The same into new buffers of this device.
  std::vector<Buffer> run(std::span<const Buffer* const> inputs);
  // Host values in, host values out (each input copied to the device): for
  // tests and one-off evaluation.
  std::vector<graph::Tensor> run_host(std::span<const graph::Tensor> inputs);
  // The type of each output, in the order of graph.outputs.
  const std::vector<graph::ValueType>& output_types() const { return output_types_; }

 protected:
  Device& device() const { return device_; }

 private:
  Device& device_;
  std::vector<graph::ValueType> output_types_;
};

class Device {
 public:
  virtual ~Device() = default;
  virtual std::string name() const = 0;
  // Verifies the graph and prepares it to run. The plan refers to the device,
  // which must outlive it.
  virtual std::unique_ptr<Plan> compile(const graph::Graph& graph) = 0;

  // A buffer of this device for a value of `type`; its contents are unset.
  virtual Buffer allocate(const graph::ValueType& type);
  // The value on this device (a host device takes the tensor's bytes as they
  // are, without copying them).
  virtual Buffer upload(graph::Tensor value);
  // The buffer's value on the host.
  virtual graph::Tensor download(const Buffer& buffer);
  // The primitives this device runs by their reference kernels, by name; the
  // others it runs by its own. A fallback is named here, never silent.
  virtual std::vector<std::string> fallback_primitives() const { return {}; }
};

// "reference", "cpu" or "cuda". Throws DeviceError saying how to get a cuda device
// where this build or machine cannot make one (cuda/cuda.h), for "metal", which the
// manual names and SexpGPU does not have, and for any other name, listing the devices.
std::unique_ptr<Device> make_device(std::string_view name, const DeviceOptions& options = {});

// The devices this build can make.
std::vector<std::string> available_devices();

// Throws DeviceError unless `inputs` fit the graph's inputs (one each, of its
// shape and dtype, holding memory): shared by every device's Plan::run.
void check_inputs(const graph::Graph& graph, std::span<const Buffer* const> inputs);
// The same for the buffers a run writes.
void check_outputs(const graph::Graph& graph, std::span<Buffer* const> outputs);

}  // namespace sx::device
