// Helpers the primitive families share: error text, wrapping integer
// arithmetic and elementwise loops for reference kernels, and the common
// batching rules.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <span>
#include <string_view>
#include <type_traits>
#include <vector>

#include "graph/builder.h"
#include "graph/errors.h"
#include "graph/primitive.h"
#include "graph/prims/scalar.h"
#include "graph/tensor.h"

namespace sx::graph::prims {

// "f32[2, 3]".
std::string type_str(const ValueType& type);

// Throws ShapeError "<op>: needs <what> operands, got <dtypes>" unless every
// argument's dtype passes `accepts`.
void require_dtypes(std::string_view op, std::span<const ValueType> args, bool (*accepts)(DType),
                    std::string_view what);
bool is_numeric(DType dtype);  // any dtype but bool
bool is_bool(DType dtype);
// Throws unless all arguments have the same shape and dtype.
void require_same_types(std::string_view op, std::span<const ValueType> args);

// out[i] = f(x[i]) in the compute type of x's dtype; out has x's dtype.
template <class Fn>
Tensor map_unary(const Tensor& x, Fn f) {
  Tensor out(x.dtype(), x.shape());
  visit_dtype(x.dtype(), [&](auto types) {
    using S = typename decltype(types)::storage;
    using C = typename decltype(types)::compute;
    const S* in = x.data<S>();
    S* o = out.data<S>();
    for (int64_t i = 0; i < x.numel(); ++i) o[i] = S(static_cast<C>(f(static_cast<C>(in[i]))));
  });
  return out;
}

// out[i] = f(a[i], b[i]); a and b have one shape and dtype; out has
// `out_dtype`, which is either that dtype or bool.
template <class Fn>
Tensor map_binary(const Tensor& a, const Tensor& b, DType out_dtype, Fn f) {
  Tensor out(out_dtype, a.shape());
  visit_dtype(a.dtype(), [&](auto types) {
    using S = typename decltype(types)::storage;
    using C = typename decltype(types)::compute;
    const S* pa = a.data<S>();
    const S* pb = b.data<S>();
    for (int64_t i = 0; i < a.numel(); ++i) {
      auto r = f(static_cast<C>(pa[i]), static_cast<C>(pb[i]));
      if (out_dtype == DType::boolean) out.data<bool>()[i] = static_cast<bool>(r);
      else out.data<S>()[i] = S(static_cast<C>(r));
    }
  });
  return out;
}

// The reference kernels of the elementwise primitives, from their formulas
// (scalar.h): f(x[i]), and f(a[i], b[i]) into the node's dtype (the operands'
// or, for a comparison, bool).
template <class F>
Tensor unary_kernel(const Node&, std::span<const Tensor* const> args) {
  return map_unary(*args[0], F{});
}
template <class F>
Tensor binary_kernel(const Node& node, std::span<const Tensor* const> args) {
  return map_binary(*args[0], *args[1], node.dtype, F{});
}

// The reference kernel of a primitive whose value is its input's bytes, in the node's
// shape (reshape, stop_gradient).
inline Tensor bytes_kernel(const Node& node, std::span<const Tensor* const> args) {
  return Tensor(node.dtype, node.shape, args[0]->bytes());
}

// Walks the positions of a shape in row-major order: index() is the
// multi-index of position 0, 1, ... after that many calls to next().
class IndexWalk {
 public:
  explicit IndexWalk(Shape shape) : shape_(std::move(shape)), index_(shape_.size(), 0) {}
  const std::vector<int64_t>& index() const { return index_; }
  void next() {
    for (size_t d = shape_.size(); d-- > 0;) {
      if (++index_[d] < shape_[d]) return;
      index_[d] = 0;
    }
  }

 private:
  Shape shape_;
  std::vector<int64_t> index_;
};

int64_t ravel(const std::vector<int64_t>& index, const std::vector<int64_t>& strides);

// Batching helpers. `batched[i]` says whether args[i] carries the leading
// batch axis.
NodeId to_batched(Builder& b, NodeId x, bool batched, int64_t batch_size);
// Gives every argument the batch axis, then emits the node's primitive with
// its attributes: the rule of every elementwise primitive.
NodeId batch_elementwise(Builder& b, const Node& node, std::span<const NodeId> args, std::span<const bool> batched,
                         int64_t batch_size);
// Applies the node to each row and stacks the results: correct for every
// primitive, used where no cheaper rule exists.
NodeId batch_by_unrolling(Builder& b, const Node& node, std::span<const NodeId> args, std::span<const bool> batched,
                          int64_t batch_size);
// The sinking rule of every primitive whose operands have the node's shape
// and whose result at a position reads the operands at that position alone:
// each operand taken at the same place of the same axis.
std::optional<Sinking> sink_elementwise(const Node& node, std::span<const ValueType> args, int64_t axis);

// Each axis plus `shift`.
std::vector<int64_t> shift_axes(std::vector<int64_t> axes, int64_t shift);

}  // namespace sx::graph::prims
