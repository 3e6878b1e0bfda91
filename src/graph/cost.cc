// The operation count of a graph (see cost.h).
#include "graph/cost.h"

#include "graph/composite.h"
#include "graph/primitive.h"

namespace sx::graph {
namespace {

int64_t node_flops(const Graph& graph, const Node& node) {
  switch (node.prim->kind) {
    case PrimKind::source:
    case PrimKind::movement: return 0;
    case PrimKind::elementwise:
    case PrimKind::random: return numel(node.shape);
    // One per element of the input it combines: the last (a scatter_add's updates).
    case PrimKind::reduction: return numel(graph.node(node.inputs.back()).shape);
    case PrimKind::product: return 2 * numel(node.shape) * graph.node(node.inputs[0]).shape.back();
    case PrimKind::composite: {
      std::vector<ValueType> args;
      for (NodeId in : node.inputs) args.push_back({graph.node(in).shape, graph.node(in).dtype});
      return flops(decomposition(*node.prim, args, node.attrs));
    }
  }
  return 0;
}

}  // namespace

int64_t flops(const Graph& graph) {
  std::vector<bool> needed(graph.nodes.size(), false);
  for (const NamedNode& o : graph.outputs) needed[o.node] = true;
  int64_t total = 0;
  for (NodeId id = static_cast<NodeId>(graph.nodes.size()); id-- > 0;) {
    if (!needed[id]) continue;
    const Node& node = graph.nodes[id];
    total += node_flops(graph, node);
    for (NodeId in : node.inputs) needed[in] = true;
  }
  return total;
}

}  // namespace sx::graph
