// Reverse-mode autodiff (see autodiff.h).
#include "graph/autodiff.h"

#include <fmt/format.h>

#include <optional>

#include "graph/errors.h"

namespace sx::graph {

std::vector<NodeId> gradients(Builder& b, NodeId loss, std::span<const NodeId> wrt) {
  const Graph& graph = b.graph();
  const Node& loss_node = b.node(loss);
  if (!loss_node.shape.empty() || !is_float(loss_node.dtype)) {
    throw GraphError(fmt::format("grad: the loss must be a floating-point scalar, got {}{}",
                                 dtype_name(loss_node.dtype), shape_str(loss_node.shape)));
  }
  size_t count = loss + 1;
  // Nodes on a path from some wrt node to the loss: only they need cotangents.
  std::vector<bool> from_wrt(count, false), to_loss(count, false);
  for (NodeId w : wrt) {
    b.node(w);
    if (w < count) from_wrt[w] = true;
  }
  for (NodeId id = 0; id < count; ++id) {
    for (NodeId in : graph.nodes[id].inputs) from_wrt[id] = from_wrt[id] || from_wrt[in];
  }
  to_loss[loss] = true;
  for (NodeId id = loss + 1; id-- > 0;) {
    if (!to_loss[id]) continue;
    for (NodeId in : graph.nodes[id].inputs) to_loss[in] = true;
  }
  auto relevant = [&](NodeId id) { return from_wrt[id] && to_loss[id]; };

  std::vector<std::optional<NodeId>> cotangent(count);
  cotangent[loss] = b.scalar(1.0, loss_node.dtype);
  for (NodeId id = loss + 1; id-- > 0;) {
    if (!relevant(id) || !cotangent[id]) continue;
    Node node = graph.nodes[id];  // a copy: the rule appends to graph.nodes
    if (!node.prim->differentiable()) continue;
    std::vector<std::optional<NodeId>> grads = node.prim->grad(b, node, id, *cotangent[id]);
    if (grads.size() != node.inputs.size()) {
      throw GraphError(fmt::format("grad: the rule of {} gave {} cotangents for {} inputs", describe_node(graph, id),
                                   grads.size(), node.inputs.size()));
    }
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      NodeId in = node.inputs[i];
      if (!grads[i] || !relevant(in)) continue;
      const Node& input = graph.nodes[in];
      if (b.shape(*grads[i]) != input.shape || b.dtype(*grads[i]) != input.dtype) {
        throw GraphError(fmt::format("grad: the rule of {} gave a {}{} cotangent for its input {}",
                                     describe_node(graph, id), dtype_name(b.dtype(*grads[i])),
                                     shape_str(b.shape(*grads[i])), describe_node(graph, in)));
      }
      cotangent[in] = cotangent[in] ? b.add(*cotangent[in], *grads[i]) : *grads[i];
    }
  }
  std::vector<NodeId> out;
  for (NodeId w : wrt) {
    if (w < count && cotangent[w]) out.push_back(*cotangent[w]);
    else out.push_back(b.zeros(b.shape(w), b.dtype(w)));
  }
  return out;
}

Graph with_gradients(const Graph& graph, std::string_view loss, std::span<const std::string> wrt,
                     std::string_view prefix) {
  Graph out = graph;
  Builder b(out);
  auto loss_node = graph.find_output(loss);
  if (!loss_node) throw GraphError(fmt::format("grad: the graph has no output named '{}'", loss));
  std::vector<NodeId> wrt_nodes;
  for (const std::string& name : wrt) {
    auto node = graph.find_input(name);
    if (!node) throw GraphError(fmt::format("grad: the graph has no input named '{}'", name));
    wrt_nodes.push_back(*node);
  }
  std::vector<NodeId> grads = gradients(b, *loss_node, wrt_nodes);
  for (size_t i = 0; i < wrt.size(); ++i) b.output(fmt::format("{}{}", prefix, wrt[i]), grads[i]);
  return out;
}

}  // namespace sx::graph
