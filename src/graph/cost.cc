// The operation count of a graph (see cost.h).
#include "graph/cost.h"

#include "graph/composite.h"
#include "graph/primitive.h"

namespace sx::graph {
namespace {

int64_t node_flops(const Graph& graph, const Node& node) {
  switch (node.op()) {
    case PrimId::input:
    case PrimId::constant:
    case PrimId::stop_gradient:
    case PrimId::reshape:
    case PrimId::transpose:
    case PrimId::broadcast:
    case PrimId::slice:
    case PrimId::concat:
    case PrimId::pad:
    case PrimId::gather:
    case PrimId::iota:
    case PrimId::one_hot: return 0;
    case PrimId::neg:
    case PrimId::abs:
    case PrimId::sign:
    case PrimId::exp:
    case PrimId::log:
    case PrimId::sqrt:
    case PrimId::rsqrt:
    case PrimId::sin:
    case PrimId::cos:
    case PrimId::tanh:
    case PrimId::erf:
    case PrimId::logistic:
    case PrimId::logical_not:
    case PrimId::add:
    case PrimId::sub:
    case PrimId::mul:
    case PrimId::div:
    case PrimId::pow:
    case PrimId::max:
    case PrimId::min:
    case PrimId::eq:
    case PrimId::ne:
    case PrimId::lt:
    case PrimId::le:
    case PrimId::gt:
    case PrimId::ge:
    case PrimId::logical_and:
    case PrimId::logical_or:
    case PrimId::where:
    case PrimId::cast:
    case PrimId::random_normal:
    case PrimId::random_uniform:
    case PrimId::random_bernoulli: return numel(node.shape);
    case PrimId::sum:
    case PrimId::reduce_max:
    case PrimId::reduce_min:
    case PrimId::argmax:
    case PrimId::argmin: return numel(graph.node(node.inputs[0]).shape);
    case PrimId::scatter_add: return numel(graph.node(node.inputs[2]).shape);
    case PrimId::matmul: {
      int64_t k = graph.node(node.inputs[0]).shape.back();
      return 2 * numel(node.shape) * k;
    }
    case PrimId::softmax:
    case PrimId::log_softmax:
    case PrimId::layer_norm:
    case PrimId::rms_norm:
    case PrimId::gelu:
    case PrimId::cross_entropy:
    case PrimId::attention:
    case PrimId::adamw:
    case PrimId::sgd:
    case PrimId::part: {
      std::vector<ValueType> args;
      for (NodeId in : node.inputs) args.push_back({graph.node(in).shape, graph.node(in).dtype});
      return flops(decomposition(*node.prim, args, node.attrs));
    }
  }
  return 0;
}

}  // namespace

int64_t flops(const Graph& graph) {
  std::vector<bool> needed(graph.nodes.size(), false);
  for (const NamedNode& o : graph.outputs) needed[o.node] = true;
  int64_t total = 0;
  for (NodeId id = static_cast<NodeId>(graph.nodes.size()); id-- > 0;) {
    if (!needed[id]) continue;
    const Node& node = graph.nodes[id];
    total += node_flops(graph, node);
    for (NodeId in : node.inputs) needed[in] = true;
  }
  return total;
}

}  // namespace sx::graph
