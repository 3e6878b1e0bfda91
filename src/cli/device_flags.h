// The flags that choose a device: --device and --cpu-cores.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <string_view>

#include "device/device.h"

namespace sx::cli {

// --device and --cpu-cores, with SEXPGPU_DEVICE and SEXPGPU_CPU_CORES as defaults.
struct DeviceFlags {
  std::string device;
  std::string cpu_cores;                        // --cpu-cores as written; read by make()
  const CLI::Option* cpu_cores_flag = nullptr;  // whether --cpu-cores was given
  void add_to(CLI::App& command);
  // The device the flags name; the device's refusal when it cannot be made (E-DEVICE-001,
  // or for cuda E-DEVICE-005 without the toolkit and E-DEVICE-006 without a GPU),
  // E-DEVICE-003 when --cpu-cores (or SEXPGPU_CPU_CORES) is not a positive whole number.
  std::unique_ptr<device::Device> make() const;
};

// The cores a count asks for, `text` as written in `source` (the flag or the variable):
// a positive whole number of decimal digits that fits an int. A count above `host_cores`
// means all cores (it gives 0, as DeviceOptions has it). Anything else (0, a count too
// large for an int, a sign, a fraction, spaces, nothing) is E-DEVICE-003 naming the
// source and the value.
int parse_cpu_cores(std::string_view text, std::string_view source, int host_cores);

}  // namespace sx::cli
