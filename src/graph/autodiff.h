// Reverse-mode automatic differentiation as a graph-to-graph transformation:
// each primitive's gradient rule is applied from the loss back to the
// inputs, cotangents of a node used several times are summed, and a
// broadcast's rule sums its cotangent back to the unbroadcast shape. A composite
// (graph/composite.h) contributes to each of its inputs one `composite_gradient` node,
// which a device runs by a kernel of its own or expands into decomposition_gradient's
// nodes.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "graph/builder.h"

namespace sx::graph {

// Appends to the builder's graph the gradient of `loss` (a floating-point
// scalar) with respect to each node of `wrt`, and returns one node per
// entry, shaped and typed like it. A node the loss does not depend on, or
// depends on only through non-differentiable primitives (comparisons,
// argmax, iota, random, integer dtypes), gets zeros.
std::vector<NodeId> gradients(Builder& b, NodeId loss, std::span<const NodeId> wrt);

// The gradient of composite `prim` on `args` (nodes of b's graph) with `attrs`, for its
// input `input`, given the cotangent of its value: its decomposition built again in b's
// graph and walked back from its value by the walk `gradients` takes, the contributions
// that reach that input summed in the order they come (zeros of its type where none
// does). Another input that is the same node is held constant: each input has its own
// gradient. What a composite_gradient node computes.
NodeId decomposition_gradient(Builder& b, const Primitive& prim, std::span<const NodeId> args, const Attrs& attrs,
                              NodeId cotangent, size_t input);

// A copy of `graph` that also outputs the gradient of its output named
// `loss` with respect to each input named in `wrt`, as outputs named
// `prefix` + the input's name ("grad/w").
Graph with_gradients(const Graph& graph, std::string_view loss, std::span<const std::string> wrt,
                     std::string_view prefix = "grad/");

}  // namespace sx::graph
