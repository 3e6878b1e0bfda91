// The passes that shape a model for its callers (the seed page "Running a trained
// model"): `--output` keeps only the outputs named, `--at` reads each output at one place
// of its second axis.
#include <fmt/format.h>

#include "graph/builder.h"
#include "graph/errors.h"
#include "graph/passes.h"
#include "graph/verify.h"

namespace sx::graph {

Graph select_outputs(const Graph& graph, std::span<const std::string> names) {
  Graph selected = graph;
  selected.outputs.clear();
  for (const std::string& name : names) {
    auto node = graph.find_output(name);
    if (!node) {
      std::string known;
      for (const NamedNode& o : graph.outputs) known += (known.empty() ? "`" : ", `") + o.name + "`";
      throw GraphError(fmt::format("outputs: the model has no output `{}`; it has {}", name, known));
    }
    selected.outputs.push_back({name, *node});
  }
  return eliminate_dead_code(selected);
}

Graph take_at(const Graph& graph) {
  if (graph.outputs.empty()) throw GraphError("at: the model has no outputs");
  if (graph.find_input("at")) throw GraphError("at: the model already has an input named `at`");
  const Node& first = graph.node(graph.outputs.front().node);
  for (const NamedNode& o : graph.outputs) {
    const Shape& shape = graph.node(o.node).shape;
    if (shape.size() < 2) {
      throw GraphError(fmt::format("at: output `{}` of shape {} has no second axis", o.name, shape_str(shape)));
    }
    if (first.shape.size() < 2 || shape[1] != first.shape[1]) {
      throw GraphError(fmt::format("at: every output's second axis must have one length; `{}` has {} and `{}` {}",
                                   graph.outputs.front().name, first.shape[1], o.name, shape[1]));
    }
  }
  Graph out = graph;
  Builder b(out);
  NodeId at = b.input("at", {1}, DType::i32);
  for (NamedNode& o : out.outputs) o.node = b.gather(o.node, at, 1);
  verify(out);
  return out;
}

}  // namespace sx::graph
