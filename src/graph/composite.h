// Composite primitives (primitive.h): a composite computes what its decomposition, a few
// nodes of other primitives, computes, and is one node until a device that does not run it
// itself has it replaced by them (expand_composites, passes.h). The decomposition is the
// composite's reference kernel and shape rule, and (where its row says so) the source of
// its gradient (autodiff.cc), so the three never disagree with what the device runs.
//
// That gradient is a composite too: `composite_gradient`, one node per input of the
// differentiated composite. Its inputs are the composite's inputs followed by the
// cotangent of its value; its attributes `of` (the composite's name), `input` (which input
// it is the gradient for) and the composite's own attributes (gradient_attrs); its type is
// that input's. Its decomposition is the composite's built again and walked back from its
// value (autodiff.h's decomposition_gradient): the sum of the contributions inside it to
// that input. A device runs it by a kernel of its own, or it is expanded into those nodes.
#pragma once

#include <span>
#include <vector>

#include "graph/builder.h"
#include "graph/primitive.h"

namespace sx::graph {

// The values of composite `prim` on `args` (nodes of b's graph, canonical as the node
// holds them), built by its decomposition in b's graph.
std::vector<NodeId> decompose(Builder& b, const Primitive& prim, std::span<const NodeId> args, const Attrs& attrs);

// Several values of one shape and dtype as one node, stacked on a new leading axis: how a
// composite of several values holds them (`part` takes one back). One value is itself.
NodeId stacked(Builder& b, std::span<const NodeId> values);

// A graph of composite `prim` alone: one input per argument type, named "0", "1", ...,
// and its decomposition, whose value (stacked when several) is the output "0".
Graph decomposition(const Primitive& prim, std::span<const ValueType> args, const Attrs& attrs);

// The type of composite `prim` on arguments of `args`' types: its decomposition's (its
// values stacked when several). Errors are the decomposition's ShapeErrors.
ValueType infer_by_decomposition(const Primitive& prim, std::span<const ValueType> args, const Attrs& attrs);

// The attributes of the composite_gradient of composite `of` (with attributes `attrs`)
// for its input `input`: `of`, `input`, and `attrs` nested: one named `of` or `input`, or
// whose name begins with "of.", is held as "of." and its name (a gradient's gradient).
Attrs gradient_attrs(const Primitive& of, size_t input, const Attrs& attrs);
// What gradient_attrs took: the composite a composite_gradient's attributes name (a
// ShapeError where they name none that is differentiated by its decomposition), and its
// attributes.
const Primitive& gradient_of(const Attrs& attrs);
Attrs differentiated_attrs(const Attrs& attrs);

// The shape rule of every composite row.
template <PrimId Id>
ValueType infer_composite(std::span<const ValueType> args, const Attrs& attrs) {
  return infer_by_decomposition(primitive(Id), args, attrs);
}

// The reference kernel of every composite: its decomposition, run by the reference kernels.
// An index outside its axis (a checked one_hot's) is reported as the composite's operand.
Tensor run_decomposition(const Node& node, std::span<const Tensor* const> args);

}  // namespace sx::graph
