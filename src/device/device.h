// The device interface: a device compiles a graph into a plan; a plan runs
// it on buffers. Every device takes the same graph; `reference` is the
// specification the others are tested against. Devices are chosen by name
// with make_device; one not in this build is refused by name, never
// replaced by another in silence.
#pragma once

#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "graph/graph.h"
#include "graph/tensor.h"

namespace sx::device {

// Host memory with a dtype and a shape.
using Buffer = graph::Tensor;

// A device cannot be made, or a plan was given the wrong buffers. The
// message is what the user should do.
class DeviceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A plan needs more memory than the machine has, or an allocation failed.
class DeviceMemoryError : public DeviceError {
 public:
  using DeviceError::DeviceError;
};

// Throws DeviceMemoryError when `bytes` of buffers cannot fit in this
// machine's physical memory: refused before allocating, so that a huge
// graph is an error, not a process killed by the kernel's OOM killer.
void check_fits_in_memory(std::string_view device, double bytes);

struct DeviceOptions {
  // Threads for the cpu device; 0 = all cores. Other devices ignore it.
  int cpu_cores = 0;
  // The cpu device's instruction set: "scalar", "avx2", "avx512"; empty for
  // SEXPGPU_CPU_ISA, else the widest this host runs.
  std::string cpu_isa = {};
};

// What a plan holds for its runs: its arena (every buffer it computes, placed
// by liveness) and the least any arena could be (the most bytes alive at one
// step). Zero for a device that allocates as it runs.
struct PlanMemory {
  size_t arena_bytes = 0;
  size_t live_peak_bytes = 0;
};

class Plan {
 public:
  virtual ~Plan() = default;
  virtual PlanMemory memory() const { return {}; }
  // One buffer per graph input, in the order of graph.inputs, each with that
  // input's shape and dtype (else DeviceError naming it); returns one buffer
  // per graph output, in the order of graph.outputs.
  virtual std::vector<Buffer> run(std::span<const Buffer> inputs) = 0;
  // The same, writing each output into `outputs` (one per graph output, of
  // its shape and dtype, else DeviceError). On cpu, after the first run this
  // allocates nothing; the default runs `run` and copies.
  virtual void run_into(std::span<const Buffer> inputs, std::span<Buffer> outputs);
};

class Device {
 public:
  virtual ~Device() = default;
  virtual std::string name() const = 0;
  // Verifies the graph and prepares it to run.
  virtual std::unique_ptr<Plan> compile(const graph::Graph& graph) = 0;
};

// "reference" (built always), "cpu", "cuda", "metal". Throws DeviceError
// saying how to get a device that is not in this build, and listing the
// names for an unknown one.
std::unique_ptr<Device> make_device(std::string_view name, const DeviceOptions& options = {});

// The devices this build can make.
std::vector<std::string> available_devices();

// Throws DeviceError unless `inputs` fit the graph's inputs: shared by every
// device's Plan::run.
void check_inputs(const graph::Graph& graph, std::span<const Buffer> inputs);
// The same for the buffers run_into writes.
void check_outputs(const graph::Graph& graph, std::span<const Buffer> outputs);

}  // namespace sx::device
