// The compile path: verify, expand, optimize, compile.
#include "runtime/compile.h"

#include "graph/passes.h"
#include "graph/verify.h"

namespace sx::runtime {

namespace {

// Constants are folded by the device's own kernels, so a folded node has the bits it
// would have had in the program: cpu sums a matmul in another order than reference.
graph::EvaluateConstants on(device::Device& device) {
  return [&device](const graph::Graph& constants) { return device.compile(constants)->run_host({}); };
}

}  // namespace

graph::Graph optimized_with_composites(device::Device& device, const graph::Graph& graph) {
  graph::verify(graph);
  return graph::optimize(graph, on(device));
}

Compiled compile(device::Device& device, const graph::Graph& graph) {
  graph::verify(graph);
  // Before the optimizer: a decomposition's nodes are folded and shared as the library's
  // own nodes would be. A composite_gradient the device does not run builds its composite's
  // decomposition again, so that composite is expanded too, even where the device runs it:
  // its nodes are then the ones the gradient reads, which CSE keeps once.
  const graph::NodePredicate runs = [&device](const graph::Graph& g, const graph::Node& node) {
    return device.runs(g, node);
  };
  std::vector<bool> fallback(graph::kPrimitiveCount, false);
  for (const graph::Node& node : graph.nodes) {
    if (node.prim->composite() && !runs(graph, node)) fallback[graph::index_of(node.op())] = true;
  }
  std::vector<graph::PrimId> decomposed;
  for (const graph::Primitive* p : graph::all_primitives()) {
    if (fallback[graph::index_of(p->id)]) decomposed.push_back(p->id);
  }
  const graph::Graph expanded = graph::expand_shared_composites(graph, runs);
  graph::Graph optimized = graph::optimize(expanded, on(device));
  std::unique_ptr<device::Plan> plan = device.compile(optimized);
  return {std::move(optimized), std::move(plan), std::move(decomposed)};
}

}  // namespace sx::runtime
