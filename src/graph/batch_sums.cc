// merge_batch_sums (passes.h): a weight's gradient over a batch as one product.
#include <vector>

#include "graph/builder.h"
#include "graph/passes.h"
#include "graph/primitive.h"
#include "graph/rewrite.h"

namespace sx::graph {
namespace {

// The product of a weight's gradient that node `sum` sums over its batch, or
// nothing. Whatever else reads the batch's products (they are then computed for
// it), the sum is the one product: its bits never depend on the nodes that read.
const Node* batch_summed_product(const Graph& graph, const Node& sum) {
  if (sum.op() != PrimId::sum || sum.attrs.get_ints("axes") != std::vector<int64_t>{0}) return nullptr;
  const Node& product = graph.node(sum.inputs[0]);
  if (product.op() != PrimId::matmul || product.shape.size() != 3) return nullptr;
  // f32 only: bf16 products are each rounded to bf16 before the sum, and one product
  // of the whole batch, rounded once, would differ by more than a sum's rounding.
  if (product.dtype != DType::f32) return nullptr;
  const Node& left = graph.node(product.inputs[0]);
  const Node& right = graph.node(product.inputs[1]);
  if (left.op() != PrimId::transpose || left.attrs.get_ints("perm") != std::vector<int64_t>{0, 2, 1}) return nullptr;
  if (right.shape.size() != 3 || numel(product.shape) == 0) return nullptr;
  return &product;
}

}  // namespace

Graph merge_batch_sums(const Graph& graph) {
  bool any = false;
  for (const Node& node : graph.nodes) any = any || batch_summed_product(graph, node) != nullptr;
  if (!any) return graph;
  Rewrite rewrite(graph);
  Builder b(rewrite.out);
  for (NodeId id = 0; id < graph.nodes.size(); ++id) {
    const Node& node = graph.nodes[id];
    const Node* product = batch_summed_product(graph, node);
    if (product == nullptr) {
      rewrite.map[id] = rewrite.copy(node);
      continue;
    }
    NodeId x = graph.node(product->inputs[0]).inputs[0];  // [batch, k, m]
    NodeId dy = product->inputs[1];                       // [batch, k, n]
    const Shape &x_shape = graph.node(x).shape, &dy_shape = graph.node(dy).shape;
    const int64_t rows = x_shape[0] * x_shape[1];
    b.set_origin(node.origin);
    NodeId left = b.transpose(b.reshape(rewrite.map[x], {rows, x_shape[2]}), {1, 0});
    NodeId merged = b.matmul(left, b.reshape(rewrite.map[dy], {rows, dy_shape[2]}));
    rewrite.map[id] = node.shape.size() == 2 ? merged : b.reshape(merged, node.shape);
  }
  rewrite.copy_names(graph);
  return rewrite.out;
}

}  // namespace sx::graph
