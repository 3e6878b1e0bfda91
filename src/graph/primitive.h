// What a primitive is: its name, arity and the five rules declared side by
// side in its family's file (src/graph/prims/*.cc), and the registry that
// finds them by name.
//
//   infer   the shape/dtype rule: checks canonical arguments and gives the
//           output type; the verifier re-runs it on every node.
//   build   the op: what the builder does with user arguments before
//           emitting (promotion, broadcasting, defaults); null = emit as is.
//   grad    reverse-mode rule: the cotangent of each input, built from other
//           ops; null = not differentiable (no gradient flows through).
//   batch   the batching rule: the node applied to inputs of which some
//           carry a new leading batch axis; the result carries it.
//   kernel  the reference kernel: plain loops in the node's dtype.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "graph/graph.h"

namespace sx::graph {

class Builder;
struct Primitive;

// The type of a value: what shape rules take and give.
struct ValueType {
  Shape shape;
  DType dtype = DType::f32;
};

using InferFn = ValueType (*)(std::span<const ValueType> args, const Attrs& attrs);
using BuildFn = NodeId (*)(Builder& b, const Primitive& prim, std::span<const NodeId> args, const Attrs& attrs);
using GradFn = std::vector<std::optional<NodeId>> (*)(Builder& b, const Node& node, NodeId self, NodeId cotangent);
using BatchFn = NodeId (*)(Builder& b, const Node& node, std::span<const NodeId> args, std::span<const bool> batched,
                           int64_t batch_size);
using KernelFn = Tensor (*)(const Node& node, std::span<const Tensor* const> args);

struct Primitive {
  std::string_view name;
  int arity = 0;  // -1: any number of inputs, at least one
  InferFn infer = nullptr;
  BuildFn build = nullptr;
  GradFn grad = nullptr;
  BatchFn batch = nullptr;
  KernelFn kernel = nullptr;

  bool differentiable() const { return grad != nullptr; }
};

// Throws GraphError listing the known names when there is no such primitive.
const Primitive& primitive(std::string_view name);
const Primitive* find_primitive(std::string_view name);
// Every registered primitive, in registry order.
std::span<const Primitive* const> all_primitives();

}  // namespace sx::graph
