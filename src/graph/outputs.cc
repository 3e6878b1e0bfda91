// The passes that shape a model for its callers (docs/serving.md
// and docs/cli.md): `--output` keeps only the outputs named, `--at` reads each output at one place
// of its second axis.
#include <fmt/format.h>

#include <map>
#include <optional>

#include "graph/builder.h"
#include "graph/errors.h"
#include "graph/passes.h"
#include "graph/primitive.h"
#include "graph/shown.h"
#include "graph/verify.h"

namespace sx::graph {

Graph select_outputs(const Graph& graph, std::span<const std::string> names) {
  Graph selected = graph;
  selected.outputs.clear();
  for (const std::string& name : names) {
    auto node = graph.find_output(name);
    if (!node) {
      std::string known;
      for (const NamedNode& o : graph.outputs) known += (known.empty() ? "`" : ", `") + shown_in_message(o.name) + "`";
      throw GraphError(fmt::format("outputs: the model has no output `{}`; it has {}", shown_in_message(name), known));
    }
    selected.outputs.push_back({name, *node});
  }
  return eliminate_dead_code(selected);
}

namespace {

// Which nodes take_at computes whole and which at one place of an axis, and
// how. A node is computed whole when a user reads it whole, or when the gather
// cannot move past it (no sinking rule for an axis it is taken at); it is then
// taken at a place by a gather of that whole value, never recomputed from its
// inputs, since the gather costs a copy of the place and recomputing costs the
// place's work again. Otherwise each place wanted of it is computed by its
// primitive's sinking rule, from its inputs at their places (or whole).
struct GatherPlan {
  std::vector<bool> whole;
  // Per node: each axis it is taken at, and its rule (nullopt: a gather of the
  // whole value).
  std::vector<std::map<int64_t, std::optional<Sinking>>> places;
};

// Walks back from the outputs: every user of a node comes after it, so when
// a node is reached everything that reads it has decided how.
GatherPlan plan_gathers(const Graph& graph) {
  GatherPlan plan{std::vector<bool>(graph.nodes.size(), false), {}};
  plan.places.resize(graph.nodes.size());
  for (const NamedNode& o : graph.outputs) plan.places[o.node].emplace(1, std::nullopt);
  for (NodeId id = static_cast<NodeId>(graph.nodes.size()); id-- > 0;) {
    const Node& node = graph.nodes[id];
    auto& places = plan.places[id];
    if (!places.empty() && !plan.whole[id] && node.prim->sink) {
      std::vector<ValueType> types;
      for (NodeId in : node.inputs) types.push_back({graph.node(in).shape, graph.node(in).dtype});
      std::vector<std::optional<Sinking>> rules;
      for (const auto& place : places) {
        rules.push_back(node.prim->sink(node, types, place.first));
        if (!rules.back()) break;
      }
      if (rules.back()) {
        auto rule = rules.begin();
        for (auto& [axis, how] : places) {
          how = std::move(*rule++);
          for (size_t i = 0; i < node.inputs.size(); ++i) {
            if (auto input_axis = how->input_axes[i]) plan.places[node.inputs[i]].emplace(*input_axis, std::nullopt);
            else plan.whole[node.inputs[i]] = true;
          }
        }
      } else {
        plan.whole[id] = true;
      }
    } else if (!places.empty()) {
      plan.whole[id] = true;
    }
    if (plan.whole[id]) {
      for (NodeId in : node.inputs) plan.whole[in] = true;
    }
  }
  return plan;
}

}  // namespace

Graph take_at(const Graph& given) {
  // The gather sinks through the nodes of a composite's decomposition, which have sinking
  // rules, where the composite has none.
  const Graph graph = expand_composites(given);
  if (graph.outputs.empty()) throw GraphError("at: the model has no outputs");
  if (graph.find_input("at")) throw GraphError("at: the model already has an input named `at`");
  const Node& first = graph.node(graph.outputs.front().node);
  for (const NamedNode& o : graph.outputs) {
    const Shape& shape = graph.node(o.node).shape;
    if (shape.size() < 2) {
      throw GraphError(
          fmt::format("at: output `{}` of shape {} has no second axis", shown_in_message(o.name), shape_str(shape)));
    }
    if (first.shape.size() < 2 || shape[1] != first.shape[1]) {
      throw GraphError(fmt::format("at: every output's second axis must have one length; `{}` has {} and `{}` {}",
                                   shown_in_message(graph.outputs.front().name), first.shape[1],
                                   shown_in_message(o.name), shape[1]));
    }
  }
  GatherPlan plan = plan_gathers(graph);
  Graph out;
  Builder b(out);
  NodeId at = b.input("at", {1}, DType::i32);
  std::vector<NodeId> whole(graph.nodes.size());
  std::vector<std::map<int64_t, NodeId>> taken(graph.nodes.size());
  for (NodeId id = 0; id < graph.nodes.size(); ++id) {
    const Node& node = graph.nodes[id];
    b.set_origin(node.origin);
    if (plan.whole[id] || node.op() == PrimId::input) {
      Node copy = node;
      for (NodeId& in : copy.inputs) in = whole[in];
      out.nodes.push_back(std::move(copy));
      whole[id] = static_cast<NodeId>(out.nodes.size() - 1);
    }
    for (const auto& [axis, how] : plan.places[id]) {
      if (!how) {
        taken[id][axis] = b.gather(whole[id], at, axis);
        continue;
      }
      std::vector<NodeId> args;
      for (size_t i = 0; i < node.inputs.size(); ++i) {
        NodeId in = node.inputs[i];
        args.push_back(how->input_axes[i] ? taken[in].at(*how->input_axes[i]) : whole[in]);
      }
      NodeId place = b.emit(*node.prim, args, how->attrs);
      Shape expected = node.shape;
      expected[static_cast<size_t>(axis)] = 1;
      if (b.shape(place) != expected) {
        throw GraphError(fmt::format("at: the sinking rule of {} gave {} at axis {}, not {}", describe_node(graph, id),
                                     shape_str(b.shape(place)), axis, shape_str(expected)));
      }
      taken[id][axis] = place;
    }
  }
  out.inputs.clear();
  for (const NamedNode& in : graph.inputs) out.inputs.push_back({in.name, whole[in.node]});
  out.inputs.push_back({"at", at});
  for (const NamedNode& o : graph.outputs) out.outputs.push_back({o.name, taken[o.node].at(1)});
  verify(out);
  return out;
}

}  // namespace sx::graph
