// The graph verifier (see verify.h).
#include "graph/verify.h"

#include <fmt/format.h>

#include <set>

#include "graph/errors.h"
#include "graph/primitive.h"

namespace sx::graph {
namespace {

[[noreturn]] void reject(const Graph& graph, NodeId id, std::string_view why) {
  throw VerifyError(fmt::format("verify: {}: {}", describe_node(graph, id), why));
}

void verify_node(const Graph& graph, NodeId id, const std::set<NodeId>& named_inputs) {
  const Node& node = graph.nodes[id];
  if (!node.prim || index_of(node.prim->id) >= kPrimitiveCount || &primitive(node.prim->id) != node.prim)
    reject(graph, id, "its primitive is not registered");
  try {
    checked_bytes(node.shape, node.dtype);
  } catch (const ShapeError& e) {
    reject(graph, id, e.what());
  }
  const Primitive& prim = *node.prim;
  for (NodeId in : node.inputs) {
    if (in >= id) reject(graph, id, fmt::format("input {} does not come before the node", in));
  }
  if (prim.arity >= 0 ? node.inputs.size() != static_cast<size_t>(prim.arity) : node.inputs.empty()) {
    reject(graph, id, fmt::format("has {} inputs; {} takes {}", node.inputs.size(), prim.name, prim.arity));
  }
  if (prim.id == PrimId::input) {
    if (!named_inputs.contains(id)) reject(graph, id, "is an input node that no named input refers to");
    return;
  }
  if (prim.id == PrimId::constant) {
    if (!node.value) reject(graph, id, "is a constant without a value");
    if (node.value->shape() != node.shape || node.value->dtype() != node.dtype) {
      reject(graph, id,
             fmt::format("holds a {}{} value", dtype_name(node.value->dtype()), shape_str(node.value->shape())));
    }
    return;
  }
  if (node.value) reject(graph, id, "holds a value but is not a constant");
  std::vector<ValueType> args;
  for (NodeId in : node.inputs) args.push_back({graph.nodes[in].shape, graph.nodes[in].dtype});
  ValueType out;
  try {
    out = prim.infer(args, node.attrs);
  } catch (const GraphError& e) {
    reject(graph, id, e.what());
  }
  if (out.shape != node.shape || out.dtype != node.dtype) {
    reject(graph, id, fmt::format("its rule gives {}{}", dtype_name(out.dtype), shape_str(out.shape)));
  }
}

void verify_names(const Graph& graph, const std::vector<NamedNode>& named, std::string_view kind) {
  std::set<std::string_view> seen;
  for (const NamedNode& n : named) {
    if (n.node >= graph.nodes.size()) {
      throw VerifyError(fmt::format("verify: {} '{}' refers to node {}, which does not exist", kind, n.name, n.node));
    }
    if (!seen.insert(n.name).second) throw VerifyError(fmt::format("verify: two {}s are named '{}'", kind, n.name));
  }
}

}  // namespace

void verify(const Graph& graph) {
  verify_names(graph, graph.inputs, "input");
  verify_names(graph, graph.outputs, "output");
  std::set<NodeId> named_inputs;
  for (const NamedNode& in : graph.inputs) {
    const Node& node = graph.nodes[in.node];
    if (node.op() != PrimId::input) {
      throw VerifyError(fmt::format("verify: input '{}' refers to {}, which is not an input node", in.name,
                                    describe_node(graph, in.node)));
    }
    if (!named_inputs.insert(in.node).second) {
      throw VerifyError(fmt::format("verify: {} is named as two inputs", describe_node(graph, in.node)));
    }
  }
  for (NodeId id = 0; id < graph.nodes.size(); ++id) verify_node(graph, id, named_inputs);
}

}  // namespace sx::graph
