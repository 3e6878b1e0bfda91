// Reverse-mode autodiff (see autodiff.h).
#include "graph/autodiff.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "graph/errors.h"

namespace sx::graph {
namespace {

// A cotangent that is zero but for one block along one axis: a pad by zeros,
// without interior padding, of `piece` along `axis` alone (a slice's gradient).
struct Block {
  NodeId piece;
  size_t axis;
  int64_t start, length;
};

std::optional<Block> zero_padded_block(const Builder& b, NodeId id) {
  const Node& node = b.node(id);
  if (node.op() != PrimId::pad || node.attrs.get_double("value") != 0.0) return std::nullopt;
  const std::vector<int64_t>& low = node.attrs.get_ints("low");
  const std::vector<int64_t>& high = node.attrs.get_ints("high");
  const std::vector<int64_t>& interior = node.attrs.get_ints("interior");
  std::optional<size_t> axis;
  for (size_t d = 0; d < low.size(); ++d) {
    if (interior[d] != 0 || low[d] < 0 || high[d] < 0) return std::nullopt;
    if (low[d] == 0 && high[d] == 0) continue;
    if (axis) return std::nullopt;
    axis = d;
  }
  if (!axis) return std::nullopt;
  return Block{node.inputs[0], *axis, low[*axis], b.shape(node.inputs[0])[*axis]};
}

// The sum of a node's cotangent contributions, in the order they came. Where every
// one is a disjoint block of zeros along the same axis (the gradients of the slices
// that split q, k and v from one product), their concatenation instead: the same
// values (but that a -0 stays -0, where 0 + -0 gave +0), one node for what took a pad
// each and their sums, as PyTorch's gradient of split is a concatenation.
std::optional<NodeId> summed(Builder& b, const std::vector<NodeId>& contributions) {
  if (contributions.empty()) return std::nullopt;
  std::vector<Block> blocks;
  for (NodeId c : contributions) {
    std::optional<Block> block = zero_padded_block(b, c);
    if (!block || (!blocks.empty() && block->axis != blocks[0].axis)) break;
    blocks.push_back(*block);
  }
  if (contributions.size() >= 2 && blocks.size() == contributions.size()) {
    std::sort(blocks.begin(), blocks.end(), [](const Block& x, const Block& y) { return x.start < y.start; });
    const Shape shape = b.shape(contributions[0]);
    const size_t axis = blocks[0].axis;
    bool disjoint = true;
    for (size_t k = 1; k < blocks.size(); ++k) {
      disjoint = disjoint && blocks[k - 1].start + blocks[k - 1].length <= blocks[k].start;
    }
    if (disjoint) {
      std::vector<NodeId> parts;
      int64_t at = blocks[0].start;
      for (const Block& block : blocks) {
        if (block.start > at) {
          Shape gap = shape;
          gap[axis] = block.start - at;
          parts.push_back(b.zeros(gap, b.dtype(contributions[0])));
        }
        parts.push_back(block.piece);
        at = block.start + block.length;
      }
      NodeId joined = parts.size() == 1 ? parts[0] : b.concat(parts, static_cast<int64_t>(axis));
      if (blocks[0].start == 0 && at == shape[axis]) return joined;
      std::vector<int64_t> low(shape.size(), 0), high(shape.size(), 0);
      low[axis] = blocks[0].start;
      high[axis] = shape[axis] - at;
      return b.pad(joined, low, high, {}, 0.0);
    }
  }
  NodeId sum = contributions[0];
  for (size_t k = 1; k < contributions.size(); ++k) sum = b.add(sum, contributions[k]);
  return sum;
}

}  // namespace

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

  // Each node's contributions are summed when every user has given its own: when the
  // walk back reaches the node (all its users come after it).
  std::vector<std::vector<NodeId>> contributions(count);
  contributions[loss].push_back(b.scalar(1.0, loss_node.dtype));
  std::vector<std::optional<NodeId>> cotangent(count);
  for (NodeId id = loss + 1; id-- > 0;) {
    if (!relevant(id)) continue;
    cotangent[id] = summed(b, contributions[id]);
    if (!cotangent[id]) continue;
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
      contributions[in].push_back(*grads[i]);
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
