// Reverse-mode autodiff (see autodiff.h).
#include "graph/autodiff.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <optional>

#include "graph/composite.h"
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

// The reverse walk over a graph that grows as it goes: each node's cotangent is the sum
// of its users' contributions, taken when the walk back reaches it (all its users come
// after it), and its rule adds its inputs' contributions. A composite differentiated by
// its decomposition adds one composite_gradient node per input.
class Backward {
 public:
  // A node below `first` depends on a wrt node only where it is one (a decomposition's
  // walk: its other inputs are held constant).
  Backward(Builder& b, std::span<const NodeId> wrt, NodeId first = 0)
      : b_(b), first_(first), is_wrt_(b.graph().nodes.size(), false) {
    for (NodeId w : wrt) {
      b.node(w);
      is_wrt_[w] = true;
    }
  }

  void contribute(NodeId to, NodeId contribution) {
    grow();
    contributions_[to].push_back(contribution);
  }
  std::optional<NodeId> cotangent(NodeId id) const { return id < cotangent_.size() ? cotangent_[id] : std::nullopt; }
  // The sum of the contributions to `id`, a node below the walk that gets no cotangent.
  std::optional<NodeId> contributions_summed(NodeId id) { return summed(b_, contributions_.at(id)); }

  // Gives each node of [first, last] that is on a path from some wrt node to `last` its
  // cotangent, walking back from `last`, whose contributions are in place. Contributions to
  // nodes below `first` are kept where `relevant_below` says the node needs them.
  void walk(NodeId first, NodeId last, const std::function<bool(NodeId)>& relevant_below) {
    grow();
    const Graph& graph = b_.graph();
    std::vector<bool> reaches(last - first + 1, false);
    reaches[last - first] = true;
    for (NodeId id = last + 1; id-- > first;) {
      if (!reaches[id - first]) continue;
      for (NodeId in : graph.nodes[id].inputs) {
        if (in >= first) reaches[in - first] = true;
      }
    }
    const std::function<bool(NodeId)> relevant = [&](NodeId id) {
      return id >= first ? from_wrt_[id] && reaches[id - first] : relevant_below(id);
    };
    for (NodeId id = last + 1; id-- > first;) {
      if (!relevant(id)) continue;
      cotangent_[id] = summed(b_, contributions_[id]);
      if (!cotangent_[id]) continue;
      Node node = graph.nodes[id];  // a copy: the rule appends to graph.nodes
      if (node.prim->grad_by_decomposition) {
        through_gradient_nodes(node, *cotangent_[id], relevant);
        continue;
      }
      if (!node.prim->differentiable()) continue;
      std::vector<std::optional<NodeId>> grads = node.prim->grad(b_, node, id, *cotangent_[id]);
      if (grads.size() != node.inputs.size()) {
        throw GraphError(fmt::format("grad: the rule of {} gave {} cotangents for {} inputs", describe_node(graph, id),
                                     grads.size(), node.inputs.size()));
      }
      for (size_t i = 0; i < node.inputs.size(); ++i) {
        NodeId in = node.inputs[i];
        if (!grads[i] || !relevant(in)) continue;
        const Node& input = graph.nodes[in];
        if (b_.shape(*grads[i]) != input.shape || b_.dtype(*grads[i]) != input.dtype) {
          throw GraphError(fmt::format("grad: the rule of {} gave a {}{} cotangent for its input {}",
                                       describe_node(graph, id), dtype_name(b_.dtype(*grads[i])),
                                       shape_str(b_.shape(*grads[i])), describe_node(graph, in)));
        }
        contributions_[in].push_back(*grads[i]);
      }
    }
  }

 private:
  // A composite's gradient for each input that needs one (a float): one composite_gradient
  // node, which reads the composite's inputs and its cotangent. The last input's comes
  // first, as the walk back through the decomposition reaches its last operands first: CSE
  // keeps the shared nodes where that walk made them.
  void through_gradient_nodes(const Node& node, NodeId cotangent, const std::function<bool(NodeId)>& relevant) {
    std::vector<NodeId> operands = node.inputs;
    operands.push_back(cotangent);
    for (size_t i = node.inputs.size(); i-- > 0;) {
      const NodeId in = node.inputs[i];
      if (!relevant(in) || !is_float(b_.dtype(in))) continue;
      contributions_[in].push_back(
          b_.emit(primitive(PrimId::composite_gradient), operands, gradient_attrs(*node.prim, i, node.attrs)));
    }
  }

  // Sizes the tables to the graph, each new node depending on a wrt node where an input does.
  void grow() {
    const Graph& graph = b_.graph();
    for (auto id = static_cast<NodeId>(from_wrt_.size()); id < graph.nodes.size(); ++id) {
      bool depends = id < is_wrt_.size() && is_wrt_[id];
      if (id >= first_) {
        for (NodeId in : graph.nodes[id].inputs) depends = depends || from_wrt_[in];
      }
      from_wrt_.push_back(depends);
    }
    contributions_.resize(graph.nodes.size());
    cotangent_.resize(graph.nodes.size());
  }

  Builder& b_;
  NodeId first_;
  std::vector<bool> is_wrt_, from_wrt_;
  std::vector<std::vector<NodeId>> contributions_;
  std::vector<std::optional<NodeId>> cotangent_;
};

}  // namespace

std::vector<NodeId> gradients(Builder& b, NodeId loss, std::span<const NodeId> wrt) {
  const Node& loss_node = b.node(loss);
  if (!loss_node.shape.empty() || !is_float(loss_node.dtype)) {
    throw GraphError(fmt::format("grad: the loss must be a floating-point scalar, got {}{}",
                                 dtype_name(loss_node.dtype), shape_str(loss_node.shape)));
  }
  Backward backward(b, wrt);
  backward.contribute(loss, b.scalar(1.0, loss_node.dtype));
  backward.walk(0, loss, [](NodeId) { return false; });
  std::vector<NodeId> out;
  for (NodeId w : wrt) {
    std::optional<NodeId> cotangent = w <= loss ? backward.cotangent(w) : std::nullopt;
    out.push_back(cotangent ? *cotangent : b.zeros(b.shape(w), b.dtype(w)));
  }
  return out;
}

NodeId decomposition_gradient(Builder& b, const Primitive& prim, std::span<const NodeId> args, const Attrs& attrs,
                              NodeId cotangent, size_t input) {
  if (input >= args.size()) {
    throw ShapeError(
        fmt::format("composite_gradient: {} has {} inputs, not an input {}", prim.name, args.size(), input));
  }
  const NodeId wrt = args[input];
  std::vector<NodeId> operands(args.begin(), args.end());
  for (size_t i = 0; i < operands.size(); ++i) {
    if (i != input && operands[i] == wrt) operands[i] = b.stop_gradient(wrt);
  }
  const auto first = static_cast<NodeId>(b.graph().nodes.size());
  Backward backward(b, {&wrt, 1}, first);
  std::vector<NodeId> values = decompose(b, prim, operands, attrs);
  if (values.size() != 1) {
    throw GraphError(fmt::format("grad: {} gives {} values; only one is differentiated", prim.name, values.size()));
  }
  if (b.shape(values[0]) != b.shape(cotangent) || b.dtype(values[0]) != b.dtype(cotangent)) {
    throw ShapeError(fmt::format("composite_gradient: the value of {} is {}{}, its cotangent {}{}", prim.name,
                                 dtype_name(b.dtype(values[0])), shape_str(b.shape(values[0])),
                                 dtype_name(b.dtype(cotangent)), shape_str(b.shape(cotangent))));
  }
  backward.contribute(values[0], cotangent);
  if (values[0] >= first) backward.walk(first, values[0], [wrt](NodeId id) { return id == wrt; });
  std::optional<NodeId> sum = backward.contributions_summed(wrt);
  return sum ? *sum : b.zeros(b.shape(wrt), b.dtype(wrt));
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
