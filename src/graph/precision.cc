// The bf16 policy as a served model applies it (`--precision bf16`, see
// passes.h): matrix products on bf16 operands, every output in its own dtype.
//
// The form is a bf16 matmul between casts: both devices' bf16 kernels widen
// the operands exactly and accumulate in f32, rounding only the result, so
// this is f32 accumulation wherever the kernels give it. The other form, f32
// products of operands rounded to bf16, would be a little more exact (no
// rounding of the result) but would run the f32 kernels at their cost: the
// policy is there to run the products in bf16.
#include <unordered_map>
#include <unordered_set>

#include "graph/builder.h"
#include "graph/composite.h"
#include "graph/passes.h"
#include "graph/primitive.h"
#include "graph/rewrite.h"
#include "graph/verify.h"

namespace sx::graph {
namespace {

// The bf16 form of a node of the new graph, made once per node. A broadcast,
// reshape, transpose or slice is cast below it: the same values, a cast of the
// weight alone (not of it spread over a batch, nor of a transposed copy), one cast
// of a tensor that products read in slices (attention's q, k and v, cut from one
// product), and the product still reads a broadcast, transposed or sliced operand
// where it lies, as the cpu device's products do.
// A node whose values are its input's, moved: a cast commutes with it.
bool views(const Node& node) {
  return node.op() == PrimId::broadcast || node.op() == PrimId::reshape || node.op() == PrimId::transpose ||
         node.op() == PrimId::slice;
}

class Bf16Operands {
 public:
  explicit Bf16Operands(Builder& b) : b_(b) {}

  NodeId of(NodeId x) {
    if (auto it = made_.find(x); it != made_.end()) return it->second;
    const Node& node = b_.node(x);
    NodeId made;
    if (views(node)) {
      const Primitive& prim = *node.prim;
      Attrs attrs = node.attrs;  // `node` moves when the builder adds nodes
      made = b_.emit(prim, {of(node.inputs[0])}, attrs);
    } else {
      made = b_.cast(x, DType::bf16);
    }
    made_.emplace(x, made);
    return made;
  }

 private:
  Builder& b_;
  std::unordered_map<NodeId, NodeId> made_;
};

// Whether `x` is one of the inputs `kept` names, or a broadcast, reshape, transpose or
// slice of one.
bool reads_kept(const Graph& graph, NodeId x, const std::unordered_set<NodeId>& kept) {
  for (;;) {
    if (kept.contains(x)) return true;
    const Node& node = graph.node(x);
    if (!views(node)) return false;
    x = node.inputs[0];
  }
}

// Whether composite `node` of `graph` computes a matrix product in its decomposition, or
// in a composite of its decomposition.
bool holds_product(const Graph& graph, const Node& node) {
  std::vector<ValueType> args;
  for (NodeId in : node.inputs) args.push_back({graph.node(in).shape, graph.node(in).dtype});
  const Graph parts = decomposition(*node.prim, args, node.attrs);
  for (const Node& part : parts.nodes) {
    if (part.op() == PrimId::matmul || (part.prim->composite() && holds_product(parts, part))) return true;
  }
  return false;
}

// `given` with each composite node that computes a product (an attention, its gradients)
// expanded, so that the policy sees its products. Decided per node: a layer-norm's
// gradient stays one node beside an attention's expanded one.
Graph products_in_sight(const Graph& given) {
  return expand_composites(
      given, NodePredicate([](const Graph& graph, const Node& node) { return !holds_product(graph, node); }));
}

}  // namespace

Graph bf16_products(const Graph& given, std::span<const std::string> kept_f32) {
  const Graph graph = merge_batch_sums(products_in_sight(given));
  std::unordered_set<NodeId> kept;
  for (const std::string& name : kept_f32) {
    if (auto node = graph.find_input(name)) kept.insert(*node);
  }
  Rewrite r(graph);
  Builder b(r.out);
  Bf16Operands bf16(b);
  for (NodeId id = 0; id < graph.nodes.size(); ++id) {
    const Node& node = graph.nodes[id];
    if (node.op() != PrimId::matmul || node.dtype != DType::f32 || reads_kept(graph, node.inputs[0], kept) ||
        reads_kept(graph, node.inputs[1], kept)) {
      r.map[id] = r.copy(node);
      continue;
    }
    b.set_origin(node.origin);
    NodeId a = bf16.of(r.map[node.inputs[0]]), c = bf16.of(r.map[node.inputs[1]]);
    r.map[id] = b.cast(b.emit(*node.prim, {a, c}, node.attrs), node.dtype);
  }
  r.copy_names(graph);
  verify(r.out);
  return std::move(r.out);
}

std::vector<NodeId> keep_inputs_in_bf16(Graph& graph, std::span<const NodeId> candidates) {
  struct Readers {
    bool read = false, all_cast_down = true;
  };
  std::unordered_map<NodeId, Readers> readers;
  for (NodeId c : candidates) {
    const Node& node = graph.nodes.at(c);
    if (node.op() == PrimId::input && node.dtype == DType::f32) readers[c] = {};
  }
  if (readers.empty()) return {};
  for (const Node& node : graph.nodes) {
    for (NodeId arg : node.inputs) {
      auto it = readers.find(arg);
      if (it == readers.end()) continue;
      it->second.read = true;
      it->second.all_cast_down = it->second.all_cast_down && node.op() == PrimId::cast && node.dtype == DType::bf16;
    }
  }
  // An output reads its node as it is.
  for (const NamedNode& out : graph.outputs) {
    if (auto it = readers.find(out.node); it != readers.end()) it->second.all_cast_down = false;
  }
  std::vector<NodeId> retyped;
  for (NodeId c : candidates) {
    auto it = readers.find(c);
    if (it == readers.end() || !it->second.read || !it->second.all_cast_down) continue;
    graph.nodes[c].dtype = DType::bf16;
    retyped.push_back(c);
    readers.erase(it);
  }
  verify(graph);
  return retyped;
}

}  // namespace sx::graph
