// What a graph costs to run, counted from its shapes: how passes that promise
// less work (take_at, select_outputs) are checked, and plans compared.
#pragma once

#include <cstdint>

#include "graph/graph.h"

namespace sx::graph {

// The arithmetic of the nodes the outputs need, in operations:
//   matmul                       2 * m * n * k per batch entry (a multiply and an add)
//   elementwise (unary, binary,  one per element written
//     where, cast)
//   reductions                   one per element read
//   scatter_add                  one per update added
//   random                       one per element drawn
//   inputs, constants and data   none: reshape, transpose, broadcast, slice, concat, pad,
//     movement                   gather, iota, one_hot move or make values, not compute them
//   composites                   their decompositions' (graph/composite.h)
int64_t flops(const Graph& graph);

}  // namespace sx::graph
