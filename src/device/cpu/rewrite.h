// Graph rewrites the cpu device makes before it plans a graph: forms of a
// computation that its kernels run faster, with results that differ from the
// graph as given by rounding only, and that are the same on every host.
#pragma once

#include "graph/graph.h"

namespace sx::device::cpu {

// A weight's gradient over a batch, sum over axis 0 of matmul(transpose(x), dy)
// with x [batch, k, m] and dy [batch, k, n] in f32, becomes one product over all the
// batch's rows: transpose(x as [batch * k, m]) @ (dy as [batch * k, n]). The
// batch's products are not written, nor summed after, and the product has
// batch times the depth, which the GEMM runs nearer its peak.
graph::Graph merge_batch_sums(const graph::Graph& graph);

}  // namespace sx::device::cpu
