// The primitive families, one file each in this folder; registry.cc joins
// them into the one table.
#pragma once

#include <span>

#include "graph/primitive.h"

namespace sx::graph::prims {

std::span<const Primitive> source_primitives();  // input, constant
std::span<const Primitive> unary_primitives();   // neg ... logical_not
std::span<const Primitive> binary_primitives();  // add ... where, cast
std::span<const Primitive> reduce_primitives();  // sum, reduce_max/min, argmax/min
std::span<const Primitive> shape_primitives();   // reshape ... pad
std::span<const Primitive> index_primitives();   // gather, scatter_add, iota, one_hot
std::span<const Primitive> matmul_primitives();  // matmul
std::span<const Primitive> random_primitives();  // random_normal/uniform/bernoulli
// Composites (composite.h): softmax, log_softmax, layer_norm, rms_norm, gelu, cross_entropy, attention
std::span<const Primitive> composite_primitives();
std::span<const Primitive> composite_gradient_primitives();  // composite_gradient
std::span<const Primitive> update_primitives();              // adamw, sgd, part

}  // namespace sx::graph::prims
