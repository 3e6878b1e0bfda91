// The device interface, for devices that own their memory and run on a stream of their
// own (a GPU), as XLA's PJRT and ggml's backends are: a device owns buffers, copies host
// bytes into and out of them, and compiles a graph into a plan; a plan runs on the
// device's buffers and writes the device's buffers. Copies and runs are put on the
// device's stream in the order they are given and return at once: a copy with an event
// to wait on, a run with nothing (a later copy out, or synchronize, waits for it). A host
// device (cpu, reference) does each before it returns. Every device takes the same graph;
// `reference` is the specification the others are tested against. Devices are chosen by
// name with make_device; one not in this build is refused by name, never replaced by
// another in silence.
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

// Work given to a device that may not be done yet (a copy). A host device's are done
// when it returns them.
class Event {
 public:
  // What a device keeps behind an event it has not finished.
  class Pending {
   public:
    virtual ~Pending() = default;
    virtual bool done() const = 0;
    virtual void wait() = 0;
  };

  Event() = default;  // done
  explicit Event(std::shared_ptr<Pending> pending) : pending_(std::move(pending)) {}
  bool done() const { return !pending_ || pending_->done(); }
  // Returns once the work is done.
  void wait() const {
    if (pending_) pending_->wait();
  }

 private:
  std::shared_ptr<Pending> pending_;
};

class Device;

class Plan {
 public:
  Plan(Device& device, const graph::Graph& graph);
  virtual ~Plan() = default;
  virtual PlanMemory memory() const { return {}; }

  // Puts a run of the graph on the device's stream: it reads `inputs` (one buffer of
  // this device per graph input, in the order of graph.inputs, each of that input's
  // shape and dtype) and writes `outputs` (one per graph output, likewise); else
  // DeviceError naming the first that does not fit. An output may be one of the inputs
  // (donation: a parameter updated in place): every input is read before any output is
  // written. The buffers must live until the run is done: a later copy out of the device
  // waits for it, as synchronize does. A host device runs it before returning; on cpu,
  // after the first run this allocates nothing. An index outside its axis stops the run
  // (graph::IndexOutOfRange, located at its node of the graph the plan runs); an output
  // written over an input may then be half written. A device that runs asynchronously
  // (cuda) raises it at the next wait on the run (a download's or synchronize).
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
  // Whether the device runs `primitive` by a kernel of its own (by default every
  // primitive but the composites). A plan runs a primitive it does not by its reference
  // kernel; a composite it does not is expanded into its decomposition before the
  // device sees it (runtime::compile, which lists them). Either way the fallback is
  // named, never silent.
  virtual bool supports(graph::PrimId primitive) const;
  // Whether it runs `node` of `graph` by that kernel: a device may run some forms of a
  // composite alone (a softmax over rows, not over columns). By default, `supports`.
  virtual bool runs(const graph::Graph& /*graph*/, const graph::Node& node) const { return supports(node.op()); }
  // The primitives but the composites that the device does not support, by name.
  std::vector<std::string> fallback_primitives() const;

  // A buffer of this device for a value of `type`; its contents are unset. Buffers are
  // the device's: the host reaches their values only by the copies below.
  virtual Buffer allocate(const graph::ValueType& type) = 0;
  // Puts on the stream a copy of `bytes`, a value of the buffer's type as graph::Tensor
  // lays it out, into `buffer`; the bytes must stay as they are until the event is done.
  // DeviceError when their count is not the buffer's byte_size().
  virtual Event upload_into(Buffer& buffer, std::span<const uint8_t> bytes) = 0;
  // Puts on the stream a copy of the buffer's value, as the work before it leaves it,
  // into `bytes` (byte_size() of them), which hold it once the event is done.
  virtual Event download_into(const Buffer& buffer, std::span<uint8_t> bytes) = 0;
  // Returns once all the work given to the device is done.
  virtual void synchronize() = 0;

  // A new buffer holding `value`, once it is copied in (a host device takes the
  // tensor's bytes as they are, without copying them).
  virtual Buffer upload(graph::Tensor value);
  // The buffer's value on the host, once the work before it is done.
  graph::Tensor download(const Buffer& buffer);
};

// A device whose buffers are host memory (a graph::Tensor each, buffer.h): its copies
// are done when they return.
class HostDevice : public Device {
 public:
  Buffer allocate(const graph::ValueType& type) override;
  Event upload_into(Buffer& buffer, std::span<const uint8_t> bytes) override;
  Event download_into(const Buffer& buffer, std::span<uint8_t> bytes) override;
  void synchronize() override {}
  Buffer upload(graph::Tensor value) override;
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
