// Reverse-mode automatic differentiation as a graph-to-graph transformation:
// each primitive's gradient rule is applied from the loss back to the
// inputs, cotangents of a node used several times are summed, and a
// broadcast's rule sums its cotangent back to the unbroadcast shape. A composite
// (graph/composite.h) is differentiated through its decomposition, built again after the
// node, so the gradient's nodes are those of the graph with the composite expanded.
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

// A copy of `graph` that also outputs the gradient of its output named
// `loss` with respect to each input named in `wrt`, as outputs named
// `prefix` + the input's name ("grad/w").
Graph with_gradients(const Graph& graph, std::string_view loss, std::span<const std::string> wrt,
                     std::string_view prefix = "grad/");

}  // namespace sx::graph
