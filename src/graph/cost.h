// What a graph costs to run, counted from its shapes: how passes that promise
// less work (take_at, select_outputs) are checked, and plans compared.
#pragma once

#include <cstdint>

#include "graph/graph.h"

namespace sx::graph {

// The arithmetic of the nodes the outputs need, in operations, by each primitive's kind
// (graph/primitive.h):
//   product       2 * m * n * k per batch entry (a multiply and an add)
//   elementwise   one per element written
//   reduction     one per element read (a scatter_add's: one per update added)
//   random        one per element drawn
//   source and    none: inputs, constants, iota, and reshape, transpose, broadcast,
//     movement    slice, concat, pad, gather, one_hot move or make values, not compute them
//   composite     their decompositions' (graph/composite.h)
int64_t flops(const Graph& graph);

}  // namespace sx::graph
