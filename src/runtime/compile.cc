// The compile path: verify, optimize, compile.
#include "runtime/compile.h"

#include "graph/passes.h"
#include "graph/verify.h"

namespace sx::runtime {

Compiled compile(device::Device& device, const graph::Graph& graph) {
  graph::verify(graph);
  // Constants are folded by the device's own kernels, so a folded node has the bits it
  // would have had in the program: cpu sums a matmul in another order than reference.
  auto on_device = [&device](const graph::Graph& constants) { return device.compile(constants)->run_host({}); };
  graph::Graph optimized = graph::optimize(graph, on_device);
  std::unique_ptr<device::Plan> plan = device.compile(optimized);
  return {std::move(optimized), std::move(plan)};
}

}  // namespace sx::runtime
