// Random numbers from an explicit key (an integer scalar) with Philox
// 4x32-10: random_normal, random_uniform (in [0, 1)) and random_bernoulli
// (true with probability p). Element i uses the Philox block at counter
// {lo32(i), hi32(i), 0, 0} and key {lo32(key), hi32(key)}, so its value
// depends only on the key and i, on every device. A key carrying a batch
// axis is batched by drawing each row with its own key.
#include <cmath>
#include <numbers>

#include "graph/philox.h"
#include "graph/prims/common.h"
#include "graph/prims/families.h"

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

PhiloxKey key_of(const Tensor& key) {
  uint64_t bits = 0;
  if (key.dtype() == DType::i64) bits = static_cast<uint64_t>(key.data<int64_t>()[0]);
  else bits = static_cast<uint64_t>(static_cast<int64_t>(key.value(0)));
  return {static_cast<uint32_t>(bits), static_cast<uint32_t>(bits >> 32)};
}

PhiloxCounter block(int64_t i, PhiloxKey key) {
  auto position = static_cast<uint64_t>(i);
  return philox4x32_10({static_cast<uint32_t>(position), static_cast<uint32_t>(position >> 32), 0, 0}, key);
}

// A double in [0, 1) from the top 53 bits of two words.
double unit_double(uint32_t hi, uint32_t lo) {
  uint64_t bits = (static_cast<uint64_t>(hi) << 32 | lo) >> 11;
  return static_cast<double>(bits) * 0x1p-53;
}

// Uniform in [0, 1) with as many random bits as the dtype holds exactly.
double uniform_in(DType dtype, const PhiloxCounter& r) {
  switch (dtype) {
    case DType::bf16: return static_cast<double>(r[0] >> 24) * 0x1p-8;
    case DType::f32: return static_cast<double>(r[0] >> 8) * 0x1p-24;
    default: return unit_double(r[0], r[1]);
  }
}

// Box-Muller in f64, rounded to the node's dtype.
double normal_from(const PhiloxCounter& r) {
  double u1 = 1.0 - unit_double(r[0], r[1]);  // (0, 1]
  double u2 = unit_double(r[2], r[3]);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

template <class Draw>
Tensor draw(const Node& node, const Tensor& key, Draw value_of) {
  Tensor out(node.dtype, node.shape);
  PhiloxKey k = key_of(key);
  for (int64_t i = 0; i < out.numel(); ++i) out.set_value(i, value_of(block(i, k)));
  return out;
}

const Primitive kRandom[] = {
    {.id = PrimId::random_normal,
     .name = "random_normal",
     .arity = 1,
     .infer = [](Types args, const Attrs& attrs) { return infer_random(args, attrs, "random_normal", true); },
     .batch = batch_by_unrolling,
     .kernel = [](const Node& n,
                  Args x) { return draw(n, *x[0], [](const PhiloxCounter& r) { return normal_from(r); }); }},
    {.id = PrimId::random_uniform,
     .name = "random_uniform",
     .arity = 1,
     .infer = [](Types args, const Attrs& attrs) { return infer_random(args, attrs, "random_uniform", true); },
     .batch = batch_by_unrolling,
     .kernel = [](const Node& n,
                  Args x) { return draw(n, *x[0], [&](const PhiloxCounter& r) { return uniform_in(n.dtype, r); }); }},
    {.id = PrimId::random_bernoulli,
     .name = "random_bernoulli",
     .arity = 1,
     .infer = [](Types args, const Attrs& attrs) { return infer_random(args, attrs, "random_bernoulli", false); },
     .batch = batch_by_unrolling,
     .kernel =
         [](const Node& n, Args x) {
           double p = n.attrs.get_double("p");
           return draw(n, *x[0], [p](const PhiloxCounter& r) { return unit_double(r[0], r[1]) < p ? 1.0 : 0.0; });
         }},
};

}  // namespace

std::span<const Primitive> random_primitives() { return kRandom; }

}  // namespace sx::graph::prims
