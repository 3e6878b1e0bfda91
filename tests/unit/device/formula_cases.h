// The cases of the elementwise formulas' bit-for-bit tests: each primitive of the unary
// and binary families on the values of each dtype where two spellings of a formula part
// ways, and a comparison of bits that only lets a NaN's payload differ. formula_test.cc
// runs them on the cpu device, cuda_test.cc through the cuda device's element
// functions (and its kernels where a GPU answers).
#pragma once

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "graph/builder.h"
#include "graph/errors.h"
#include "graph/primitive.h"
#include "graph/prims/families.h"
#include "graph/tensor.h"

namespace sx::device::testing {

using graph::Builder;
using graph::DType;
using graph::Graph;
using graph::NodeId;
using graph::Tensor;

// The values of a compute type C that formulas are most likely to disagree on.
template <class C>
std::vector<C> special_values() {
  using L = std::numeric_limits<C>;
  if constexpr (std::is_same_v<C, bool>) {
    return {false, true};
  } else if constexpr (std::is_floating_point_v<C>) {
    std::vector<C> v{C(0),
                     -C(0),
                     C(1),
                     C(-1),
                     C(0.5),
                     C(-0.5),
                     C(2),
                     C(-2),
                     C(3),
                     C(0.1),
                     C(-0.1),
                     C(1e-3),
                     C(1e-8),
                     C(10),
                     C(-10),
                     C(20),
                     C(-20),
                     C(88),
                     C(-88),
                     C(89),
                     C(-104),
                     C(1e8),
                     C(-1.5),
                     C(2.5),
                     C(255.5),
                     C(65535.5),
                     C(2147483648),
                     C(-2147483649),
                     C(3e9),
                     C(9.3e18),
                     C(-9.3e18),
                     C(0.7853981633974483),
                     L::max(),
                     -L::max(),
                     L::min(),
                     -L::min(),
                     L::denorm_min(),
                     -L::denorm_min(),
                     L::infinity(),
                     -L::infinity(),
                     L::quiet_NaN(),
                     -L::quiet_NaN()};
    if constexpr (sizeof(C) == 8) {
      for (C x : {C(710), C(-745), C(1e300), C(-1e300), C(1e-310)}) v.push_back(x);
    }
    return v;
  } else {
    std::vector<C> v{C(0), C(1), C(2), C(3), C(7), C(100), C(127), C(128), C(255), C(256), C(65535)};
    if constexpr (std::is_signed_v<C>) {
      for (C x : {C(-1), C(-2), C(-7), C(-100), C(-128)}) v.push_back(x);
    }
    for (C x : {L::min(), L::max(), C(L::min() + 1), C(L::max() - 1)}) v.push_back(x);
    return v;
  }
}

// The special values of `dtype` (stored as the dtype stores them). `repeat`: each value
// `repeat` times in a row; `cycle`: the whole list that many times, so that two tensors
// made with (n, 1) and (1, n) hold every pair.
inline Tensor special_tensor(DType dtype, int64_t repeat, int64_t cycle) {
  return graph::visit_dtype(dtype, [&](auto types) {
    using S = typename decltype(types)::storage;
    using C = typename decltype(types)::compute;
    std::vector<C> values = special_values<C>();
    auto n = static_cast<int64_t>(values.size());
    Tensor t(dtype, {n * repeat * cycle});
    S* out = t.data<S>();
    for (int64_t c = 0; c < cycle; ++c) {
      for (int64_t i = 0; i < n; ++i) {
        for (int64_t r = 0; r < repeat; ++r) out[(c * n + i) * repeat + r] = S(values[static_cast<size_t>(i)]);
      }
    }
    return t;
  });
}

inline int64_t special_count(DType dtype) { return special_tensor(dtype, 1, 1).numel(); }

// Empty when every element has the same bits, or both are NaN; else the first that
// differs.
inline std::string compare_bits(const Tensor& actual, const Tensor& expected) {
  if (actual.dtype() != expected.dtype() || actual.shape() != expected.shape()) return "types differ";
  size_t size = graph::dtype_size(actual.dtype());
  for (int64_t i = 0; i < actual.numel(); ++i) {
    const uint8_t* a = actual.bytes().data() + static_cast<size_t>(i) * size;
    const uint8_t* e = expected.bytes().data() + static_cast<size_t>(i) * size;
    if (std::memcmp(a, e, size) == 0 || (std::isnan(actual.value(i)) && std::isnan(expected.value(i)))) continue;
    auto hex = [size](const uint8_t* bytes) {
      std::string out;
      for (size_t k = size; k-- > 0;) out += fmt::format("{:02x}", bytes[k]);
      return out;
    };
    return fmt::format("element {}: got {} ({}), want {} ({})", i, actual.value(i), hex(a), expected.value(i), hex(e));
  }
  return "";
}

struct FormulaCase {
  std::string label;
  Graph graph;
  std::vector<Tensor> inputs;
};

// The case of `op` on inputs of `dtype`, or nullopt when the primitive does not take
// that dtype.
inline std::optional<FormulaCase> make_case(const graph::Primitive& prim, DType dtype, DType cast_to) {
  std::string_view op = prim.name;
  FormulaCase c{.label = fmt::format("{} {}", op, graph::dtype_name(dtype)), .graph = {}, .inputs = {}};
  int64_t n = special_count(dtype);
  Builder b(c.graph);
  try {
    if (op == "where") {
      Tensor cond(DType::boolean, {n * n});
      for (int64_t i = 0; i < n * n; ++i) cond.data<bool>()[i] = (i / 3) % 2 == 0;
      c.inputs = {cond, special_tensor(dtype, n, 1), special_tensor(dtype, 1, n)};
      NodeId x = b.input("c", {n * n}, DType::boolean);
      b.output("y", b.where(x, b.input("a", {n * n}, dtype), b.input("b", {n * n}, dtype)));
    } else if (op == "cast") {
      c.label += fmt::format(" to {}", graph::dtype_name(cast_to));
      c.inputs = {special_tensor(dtype, 1, 1)};
      b.output("y", b.cast(b.input("x", {n}, dtype), cast_to));
    } else if (prim.arity == 1) {
      c.inputs = {special_tensor(dtype, 1, 1)};
      b.output("y", b.op(op, {b.input("x", {n}, dtype)}));
    } else {
      c.inputs = {special_tensor(dtype, n, 1), special_tensor(dtype, 1, n)};
      b.output("y", b.op(op, {b.input("a", {n * n}, dtype), b.input("b", {n * n}, dtype)}));
    }
  } catch (const graph::ShapeError&) {
    return std::nullopt;
  }
  return c;
}

inline std::vector<const graph::Primitive*> elementwise_primitives() {
  std::vector<const graph::Primitive*> out;
  for (const graph::Primitive& p : graph::prims::unary_primitives()) out.push_back(&p);
  for (const graph::Primitive& p : graph::prims::binary_primitives()) out.push_back(&p);
  return out;
}

}  // namespace sx::device::testing
