// Random numbers from an explicit key (an integer scalar) with Philox
// 4x32-10: random_normal, random_uniform (in [0, 1)) and random_bernoulli
// (true with probability p). Element i uses the Philox block at counter
// {lo32(i), hi32(i), 0, 0} and key {lo32(key), hi32(key)}, so its value
// depends only on the key and i, on every device. A key carrying a batch
// axis is batched by drawing each row with its own key.
#include "graph/prims/common.h"
#include "graph/prims/families.h"
#include "graph/prims/random_draw.h"

namespace sx::graph::prims {
namespace {

using Args = std::span<const Tensor* const>;
using Types = std::span<const ValueType>;

ValueType infer_random(Types args, const Attrs& attrs, std::string_view op, bool floats) {
  if (!args[0].shape.empty() || !is_integer(args[0].dtype)) {
    throw ShapeError(fmt::format("{}: the key must be an integer scalar, got {}", op, type_str(args[0])));
  }
  const Shape& shape = attrs.get_ints("shape");
  for (int64_t d : shape) {
    if (d < 0) throw ShapeError(fmt::format("{}: shape {} has a negative dimension", op, shape_str(shape)));
  }
  if (!floats) {
    double p = attrs.get_double("p");
    if (!(p >= 0.0 && p <= 1.0)) throw ShapeError(fmt::format("{}: p must be in [0, 1], got {}", op, p));
    return {shape, DType::boolean};
  }
  DType dtype = attrs.get_dtype("dtype");
  if (!is_float(dtype)) {
    throw ShapeError(fmt::format("{}: needs a floating-point dtype, got {}", op, dtype_name(dtype)));
  }
  return {shape, dtype};
}

// The key's integer value, read as its dtype stores it.
PhiloxKey key_of(const Tensor& key) {
  if (key.dtype() == DType::i64) return philox_key(key.data<int64_t>()[0]);
  return philox_key(static_cast<int64_t>(key.value(0)));
}

template <class Draw>
Tensor draw(const Node& node, const Tensor& key, Draw value_of) {
  Tensor out(node.dtype, node.shape);
  PhiloxKey k = key_of(key);
  for (int64_t i = 0; i < out.numel(); ++i) out.set_value(i, value_of(philox_block(i, k)));
  return out;
}

const Primitive kRandom[] = {
    {.id = PrimId::random_normal,
     .name = "random_normal",
     .arity = 1,
     .kind = PrimKind::random,
     .infer = [](Types args, const Attrs& attrs) { return infer_random(args, attrs, "random_normal", true); },
     .batch = batch_by_unrolling,
     .kernel = [](const Node& n,
                  Args x) { return draw(n, *x[0], [&](const PhiloxCounter& r) { return normal_from(n.dtype, r); }); }},
    {.id = PrimId::random_uniform,
     .name = "random_uniform",
     .arity = 1,
     .kind = PrimKind::random,
     .infer = [](Types args, const Attrs& attrs) { return infer_random(args, attrs, "random_uniform", true); },
     .batch = batch_by_unrolling,
     .kernel = [](const Node& n,
                  Args x) { return draw(n, *x[0], [&](const PhiloxCounter& r) { return uniform_in(n.dtype, r); }); }},
    {.id = PrimId::random_bernoulli,
     .name = "random_bernoulli",
     .arity = 1,
     .kind = PrimKind::random,
     .infer = [](Types args, const Attrs& attrs) { return infer_random(args, attrs, "random_bernoulli", false); },
     .batch = batch_by_unrolling,
     .kernel =
         [](const Node& n, Args x) {
           double p = n.attrs.get_double("p");
           return draw(n, *x[0], [p](const PhiloxCounter& r) { return bernoulli_from(r, p) ? 1.0 : 0.0; });
         }},
};

}  // namespace

std::span<const Primitive> random_primitives() { return kRandom; }

}  // namespace sx::graph::prims
