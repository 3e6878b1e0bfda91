// The text form of graphs (see text.h).
#include "graph/text.h"

#include <fmt/format.h>

#include "graph/primitive.h"

namespace sx::graph {

std::string graph_to_text(const Graph& graph, int64_t max_values) {
  std::vector<std::string_view> input_names(graph.nodes.size());
  for (const NamedNode& in : graph.inputs) {
    if (in.node < graph.nodes.size()) input_names[in.node] = in.name;
  }
  std::string out;
  for (NodeId id = 0; id < graph.nodes.size(); ++id) {
    const Node& node = graph.nodes[id];
    out += fmt::format("%{} = {}", id, node.op_name());
    if (node.prim && node.op() == PrimId::input) out += fmt::format(" \"{}\"", input_names[id]);
    if (node.value && node.value->numel() <= max_values) {
      std::vector<std::string> values;
      for (double v : node.value->to_doubles()) values.push_back(fmt::format("{}", v));
      out += node.shape.empty() ? " " + values.at(0) : " [" + join(values, " ") + "]";
    }
    for (NodeId in : node.inputs) out += fmt::format(" %{}", in);
    if (!node.attrs.values().empty()) out += " {" + attrs_str(node.attrs) + "}";
    out += fmt::format(" : {}{}", dtype_name(node.dtype), shape_str(node.shape));
    if (node.weak) out += " weak";
    out += '\n';
  }
  for (const NamedNode& o : graph.outputs) out += fmt::format("output \"{}\" = %{}\n", o.name, o.node);
  return out;
}

}  // namespace sx::graph
