// What a primitive is: its id, name, arity and the six rules declared side
// by side in its family's file (src/graph/prims/*.cc), and the registry that
// finds them by id or by name.
//
// The id is what code that acts per primitive dispatches on (devices index
// their kernel tables by it, passes compare it); the name is for people and
// files: printing, errors, the JSON form and the front end's ops.
//
//   infer   the shape/dtype rule: checks canonical arguments and gives the
//           output type; the verifier re-runs it on every node.
//   build   the op: what the builder does with user arguments before
//           emitting (promotion, broadcasting, defaults); null = emit as is.
//   grad    reverse-mode rule: the cotangent of each input, built from other
//           ops; null = not differentiable (no gradient flows through).
//   batch   the batching rule: the node applied to inputs of which some
//           carry a new leading batch axis; the result carries it.
//   sink    the gather-sinking rule (take_at): how the node's value at one
//           place of an axis is computed from its inputs, each at one place
//           of one of its axes or whole; null, or nullopt for an axis, = the
//           node mixes that axis's places, so a gather of it stays after it.
//   kernel  the reference kernel: plain loops in the node's dtype.
//
// A composite (softmax, layer_norm, attention, adamw, ...) adds its decomposition: the
// nodes of other primitives that compute it. That is its reference kernel, its shape
// rule and, where it says so, its gradient (one `composite_gradient` node per input); a
// device that does not run the composite itself runs its decomposition (graph/composite.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "graph/graph.h"

namespace sx::graph {

class Builder;
struct Primitive;

// Every primitive, family by family as families.h lists them; all_primitives()
// gives them in this order. A new primitive adds its id here and its row in
// its family's file; the registry refuses an id without a row or with two.
enum class PrimId : uint8_t {
  // source
  input,
  constant,
  // unary
  neg,
  abs,
  sign,
  exp,
  log,
  sqrt,
  rsqrt,
  sin,
  cos,
  tanh,
  erf,
  logistic,
  logical_not,
  stop_gradient,
  // binary, where, cast
  add,
  sub,
  mul,
  div,
  pow,
  max,
  min,
  eq,
  ne,
  lt,
  le,
  gt,
  ge,
  logical_and,
  logical_or,
  where,
  cast,
  // reduce
  sum,
  reduce_max,
  reduce_min,
  argmax,
  argmin,
  // shape
  reshape,
  transpose,
  broadcast,
  slice,
  concat,
  pad,
  // index
  gather,
  scatter_add,
  iota,
  one_hot,
  // matmul
  matmul,
  // random
  random_normal,
  random_uniform,
  random_bernoulli,
  // composite
  softmax,
  log_softmax,
  layer_norm,
  rms_norm,
  gelu,
  cross_entropy,
  attention,
  composite_gradient,
  adamw,
  sgd,
  part,
};

// How many primitives there are: the size of a table indexed by id.
inline constexpr size_t kPrimitiveCount = static_cast<size_t>(PrimId::part) + 1;

// What a primitive is, for code that treats several alike (what it costs, how a device
// fuses it), written once in its row:
//   source       makes values from nothing it reads (input, constant, iota)
//   elementwise  one value per element of its result, from the same place of its operands
//   movement     moves or selects values without computing them (views, gather, one_hot)
//   reduction    combines the elements of an input along axes (sum, argmax, scatter_add)
//   product      matmul
//   random       draws its values from a key
//   composite    defined by a decomposition into the others (softmax, adamw, ...)
enum class PrimKind : uint8_t { source, elementwise, movement, reduction, product, random, composite };

// The work of one element of an elementwise primitive, for a device's choice of threads
// and of what to recompute: a handful of instructions (cheap), or a function of many
// (costly: exp, tanh, sqrt, pow, ...).
enum class ElementCost : uint8_t { cheap, costly };

// A primitive's place in a table indexed by id.
constexpr size_t index_of(PrimId id) { return static_cast<size_t>(id); }

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
// A composite's values from its canonical arguments, built with other ops: one value, or
// several of one shape and dtype (an optimizer's new parameter and moments), which the
// node holds stacked on a new leading axis and `part` takes apart.
using DecomposeFn = std::vector<NodeId> (*)(Builder& b, std::span<const NodeId> args, const Attrs& attrs);

// What a sinking rule gives for a node taken at one place of `axis` (that
// axis kept with length 1): for each input, the axis it is taken at, at the
// same place, or nullopt to read it whole; and the attributes of the node that
// computes the one place from them, as the same primitive.
struct Sinking {
  std::vector<std::optional<int64_t>> input_axes;
  Attrs attrs;
};
using SinkFn = std::optional<Sinking> (*)(const Node& node, std::span<const ValueType> args, int64_t axis);

struct Primitive {
  PrimId id = PrimId::input;
  std::string_view name;
  int arity = 0;  // -1: any number of inputs, at least one
  PrimKind kind = PrimKind::elementwise;
  ElementCost cost = ElementCost::cheap;  // an elementwise primitive's
  InferFn infer = nullptr;
  BuildFn build = nullptr;
  GradFn grad = nullptr;
  BatchFn batch = nullptr;
  SinkFn sink = nullptr;
  KernelFn kernel = nullptr;
  DecomposeFn decompose = nullptr;  // a composite's, and only a composite's
  // A composite whose gradient is its decomposition's: autodiff gives it, per input, a
  // `composite_gradient` node, whose decomposition differentiates this one's (graph/composite.h).
  // Its `grad` stays null.
  bool grad_by_decomposition = false;

  bool differentiable() const { return grad != nullptr || grad_by_decomposition; }
  bool composite() const { return kind == PrimKind::composite; }
};

const Primitive& primitive(PrimId id);
// Throws GraphError listing the known names when there is no such primitive.
const Primitive& primitive(std::string_view name);
const Primitive* find_primitive(std::string_view name);
// Every registered primitive, in registry order (all_primitives()[index_of(id)] is id's).
std::span<const Primitive* const> all_primitives();

}  // namespace sx::graph
