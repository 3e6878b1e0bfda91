// Running composites by their decompositions (composite.h) and expand_composites (passes.h).
#include "graph/composite.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <string>
#include <unordered_map>

#include "graph/errors.h"
#include "graph/index_error.h"
#include "graph/passes.h"
#include "graph/rewrite.h"
#include "graph/verify.h"

namespace sx::graph {

std::vector<NodeId> decompose(Builder& b, const Primitive& prim, std::span<const NodeId> args, const Attrs& attrs) {
  if (!prim.decompose) throw GraphError(fmt::format("{}: is not a composite", prim.name));
  std::vector<NodeId> values = prim.decompose(b, args, attrs);
  if (values.empty()) throw GraphError(fmt::format("{}: its decomposition gives no value", prim.name));
  return values;
}

NodeId stacked(Builder& b, std::span<const NodeId> values) {
  if (values.size() == 1) return values[0];
  std::vector<NodeId> rows;
  for (NodeId v : values) {
    Shape shape = b.shape(v);
    shape.insert(shape.begin(), 1);
    rows.push_back(b.reshape(v, shape));
  }
  return b.concat(rows, 0);
}

Graph decomposition(const Primitive& prim, std::span<const ValueType> args, const Attrs& attrs) {
  Graph graph;
  Builder b(graph);
  std::vector<NodeId> inputs;
  for (size_t i = 0; i < args.size(); ++i) inputs.push_back(b.input(std::to_string(i), args[i].shape, args[i].dtype));
  std::vector<NodeId> values = decompose(b, prim, inputs, attrs);
  b.output("0", stacked(b, values));
  return graph;
}

ValueType infer_by_decomposition(const Primitive& prim, std::span<const ValueType> args, const Attrs& attrs) {
  Graph graph = decomposition(prim, args, attrs);
  const Node& value = graph.node(graph.outputs[0].node);
  return {value.shape, value.dtype};
}

namespace {

// An attribute a composite_gradient's attributes hold under "of.": one that would clash.
bool nested(std::string_view name) { return name == "of" || name == "input" || name.starts_with("of."); }

}  // namespace

Attrs gradient_attrs(const Primitive& of, size_t input, const Attrs& attrs) {
  Attrs out{{"of", std::string(of.name)}, {"input", static_cast<int64_t>(input)}};
  for (const auto& [name, value] : attrs.values()) out.set(nested(name) ? "of." + name : name, value);
  return out;
}

const Primitive& gradient_of(const Attrs& attrs) {
  const std::string& name = attrs.get_string("of");
  const Primitive* of = find_primitive(name);
  if (!of || !of->grad_by_decomposition) {
    throw ShapeError(
        fmt::format("composite_gradient: `of` names a composite differentiated by its decomposition "
                    "(softmax, layer_norm, ...), not '{}'",
                    name));
  }
  return *of;
}

Attrs differentiated_attrs(const Attrs& attrs) {
  Attrs out;
  for (const auto& [name, value] : attrs.values()) {
    if (name == "of" || name == "input") continue;
    out.set(name.starts_with("of.") ? name.substr(3) : name, value);
  }
  return out;
}

Tensor run_decomposition(const Node& node, std::span<const Tensor* const> args) {
  std::vector<ValueType> types;
  for (const Tensor* t : args) types.push_back({t->shape(), t->dtype()});
  const Graph graph = decomposition(*node.prim, types, node.attrs);
  std::vector<const Tensor*> values(graph.nodes.size(), nullptr);
  std::vector<std::optional<Tensor>> computed(graph.nodes.size());
  for (size_t i = 0; i < args.size(); ++i) values[graph.inputs[i].node] = args[i];
  for (NodeId id = 0; id < graph.nodes.size(); ++id) {
    const Node& n = graph.nodes[id];
    if (n.op() == PrimId::input) continue;
    std::vector<const Tensor*> in;
    for (NodeId i : n.inputs) in.push_back(values[i]);
    try {
      computed[id] = n.prim->kernel(n, in);
    } catch (IndexOutOfRange& e) {
      // Unlocated, the error's position is flat: the indices are the composite's operand
      // when they are one of the decomposition's inputs.
      const int64_t flat = e.position().at(0);
      e.locate(graph, id);
      if (!e.input()) throw;
      throw IndexOutOfRange(std::stoul(*e.input()), flat, e.value(), e.length());
    }
    values[id] = &*computed[id];
  }
  return *values[graph.outputs[0].node];
}

namespace {

// One pass: every composite `runs` refuses replaced by its decomposition (which may hold
// composites again).
Graph expand_once(const Graph& graph, const NodePredicate& runs) {
  // Whether something other than a `part` reads a node: then a composite of several
  // values is stacked as its node is, else each part is the value it names.
  std::vector<bool> read_whole(graph.nodes.size(), false);
  for (const Node& node : graph.nodes) {
    if (node.op() == PrimId::part) continue;
    for (NodeId in : node.inputs) read_whole[in] = true;
  }
  for (const NamedNode& o : graph.outputs) read_whole[o.node] = true;

  Rewrite r(graph);
  Builder b(r.out);
  std::unordered_map<NodeId, std::vector<NodeId>> values_of;  // expanded composites of several values
  for (NodeId id = 0; id < graph.nodes.size(); ++id) {
    const Node& node = graph.nodes[id];
    if (!node.prim->composite() || (runs && runs(graph, node))) {
      r.map[id] = r.copy(node);
      continue;
    }
    if (node.op() == PrimId::part) {
      if (auto it = values_of.find(node.inputs[0]); it != values_of.end()) {
        r.map[id] = it->second.at(static_cast<size_t>(node.attrs.get_int("index")));
        continue;
      }
    }
    std::vector<NodeId> args;
    for (NodeId in : node.inputs) args.push_back(r.map[in]);
    b.set_origin(node.origin);
    std::vector<NodeId> values = decompose(b, *node.prim, args, node.attrs);
    if (values.size() > 1) values_of.emplace(id, values);
    if (values.size() > 1 && !read_whole[id]) {
      r.map[id] = values[0];  // read by its parts alone, which take the values themselves
      continue;
    }
    NodeId value = stacked(b, values);
    const Node& made = r.out.nodes[value];
    if (made.shape != node.shape || made.dtype != node.dtype) {
      throw GraphError(fmt::format("expand_composites: the decomposition of {} gives {}{}", describe_node(graph, id),
                                   dtype_name(made.dtype), shape_str(made.shape)));
    }
    r.map[id] = value;
  }
  r.copy_names(graph);
  verify(r.out);
  return std::move(r.out);
}

bool expands_any(const Graph& graph, const NodePredicate& runs) {
  for (const Node& node : graph.nodes) {
    if (node.prim->composite() && !(runs && runs(graph, node))) return true;
  }
  return false;
}

}  // namespace

Graph expand_composites(const Graph& graph, const NodePredicate& runs) {
  if (!expands_any(graph, runs)) return graph;
  Graph out = expand_once(graph, runs);
  while (expands_any(out, runs)) out = expand_once(out, runs);
  return out;
}

Graph expand_composites(const Graph& graph, const std::function<bool(PrimId)>& runs) {
  if (!runs) return expand_composites(graph, NodePredicate{});
  return expand_composites(graph, [&runs](const Graph&, const Node& node) { return runs(node.op()); });
}

// Every composite's decomposition is built once, after a copy of the graph, and each of
// its nodes looked up among the graph's as the optimizer's CSE would find it; among the
// graph's are the nodes of the gradients that `runs` refuses, expanded first.
std::vector<bool> computed_besides(const Graph& graph, const NodePredicate& runs) {
  std::unordered_map<std::string, NodeId> held;
  std::vector<NodeId> same;  // per node of the copy: the first node CSE takes for it
  Graph copy = graph;
  Builder b(copy);
  // Looks up the copy's nodes from `first` on, keeping the new ones in `table`; whether
  // one (not a constant) is held already.
  const auto look_up = [&](NodeId first, std::unordered_map<std::string, NodeId>& table) {
    bool found = false;
    for (NodeId n = first; n < copy.nodes.size(); ++n) {
      const Node& made = copy.nodes[n];
      same.push_back(n);
      if (made.op() == PrimId::input) continue;
      if (made.op() == PrimId::stop_gradient) {  // the optimizer takes it for its input
        same[n] = same[made.inputs[0]];
        continue;
      }
      std::vector<NodeId> inputs;
      for (NodeId in : made.inputs) inputs.push_back(same[in]);
      std::string key = structural_key(made, inputs);
      if (auto it = held.find(key); it != held.end()) {
        same[n] = it->second;
        found = found || !made.inputs.empty();
      } else {
        same[n] = table.emplace(std::move(key), n).first->second;
      }
    }
    return found;
  };
  look_up(0, held);
  const auto refused_gradient = [&](NodeId id) {
    const Node& node = copy.nodes[id];
    return node.op() == PrimId::composite_gradient && !(runs && runs(copy, node));
  };
  for (NodeId id = 0; id < copy.nodes.size(); ++id) {
    if (!refused_gradient(id)) continue;
    const auto first = static_cast<NodeId>(copy.nodes.size());
    const Node node = copy.nodes[id];  // a copy: decompose appends to copy.nodes
    decompose(b, *node.prim, node.inputs, node.attrs);
    look_up(first, held);
  }
  std::vector<bool> besides(graph.nodes.size(), false);
  for (NodeId id = 0; id < graph.nodes.size(); ++id) {
    const Node& node = graph.nodes[id];
    if (!node.prim->composite()) continue;
    const auto first = static_cast<NodeId>(copy.nodes.size());
    decompose(b, *node.prim, node.inputs, node.attrs);
    std::unordered_map<std::string, NodeId> own;  // the decomposition's nodes not held already
    besides[id] = look_up(first, own);
  }
  return besides;
}

Graph expand_shared_composites(const Graph& graph, const NodePredicate& runs) {
  // Each round decides on the graph it expands: a decomposition may hold composites that
  // the gradient built again too (attention's softmax).
  Graph out = graph;
  for (;;) {
    const bool runs_any = std::any_of(out.nodes.begin(), out.nodes.end(),
                                      [&](const Node& node) { return node.prim->composite() && runs(out, node); });
    if (!runs_any) return expand_composites(out);
    const std::vector<bool> besides = computed_besides(out, runs);
    const NodePredicate kept = [&](const Graph& g, const Node& node) {
      return runs(g, node) && !besides[static_cast<size_t>(&node - g.nodes.data())];
    };
    if (!expands_any(out, kept)) return out;
    out = expand_once(out, kept);
  }
}

}  // namespace sx::graph
