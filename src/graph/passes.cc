// Constant folding, CSE, algebraic simplification and dead-code elimination
// (see passes.h). The batching transformation is in batching.cc.
#include "graph/passes.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <unordered_map>

#include "graph/errors.h"
#include "graph/primitive.h"
#include "graph/rewrite.h"
#include "graph/verify.h"

namespace sx::graph {
namespace {

bool is_source(const Node& node) { return node.op() == PrimId::input || node.op() == PrimId::constant; }

Graph checked(Graph graph) {
  verify(graph);
  return graph;
}

}  // namespace

Graph fold_constants(const Graph& graph, const EvaluateConstants& evaluate, int64_t max_elements) {
  std::vector<bool> folds(graph.nodes.size(), false);
  for (NodeId id = 0; id < graph.nodes.size(); ++id) {
    const Node& node = graph.nodes[id];
    folds[id] = !is_source(node) && numel(node.shape) <= max_elements &&
                std::all_of(node.inputs.begin(), node.inputs.end(),
                            [&](NodeId in) { return folds[in] || graph.nodes[in].op() == PrimId::constant; });
  }
  // The folded nodes something else reads become constants; the others are not kept.
  std::vector<bool> read(graph.nodes.size(), false);
  for (NodeId id = 0; id < graph.nodes.size(); ++id) {
    if (folds[id]) continue;
    for (NodeId in : graph.nodes[id].inputs) read[in] = true;
  }
  for (const NamedNode& o : graph.outputs) read[o.node] = true;
  std::vector<NodeId> values;
  for (NodeId id = 0; id < graph.nodes.size(); ++id) {
    if (folds[id] && read[id]) values.push_back(id);
  }
  if (values.empty()) return checked(graph);
  std::vector<Tensor> computed = evaluate(extract(graph, values));
  if (computed.size() != values.size()) {
    throw GraphError(
        fmt::format("fold_constants: {} values were computed for {} nodes", computed.size(), values.size()));
  }
  Rewrite r(graph);
  size_t next = 0;
  for (NodeId id = 0; id < graph.nodes.size(); ++id) {
    const Node& node = graph.nodes[id];
    if (!folds[id]) {
      r.map[id] = r.copy(node);
      continue;
    }
    if (!read[id]) continue;
    Node folded;
    folded.prim = &primitive(PrimId::constant);
    folded.shape = node.shape;
    folded.dtype = node.dtype;
    folded.weak = node.weak;
    folded.origin = node.origin;
    folded.value = std::make_shared<const Tensor>(std::move(computed[next++]));
    r.out.nodes.push_back(std::move(folded));
    r.map[id] = static_cast<NodeId>(r.out.nodes.size() - 1);
  }
  r.copy_names(graph);
  return checked(std::move(r.out));
}

std::string structural_key(const Node& node, std::span<const NodeId> inputs) {
  std::string key = fmt::format("{} {}{} weak={} attrs={} inputs=", node.op_name(), dtype_name(node.dtype),
                                shape_str(node.shape), node.weak, attrs_str(node.attrs));
  for (NodeId in : inputs) key += fmt::format("{},", in);
  if (node.value) key.append(node.value->bytes().begin(), node.value->bytes().end());
  return key;
}

Graph eliminate_common_subexpressions(const Graph& graph) {
  Rewrite r(graph);
  std::map<std::string, NodeId> seen;
  for (NodeId id = 0; id < graph.nodes.size(); ++id) {
    const Node& node = graph.nodes[id];
    if (node.op() == PrimId::input) {
      r.map[id] = r.copy(node);
      continue;
    }
    std::vector<NodeId> inputs;
    for (NodeId in : node.inputs) inputs.push_back(r.map[in]);
    auto [it, inserted] = seen.emplace(structural_key(node, inputs), 0);
    if (inserted) it->second = r.copy(node);
    r.map[id] = it->second;
  }
  r.copy_names(graph);
  return checked(std::move(r.out));
}

namespace {

// Whether `id` is a constant, or a broadcast of one, whose every element is `value`.
bool is_constant_value(const Graph& g, NodeId id, double value) {
  const Node& node = g.nodes[id];
  if (node.op() == PrimId::broadcast) return is_constant_value(g, node.inputs[0], value);
  if (node.op() != PrimId::constant) return false;
  std::vector<double> values = node.value->to_doubles();
  return std::all_of(values.begin(), values.end(), [&](double v) { return v == value; });
}

// 1 / c where `id` is a constant (or a broadcast of one) whose every element is c, a power
// of two whose reciprocal is a normal number of `dtype` too: then x / c and x * (1 / c)
// are one exact value rounded once, the same bits for every x, and a multiply costs a
// fraction of a divide (attention's scale by 1 / sqrt(64) divides every score by 8).
std::optional<double> power_of_two_reciprocal(const Graph& g, NodeId id, DType dtype) {
  const Node& node = g.nodes[id];
  if (node.op() == PrimId::broadcast) return power_of_two_reciprocal(g, node.inputs[0], dtype);
  if (node.op() != PrimId::constant || !is_float(dtype)) return std::nullopt;
  std::vector<double> values = node.value->to_doubles();
  if (values.empty() || !std::all_of(values.begin(), values.end(), [&](double v) { return v == values[0]; }))
    return std::nullopt;
  int exponent = 0;
  if (!std::isfinite(values[0]) || std::fabs(std::frexp(values[0], &exponent)) != 0.5) return std::nullopt;
  const int normal = dtype == DType::f64 ? 1022 : 126;  // bf16 has f32's exponents
  if (std::abs(exponent - 1) > normal) return std::nullopt;
  return 1.0 / values[0];
}

// The node that `node` (its inputs already mapped into `b`'s graph) reduces
// to, or nullopt when no identity applies.
std::optional<NodeId> simplified(Builder& b, const Node& node) {
  const Graph& g = b.graph();
  PrimId op = node.op();
  if (node.inputs.empty()) return std::nullopt;
  auto same_type = [&](NodeId x) { return g.nodes[x].shape == node.shape && g.nodes[x].dtype == node.dtype; };
  auto in = [&](size_t i) { return node.inputs[i]; };
  auto pick = [&](NodeId x) -> std::optional<NodeId> {
    if (same_type(x)) return x;
    return std::nullopt;
  };
  if (op == PrimId::add && is_constant_value(g, in(1), 0.0)) return pick(in(0));
  if (op == PrimId::add && is_constant_value(g, in(0), 0.0)) return pick(in(1));
  if (op == PrimId::sub && is_constant_value(g, in(1), 0.0)) return pick(in(0));
  if (op == PrimId::mul && is_constant_value(g, in(1), 1.0)) return pick(in(0));
  if (op == PrimId::mul && is_constant_value(g, in(0), 1.0)) return pick(in(1));
  if (op == PrimId::div && is_constant_value(g, in(1), 1.0)) return pick(in(0));
  if (op == PrimId::div) {
    if (std::optional<double> reciprocal = power_of_two_reciprocal(g, in(1), node.dtype)) {
      const Shape divisor_shape = g.nodes[in(1)].shape;
      NodeId factor = b.scalar(*reciprocal, node.dtype);
      if (!divisor_shape.empty()) factor = b.broadcast(factor, divisor_shape);
      return pick(b.mul(in(0), factor));
    }
  }
  if (op == PrimId::neg && g.nodes[in(0)].op() == PrimId::neg) return pick(g.nodes[in(0)].inputs[0]);
  if (op == PrimId::stop_gradient) return in(0);
  if (op == PrimId::reshape || op == PrimId::broadcast || op == PrimId::cast || op == PrimId::transpose) {
    if (same_type(in(0)) && (op != PrimId::transpose ||
                             std::is_sorted(node.attrs.get_ints("perm").begin(), node.attrs.get_ints("perm").end()))) {
      return in(0);
    }
  }
  Node inner = g.nodes[in(0)];  // a copy: emitting below may move the nodes
  if (op == PrimId::reshape && inner.op() == PrimId::reshape) return b.reshape(inner.inputs[0], node.shape);
  // A broadcast of a broadcast is one broadcast (NumPy's rules compose): the batching
  // transformation broadcasts a served model's broadcast weights again, and a device
  // reads a broadcast's input through strides only one broadcast deep.
  if (op == PrimId::broadcast && inner.op() == PrimId::broadcast) return b.broadcast(inner.inputs[0], node.shape);
  if (op == PrimId::transpose && inner.op() == PrimId::transpose) {
    const auto &outer_perm = node.attrs.get_ints("perm"), &inner_perm = inner.attrs.get_ints("perm");
    std::vector<int64_t> composed;
    for (int64_t p : outer_perm) composed.push_back(inner_perm[static_cast<size_t>(p)]);
    if (std::is_sorted(composed.begin(), composed.end())) return inner.inputs[0];
    return b.transpose(inner.inputs[0], composed);
  }
  // A transpose of a broadcast that leaves the broadcast's new leading axes in place
  // (weights w^T in a batched gradient) is the broadcast of the smaller transpose, which
  // a product reads without the batch's copies.
  if (op == PrimId::transpose && inner.op() == PrimId::broadcast) {
    const auto& perm = node.attrs.get_ints("perm");
    const Shape& from = g.nodes[inner.inputs[0]].shape;
    const size_t lead = perm.size() - from.size();
    bool keeps_lead = true;
    for (size_t d = 0; d < perm.size(); ++d)
      keeps_lead =
          keeps_lead && (d >= lead ? perm[d] >= static_cast<int64_t>(lead) : perm[d] == static_cast<int64_t>(d));
    if (keeps_lead) {
      std::vector<int64_t> inner_perm;
      for (size_t d = lead; d < perm.size(); ++d) inner_perm.push_back(perm[d] - static_cast<int64_t>(lead));
      NodeId x = std::is_sorted(inner_perm.begin(), inner_perm.end()) ? inner.inputs[0]
                                                                      : b.transpose(inner.inputs[0], inner_perm);
      return b.broadcast(x, node.shape);
    }
  }
  return std::nullopt;
}

}  // namespace

Graph simplify(const Graph& graph) {
  Rewrite r(graph);
  Builder b(r.out);
  for (NodeId id = 0; id < graph.nodes.size(); ++id) {
    const Node& node = graph.nodes[id];
    Node mapped = node;
    for (NodeId& in : mapped.inputs) in = r.map[in];
    b.set_origin(node.origin);
    std::optional<NodeId> replacement = is_source(node) ? std::nullopt : simplified(b, mapped);
    r.map[id] = replacement ? *replacement : r.copy(node);
  }
  r.copy_names(graph);
  return checked(std::move(r.out));
}

Graph eliminate_dead_code(const Graph& graph) {
  std::vector<bool> live(graph.nodes.size(), false);
  for (const NamedNode& o : graph.outputs) live[o.node] = true;
  for (const NamedNode& in : graph.inputs) live[in.node] = true;
  for (NodeId id = static_cast<NodeId>(graph.nodes.size()); id-- > 0;) {
    if (!live[id]) continue;
    for (NodeId in : graph.nodes[id].inputs) live[in] = true;
  }
  Rewrite r(graph);
  for (NodeId id = 0; id < graph.nodes.size(); ++id) {
    if (live[id]) r.map[id] = r.copy(graph.nodes[id]);
  }
  r.copy_names(graph);
  return checked(std::move(r.out));
}

Graph extract(const Graph& graph, std::span<const NodeId> outputs) {
  std::unordered_map<NodeId, NodeId> map;  // old id -> new id; sized by the part, not the graph
  std::vector<NodeId> part, stack;
  for (NodeId id : outputs) {
    if (map.emplace(id, 0).second) stack.push_back(id);
  }
  while (!stack.empty()) {
    NodeId id = stack.back();
    stack.pop_back();
    part.push_back(id);
    for (NodeId in : graph.node(id).inputs) {
      if (map.emplace(in, 0).second) stack.push_back(in);
    }
  }
  // Inputs come before their users in a graph, so id order is an order to compute in.
  std::sort(part.begin(), part.end());
  Graph out;
  out.nodes.reserve(part.size());
  for (NodeId id : part) {
    Node node = graph.nodes[id];
    for (NodeId& in : node.inputs) in = map.at(in);
    map[id] = static_cast<NodeId>(out.nodes.size());
    out.nodes.push_back(std::move(node));
  }
  for (const NamedNode& in : graph.inputs) {
    if (auto it = map.find(in.node); it != map.end()) out.inputs.push_back({in.name, it->second});
  }
  for (size_t i = 0; i < outputs.size(); ++i) out.outputs.push_back({std::to_string(i), map.at(outputs[i])});
  return checked(std::move(out));
}

Graph optimize(const Graph& graph, const EvaluateConstants& evaluate) {
  Graph g = fold_constants(graph, evaluate);
  g = eliminate_common_subexpressions(g);
  g = simplify(g);
  g = eliminate_common_subexpressions(g);
  return eliminate_dead_code(g);
}

}  // namespace sx::graph
