// Eager use of tensors in `eval` and `repl`: the tensors a value holds are run on a
// device at once, so printing the value shows their elements.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <string>

#include "device/device.h"
#include "lang/interp.h"

namespace sx::cli {

// --device and --cpu-cores, with SEXPGPU_DEVICE and SEXPGPU_CPU_CORES as defaults.
struct DeviceFlags {
  std::string device;
  int cpu_cores = 0;
  void add_to(CLI::App& command);
  // The device the flags name; E-DEVICE-001 when this build cannot make it.
  std::unique_ptr<device::Device> make() const;
};

// The value of each input of the graph that computes a traced value (parameters, random
// keys); `read` says whether the value depends on it at all.
using InputFeed = std::function<graph::Tensor(const graph::Graph& program, const graph::NamedNode& input, bool read)>;

// The value with every traced tensor in it (at any depth of lists and vectors) replaced
// by a constant holding its elements, computed on `device`.
lang::Value materialize(const lang::Value& value, lang::Interpreter& interp, device::Device& device,
                        const InputFeed& feed);

}  // namespace sx::cli
