// Matrix product. The primitive multiplies [..., m, k] by [..., k, n] with
// equal batch dimensions; the op accepts what NumPy's matmul does: 1-D
// operands (a vector is a row on the left, a column on the right, and that
// axis is dropped from the result) and batch dimensions that broadcast.
#include "graph/prims/common.h"
#include "graph/prims/families.h"

namespace sx::graph::prims {
namespace {

using Grads = std::vector<std::optional<NodeId>>;
using Args = std::span<const Tensor* const>;
using Types = std::span<const ValueType>;

[[noreturn]] void inner_mismatch(const Shape& a, const Shape& b, int64_t ka, int64_t kb) {
  throw ShapeError(fmt::format("matmul: cannot multiply {} by {}: inner dimensions {} and {} differ", shape_str(a),
                               shape_str(b), ka, kb));
}

ValueType infer_matmul(Types args, const Attrs&) {
  const Shape &a = args[0].shape, &b = args[1].shape;
  require_dtypes("matmul", args, is_numeric, "numeric");
  if (args[0].dtype != args[1].dtype) {
    throw ShapeError(fmt::format("matmul: operands must have one dtype, got {} and {}", dtype_name(args[0].dtype),
                                 dtype_name(args[1].dtype)));
  }
  if (a.size() < 2 || a.size() != b.size() || !std::equal(a.begin(), a.end() - 2, b.begin())) {
    throw ShapeError(
        fmt::format("matmul: the primitive needs [..., m, k] and [..., k, n] with equal batch "
                    "dimensions, got {} and {}",
                    shape_str(a), shape_str(b)));
  }
  size_t r = a.size();
  if (a[r - 1] != b[r - 2]) inner_mismatch(a, b, a[r - 1], b[r - 2]);
  Shape out = a;
  out[r - 1] = b[r - 1];
  return {out, args[0].dtype};
}

NodeId build_matmul(Builder& b, const Primitive& prim, std::span<const NodeId> args, const Attrs&) {
  std::vector<NodeId> xs = b.promote_args(args);
  Shape sa = b.shape(xs[0]), sb = b.shape(xs[1]);
  if (sa.empty() || sb.empty()) {
    throw ShapeError(
        fmt::format("matmul: needs operands of rank 1 or more, got {} and {}", shape_str(sa), shape_str(sb)));
  }
  bool row_vector = sa.size() == 1, column_vector = sb.size() == 1;
  Shape a = row_vector ? Shape{1, sa[0]} : sa;
  Shape c = column_vector ? Shape{sb[0], 1} : sb;
  if (a.back() != c[c.size() - 2]) inner_mismatch(sa, sb, a.back(), c[c.size() - 2]);
  auto batch = broadcast_shapes(Shape(a.begin(), a.end() - 2), Shape(c.begin(), c.end() - 2));
  if (!batch) {
    throw ShapeError(
        fmt::format("matmul: cannot broadcast the batch dimensions of {} and {}", shape_str(sa), shape_str(sb)));
  }
  Shape full_a = *batch, full_c = *batch;
  full_a.insert(full_a.end(), a.end() - 2, a.end());
  full_c.insert(full_c.end(), c.end() - 2, c.end());
  NodeId left = b.broadcast_to(b.reshape(xs[0], a), full_a);
  NodeId right = b.broadcast_to(b.reshape(xs[1], c), full_c);
  NodeId product = b.emit(prim, {left, right});
  Shape out = *batch;
  if (!row_vector) out.push_back(a[a.size() - 2]);
  if (!column_vector) out.push_back(c.back());
  return b.reshape(product, out);
}

NodeId swap_last_two(Builder& b, NodeId x) {
  std::vector<int64_t> perm;
  auto rank = static_cast<int64_t>(b.shape(x).size());
  for (int64_t d = 0; d < rank; ++d) perm.push_back(d);
  std::swap(perm[static_cast<size_t>(rank - 1)], perm[static_cast<size_t>(rank - 2)]);
  return b.transpose(x, perm);
}

Tensor matmul_kernel(const Node& node, const Tensor& a, const Tensor& b) {
  Tensor out(node.dtype, node.shape);
  size_t r = node.shape.size();
  int64_t m = a.shape()[r - 2], k = a.shape()[r - 1], n = b.shape()[r - 1];
  int64_t batches = numel(Shape(node.shape.begin(), node.shape.end() - 2));
  visit_dtype(node.dtype, [&](auto types) {
    using S = typename decltype(types)::storage;
    using C = typename decltype(types)::compute;
    const S *pa = a.data<S>(), *pb = b.data<S>();
    S* po = out.data<S>();
    for (int64_t batch = 0; batch < batches; ++batch) {
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          C acc(0);
          for (int64_t p = 0; p < k; ++p) {
            C x = static_cast<C>(pa[(batch * m + i) * k + p]), y = static_cast<C>(pb[(batch * k + p) * n + j]);
            acc = wrap_add(acc, wrap_mul(x, y));
          }
          po[(batch * m + i) * n + j] = S(acc);
        }
      }
    }
  });
  return out;
}

// A batch axis is both operands'; a row of the result is a row of a alone,
// a column a column of b alone.
std::optional<Sinking> sink_matmul(const Node& node, Types, int64_t axis) {
  auto rank = static_cast<int64_t>(node.shape.size());
  std::vector<std::optional<int64_t>> input_axes{axis, axis};
  if (axis == rank - 2) input_axes[1] = std::nullopt;
  if (axis == rank - 1) input_axes[0] = std::nullopt;
  return Sinking{.input_axes = std::move(input_axes), .attrs = node.attrs};
}

const Primitive kMatmul[] = {
    {.id = PrimId::matmul,
     .name = "matmul",
     .arity = 2,
     .kind = PrimKind::product,
     .infer = infer_matmul,
     .build = build_matmul,
     .grad = [](Builder& b, const Node& n, NodeId, NodeId ct) -> Grads {
       NodeId a = n.inputs[0], c = n.inputs[1];
       return {b.matmul(ct, swap_last_two(b, c)), b.matmul(swap_last_two(b, a), ct)};
     },
     .batch = batch_elementwise,
     .sink = sink_matmul,
     .kernel = [](const Node& n, Args x) { return matmul_kernel(n, *x[0], *x[1]); }},
};

}  // namespace

std::span<const Primitive> matmul_primitives() { return kMatmul; }

}  // namespace sx::graph::prims
