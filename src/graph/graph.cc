// Lookups on graphs and how error messages name their nodes.
#include "graph/graph.h"

#include <fmt/format.h>

#include "graph/primitive.h"

namespace sx::graph {

PrimId Node::op() const { return prim->id; }

std::string_view Node::op_name() const { return prim ? prim->name : "?"; }

std::optional<NodeId> Graph::find_input(std::string_view name) const {
  for (const NamedNode& in : inputs) {
    if (in.name == name) return in.node;
  }
  return std::nullopt;
}

std::optional<NodeId> Graph::find_output(std::string_view name) const {
  for (const NamedNode& out : outputs) {
    if (out.name == name) return out.node;
  }
  return std::nullopt;
}

std::string describe_node(const Graph& graph, NodeId id) {
  if (id >= graph.nodes.size()) return fmt::format("node {} (out of range)", id);
  const Node& n = graph.nodes[id];
  return fmt::format("node {} ({} {}{})", id, n.op_name(), dtype_name(n.dtype), shape_str(n.shape));
}

}  // namespace sx::graph
