// Programs: a graph compiled once for a device, with the role of
// each input and output, run many times on buffers the device owns. The
// parameters and optimizer state live in a Store between runs; a program
// reads them there and writes their new values over them (donation), so a
// training step copies no parameter to or from the host. The scalars a
// caller logs (metrics, counters, guards) come back together, in one copy
// from the device a run. The runtime knows graphs and devices, never a Lisp
// value.
#pragma once

#include <map>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "device/device.h"
#include "graph/graph.h"

namespace sx::runtime {

// A program was given inputs that do not fit it. The message says which.
class ProgramError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class Role {
  parameter,        // input: read from the store by path; output: written over it
  optimizer_state,  // likewise, by the state's path
  data,             // input: fed by the caller at each run (a batch)
  random_key,       // input: fed by the caller (the key of a random stream)
  step,             // input: fed by the caller (the steps done so far)
  value,            // output: a result the caller reads, in a buffer (a prediction)
  metric,           // output: a scalar the caller logs (a loss, a learning rate)
  counter,          // output: a scalar the caller adds to a total it keeps (tokens seen)
  guard,            // output: a bool scalar; false stops the caller
};

std::string_view role_name(Role role);

// The role of one input or output, and its name: the path of a parameter or
// state, a data field, a random stream, a metric.
struct Binding {
  Role role = Role::value;
  std::string name;
};

// Buffers that outlive programs: parameters and optimizer state by path, on
// one device.
class Store {
 public:
  explicit Store(device::Device& device) : device_(device) {}
  device::Device& device() const { return device_; }

  bool contains(std::string_view path) const { return buffers_.find(path) != buffers_.end(); }
  // ProgramError when the store has no such path.
  device::Buffer& at(std::string_view path);
  const device::Buffer& at(std::string_view path) const;
  // Uploads `value` as `path`'s buffer, replacing any it had.
  void put(const std::string& path, graph::Tensor value);
  graph::Tensor read(std::string_view path) const;
  void erase(std::string_view path);
  std::vector<std::string> paths() const;

 private:
  device::Device& device_;
  std::map<std::string, device::Buffer, std::less<>> buffers_;
};

class Program {
 public:
  // `inputs[i]` is the role of graph.inputs[i], `outputs[i]` of
  // graph.outputs[i] (ProgramError when a role does not fit its side, or a
  // metric, counter or guard is not a scalar). The graph is compiled by
  // runtime::compile (optimized, then the device's compile), which keeps its
  // inputs and outputs, once its number outputs are gathered into one: each
  // cast to f64 (exactly: every value of a narrower dtype is an f64), in one
  // vector, the graph's last output. The device must outlive the program.
  Program(device::Device& device, graph::Graph graph, std::vector<Binding> inputs, std::vector<Binding> outputs);

  // The optimized graph the program runs: its outputs are the given ones but
  // the number outputs, then the vector of the numbers.
  const graph::Graph& graph() const { return graph_; }
  const std::vector<Binding>& inputs() const { return inputs_; }
  const std::vector<Binding>& outputs() const { return outputs_; }
  device::PlanMemory memory() const { return plan_->memory(); }

  // The inputs the caller feeds (data, random keys, step), in graph order; the
  // outputs a run returns in buffers (values), and those it returns as numbers
  // (metrics, counters, guards), each in the order of the given outputs.
  const std::vector<size_t>& fed_inputs() const { return fed_; }
  const std::vector<size_t>& returned_outputs() const { return returned_; }
  const std::vector<size_t>& number_outputs() const { return numbers_; }

  // Puts a run on the device's stream. Parameter and state inputs are read
  // from `store`, the others from `fed` (one buffer each, in the order of
  // fed_inputs()); parameter and state outputs are written over the store's
  // buffers of their paths. The values are returned in the program's own
  // buffers, in the order of returned_outputs(), valid until the next run. On
  // cpu, after the first run this allocates nothing.
  std::span<const device::Buffer> run(Store& store, std::span<const device::Buffer* const> fed);
  // The numbers of the last run, in the order of number_outputs() (a guard's 1
  // or 0), read in one copy from the device once the run is done; valid until
  // the next call. Allocates nothing.
  std::span<const double> read_numbers();

 private:
  device::Device& device_;
  graph::Graph graph_;
  std::vector<Binding> inputs_, outputs_;
  std::vector<size_t> fed_, returned_, numbers_;
  std::unique_ptr<device::Plan> plan_;
  std::vector<device::Buffer> results_;    // one per returned output
  device::Buffer numbers_buffer_;          // f64[number outputs], the plan's last output
  std::vector<double> numbers_read_;       // its copy on the host
  std::vector<const device::Buffer*> in_;  // kept between runs: a run allocates nothing
  std::vector<device::Buffer*> out_;       // one per output of the plan
};

}  // namespace sx::runtime
