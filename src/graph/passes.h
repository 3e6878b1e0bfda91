// Graph passes: each takes a graph and returns a new one that computes the
// same outputs, and runs the verifier on its result.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/primitive.h"

namespace sx::graph {

// Computes the outputs of a graph without inputs, in order: how fold_constants gets the
// values it folds. The runtime passes one that compiles and runs the graph on the device
// the folded graph is compiled for, so that folding never changes a result's bits: the
// reference kernels would give a cpu program the reference's matmul and sums.
using EvaluateConstants = std::function<std::vector<Tensor>(const Graph&)>;

// Replaces every node whose inputs are all constants (or folded themselves) and whose
// result has at most `max_elements` elements (so that a broadcast scalar is not written
// out in full) by a constant. The values come from one call of `evaluate`, on the part
// of the graph they need.
Graph fold_constants(const Graph& graph, const EvaluateConstants& evaluate, int64_t max_elements = 4096);

// Common-subexpression elimination: nodes with the same primitive, inputs,
// attributes and type (and constants with the same value) become one.
Graph eliminate_common_subexpressions(const Graph& graph);

// Algebraic identities: x+0, 0+x, x-0, x*1, 1*x, x/1, neg(neg x),
// reshape to the same shape, reshape of reshape, transpose of transpose,
// the identity transpose, cast to the same dtype, broadcast to the same shape,
// broadcast of broadcast;
// and stop_gradient, the identity once gradients are taken: a graph that is
// still to be differentiated is not simplified.
Graph simplify(const Graph& graph);

// Keeps only the nodes the outputs need (and every named input).
Graph eliminate_dead_code(const Graph& graph);

// The part of `graph` that computes `outputs` (named "0", "1", ... in
// order), found by walking back from them: its cost grows with that part,
// not with the graph, so a trace that grows all session long (the REPL) is
// never copied whole. Only the inputs read are kept, in the graph's order.
Graph extract(const Graph& graph, std::span<const NodeId> outputs);

// Folding, CSE, simplification, CSE again, then dead-code elimination: what the runtime
// runs on every graph before the device compiles it (runtime/compile.h). The named
// inputs and outputs stay as they are, in their order: programs bind them by position.
Graph optimize(const Graph& graph, const EvaluateConstants& evaluate);

// Only the outputs named, in that order, and only the work they need; every input is
// kept. GraphError naming an output the graph does not have.
Graph select_outputs(const Graph& graph, std::span<const std::string> names);

// A last input `at` (i32 [1]) and each output taken at that place of its second axis,
// which keeps length 1. GraphError when an output has no second axis, or the outputs'
// second axes differ in length. An `at` outside the axis is the caller's to refuse before
// the run (serve does): where a gather reads it, it stops the run as any index outside its
// axis does (graph/index_error.h), but one sunk past a broadcast of the axis reads none.
//
// The composites are expanded first (expand_composites): the gather sinks through their
// decompositions. The gather is sunk toward the inputs through every node that computes
// each place of the axis from that place of its inputs alone (each primitive's sinking
// rule, see primitive.h), following the axis through transposes and reshapes that keep
// it: so a final projection, and everything after it, runs for one row, not the window.
// It stays after a node that mixes the places (a reduction over the axis, a reshape that
// merges it); a node that is needed whole anyway is computed once, whole, and gathered.
// The outputs are the same bits as a gather at the end, on every device whose kernels'
// order of summation does not depend on the other rows (reference, cpu).
Graph take_at(const Graph& graph);

// A weight's gradient over a batch, sum over axis 0 of matmul(transpose(x), dy) with
// x [batch, k, m] and dy [batch, k, n] in f32, as one product over all the batch's rows:
// transpose(x as [batch * k, m]) @ (dy as [batch * k, n]). The batch's products are not
// written, nor summed after, and the product has batch times the depth, which a GEMM
// runs nearer its peak. The sums differ from the graph's by their order alone. The cpu
// device runs every graph in this form; bf16_products takes it first, so that a
// weight's bf16 gradient is one product, rounded once, as PyTorch's autocast computes it.
Graph merge_batch_sums(const Graph& graph);

// The bf16 policy as a server applies it (`--precision bf16`): every matrix product of
// f32 operands runs on both operands cast to bf16, and its result is cast back to f32,
// so every output keeps its dtype. The product is the bf16 matmul the devices run: the
// operands rounded to bf16 (8 significant bits), their products exact in f32 and
// summed in f32, the sum rounded once to bf16; cast back, it carries bf16's precision
// (a relative error within 2^-8 of the f32 sum of the rounded operands). A weight's
// gradient over a batch is one product first (merge_batch_sums), and a composite that
// computes products (attention) is expanded (expand_composites). A graph without such
// a product is returned as it is. A product that reads one of the inputs
// named in `kept_f32` (a parameter declared `:numerics :high`), directly or through a
// broadcast, reshape or transpose of it, stays f32: that input is never cast down.
Graph bf16_products(const Graph& graph, std::span<const std::string> kept_f32 = {});

// Inputs kept in bf16: each of `candidates` (f32 inputs) that is read, and only by casts
// to bf16 (an output reads it as it is), becomes a bf16 input, in place, so a frozen weight read only in bf16 is held
// in half the memory; its casts then cast bf16 to bf16, which simplify removes. The
// outputs keep their bits: a cast of the f32 value is the bf16 value it is now given.
// In place, because the graph is a session's trace whose node ids its parameters hold.
// Returns the inputs retyped; the graph is verified after.
std::vector<NodeId> keep_inputs_in_bf16(Graph& graph, std::span<const NodeId> candidates);

// Each composite node (graph/composite.h) whose primitive `runs` refuses (every one without
// `runs`) replaced by its decomposition where it is, nested composites too, the nodes
// carrying its origin; a `part` of one of several values becomes that value itself. The
// graph computes the same bits on a device's kernels either way: what a device does not
// run itself, it runs this way (runtime/compile.h).
Graph expand_composites(const Graph& graph, const std::function<bool(PrimId)>& runs = {});
// The same, `runs` deciding per node (a device that runs some forms of a composite alone:
// a softmax over rows but not over columns).
using NodePredicate = std::function<bool(const Graph& graph, const Node& node)>;
Graph expand_composites(const Graph& graph, const NodePredicate& runs);

// The same, where a composite that `runs` accepts is expanded too when the graph computes
// nodes of its decomposition besides: a composite_gradient that `runs` refuses builds the
// composite's decomposition again (graph/composite.h), and the node would compute what those
// nodes compute a second time. Expanded, its nodes are those, which CSE keeps once
// (runtime/compile.h).
Graph expand_shared_composites(const Graph& graph, const NodePredicate& runs);
// Per node: whether it is a composite the graph computes part of besides, a node of its
// decomposition (not a constant) being one the graph holds already, or holds once the
// composite_gradient nodes that `runs` refuses are expanded (a differentiated composite).
std::vector<bool> computed_besides(const Graph& graph, const NodePredicate& runs);

// The batching transformation: a graph in which each input named in
// `batched_inputs` has a new leading axis of size `batch_size`, computing
// each row as the original graph would, by each primitive's batching rule.
// Every output gains the leading axis (broadcast when it does not depend on
// a batched input).
Graph vmap(const Graph& graph, std::span<const std::string> batched_inputs, int64_t batch_size);

}  // namespace sx::graph
