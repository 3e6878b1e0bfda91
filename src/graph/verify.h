// The verifier: checks that a graph is well formed. Every pass runs it on
// its result; it throws VerifyError naming the node it rejects.
#pragma once

#include "graph/graph.h"

namespace sx::graph {

// Checks: every node has a registered primitive; inputs precede their user
// (topological order) and the arity fits; the primitive's shape/dtype rule
// accepts the inputs and gives the node's shape and dtype; a constant's
// value has the node's shape and dtype; `input` nodes are exactly the named
// inputs; named inputs and outputs are unique and refer to existing nodes.
void verify(const Graph& graph);

}  // namespace sx::graph
