// The one way a graph becomes a plan: verify it, expand the composites the device does
// not run itself into their decompositions, optimize it (the graph passes, constants
// folded on the device itself), then the device's compile. Every
// command reaches a device through here: a Program's construction (training steps,
// evaluation passes, eager evaluation, serving) and the parameters' initializers, and
// `check` runs it without running the plan.
#pragma once

#include <memory>
#include <vector>

#include "device/device.h"
#include "graph/graph.h"
#include "graph/primitive.h"

namespace sx::runtime {

struct Compiled {
  graph::Graph graph;  // the optimized graph the plan runs: its inputs and outputs as given
  std::unique_ptr<device::Plan> plan;
  // The composites of the graph that the device runs by their decompositions (each once,
  // in registry order): its fallbacks, which are named, never silent.
  std::vector<graph::PrimId> decomposed;
};

// The graph after the passes with each composite kept as one node (a softmax one
// `softmax`, an optimizer's update one `adamw` per parameter): what the program computes,
// at the level the library wrote it, before compile expands what the device lacks.
// `check --graph` prints it for a run's step.
graph::Graph optimized_with_composites(device::Device& device, const graph::Graph& graph);

// graph::VerifyError for a graph that is not well formed; the device's errors
// (device::DeviceError, graph::MemoryLimitError) for one it cannot compile. The device
// must outlive the plan.
Compiled compile(device::Device& device, const graph::Graph& graph);

}  // namespace sx::runtime
