// A graph as readable text, one node a line, for debugging, test failures
// and `explain`-style output:
//
//   %0 = input "x" : f32[2, 3]
//   %1 = constant 2 : f64[] weak
//   %2 = mul %0 %1 : f32[2, 3]
//   %3 = sum %2 {axes=[0, 1] keepdims=0} : f32[]
//   output "loss" = %3
#pragma once

#include <string>

#include "graph/graph.h"

namespace sx::graph {

// Constants with at most `max_values` elements show their values.
std::string graph_to_text(const Graph& graph, int64_t max_values = 8);

}  // namespace sx::graph
