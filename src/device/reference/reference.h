// The reference device: one thread, no fusion, each node run in graph order
// by its primitive's reference kernel. It is the specification: every other
// device is tested against it.
#pragma once

#include "device/device.h"

namespace sx::device {

class ReferenceDevice : public HostDevice {
 public:
  std::string name() const override { return "reference"; }
  std::unique_ptr<Plan> compile(const graph::Graph& graph) override;
};

// Runs `graph` on the reference device: the shortest way to evaluate one.
std::vector<graph::Tensor> run_reference(const graph::Graph& graph, std::span<const graph::Tensor> inputs);

}  // namespace sx::device
