// The batching transformation (vmap over a new leading axis): walks the
// graph once, and for each node that reads a batched value applies its
// primitive's batching rule (see passes.h).
#include <fmt/format.h>

#include <memory>
#include <set>

#include "graph/errors.h"
#include "graph/passes.h"
#include "graph/primitive.h"
#include "graph/prims/common.h"
#include "graph/rewrite.h"
#include "graph/verify.h"

namespace sx::graph {

Graph vmap(const Graph& graph, std::span<const std::string> batched_inputs, int64_t batch_size) {
  if (batch_size < 1) throw GraphError(fmt::format("vmap: the batch size must be positive, got {}", batch_size));
  std::set<std::string_view> names(batched_inputs.begin(), batched_inputs.end());
  for (std::string_view name : names) {
    if (!graph.find_input(name)) throw GraphError(fmt::format("vmap: the graph has no input named '{}'", name));
  }
  std::vector<std::string_view> input_name(graph.nodes.size());
  for (const NamedNode& in : graph.inputs) input_name[in.node] = in.name;

  Rewrite r(graph);
  Builder b(r.out);
  std::vector<bool> batched(graph.nodes.size(), false);
  for (NodeId id = 0; id < graph.nodes.size(); ++id) {
    const Node& node = graph.nodes[id];
    b.set_origin(node.origin);
    if (node.op() == PrimId::input) {
      batched[id] = names.contains(input_name[id]);
      Shape shape = node.shape;
      if (batched[id]) shape.insert(shape.begin(), batch_size);
      r.map[id] = b.input(std::string(input_name[id]), shape, node.dtype);
      continue;
    }
    std::vector<NodeId> args;
    auto flags = std::make_unique<bool[]>(node.inputs.size());
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      args.push_back(r.map[node.inputs[i]]);
      flags[i] = batched[node.inputs[i]];
      batched[id] = batched[id] || flags[i];
    }
    if (!batched[id]) {
      r.map[id] = r.copy(node);
      continue;
    }
    if (!node.prim->batch) throw GraphError(fmt::format("vmap: {} has no batching rule", node.op_name()));
    std::span<const bool> flag_span(flags.get(), node.inputs.size());
    r.map[id] = node.prim->batch(b, node, args, flag_span, batch_size);
  }
  r.out.inputs.clear();
  for (const NamedNode& in : graph.inputs) r.out.inputs.push_back({in.name, r.map[in.node]});
  for (const NamedNode& o : graph.outputs) {
    r.out.outputs.push_back({o.name, prims::to_batched(b, r.map[o.node], batched[o.node], batch_size)});
  }
  verify(r.out);
  return std::move(r.out);
}

}  // namespace sx::graph
