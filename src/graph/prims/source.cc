// The two primitives without inputs whose values come from outside the
// node's rules: `input` (bound by the executor when a plan runs) and
// `constant` (the node's own value). The builder makes them with
// Builder::input and Builder::constant; they have no shape rule to run.
#include "graph/prims/common.h"
#include "graph/prims/families.h"

namespace sx::graph::prims {
namespace {

using Args = std::span<const Tensor* const>;

const Primitive kSource[] = {
    {.id = PrimId::input,
     .name = "input",
     .arity = 0,
     .kind = PrimKind::source,
     .kernel = [](const Node&, Args) -> Tensor {
       throw GraphError("input: has no kernel; the executor binds its value");
     }},
    {.id = PrimId::constant,
     .name = "constant",
     .arity = 0,
     .kind = PrimKind::source,
     .kernel = [](const Node& n, Args) { return *n.value; }},
};

}  // namespace

std::span<const Primitive> source_primitives() { return kSource; }

}  // namespace sx::graph::prims
