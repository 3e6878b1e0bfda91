// Elementwise kernels: the unary and binary primitives, where and cast, as
// parallel loops over the output. Each element is computed exactly as the
// reference kernel computes it (same function, same compute type), so the
// results agree bit for bit; the speed comes from the threads and from loops
// the compiler can vectorize.
#include <cmath>
#include <cstring>
#include <limits>
#include <string_view>
#include <type_traits>

#include "device/cpu/kernels.h"
#include "graph/prims/common.h"

namespace sx::device::cpu {
namespace {

using graph::DType;
using graph::prims::absolute;
using graph::prims::convert;
using graph::prims::divide;
using graph::prims::maximum;
using graph::prims::minimum;
using graph::prims::negate;
using graph::prims::sign_of;
using graph::prims::wrap_add;
using graph::prims::wrap_mul;
using graph::prims::wrap_sub;

// Work per element, in units of an add: transcendental functions cost more,
// so they go parallel at smaller sizes.
int64_t unary_cost(std::string_view op) {
  if (op == "neg" || op == "abs" || op == "sign" || op == "logical_not") return 1;
  return 16;
}

template <class Fn>
Step unary(DType dtype, int64_t n, int threads, Fn f) {
  return graph::visit_dtype(dtype, [&](auto types) -> Step {
    using S = typename decltype(types)::storage;
    using C = typename decltype(types)::compute;
    return [n, threads, f](const uint8_t* const* in, uint8_t* out) {
      const S* x = reinterpret_cast<const S*>(in[0]);
      S* o = reinterpret_cast<S*>(out);
      parallel_for(n, threads, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) o[i] = S(static_cast<C>(f(static_cast<C>(x[i]))));
      });
    };
  });
}

// `Bool`: the result is bool (a comparison); else it has the operands' dtype.
template <bool Bool, class Fn>
Step binary(DType dtype, int64_t n, int threads, Fn f) {
  return graph::visit_dtype(dtype, [&](auto types) -> Step {
    using S = typename decltype(types)::storage;
    using C = typename decltype(types)::compute;
    using O = std::conditional_t<Bool, bool, S>;
    return [n, threads, f](const uint8_t* const* in, uint8_t* out) {
      const S* a = reinterpret_cast<const S*>(in[0]);
      const S* b = reinterpret_cast<const S*>(in[1]);
      O* o = reinterpret_cast<O*>(out);
      parallel_for(n, threads, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          auto r = f(static_cast<C>(a[i]), static_cast<C>(b[i]));
          if constexpr (Bool) o[i] = static_cast<bool>(r);
          else o[i] = S(static_cast<C>(r));
        }
      });
    };
  });
}

Step cast(DType from, DType to, int64_t n, int threads) {
  return graph::visit_dtype(from, [&](auto in_types) -> Step {
    using SI = typename decltype(in_types)::storage;
    using CI = typename decltype(in_types)::compute;
    return graph::visit_dtype(to, [&](auto out_types) -> Step {
      using SO = typename decltype(out_types)::storage;
      using CO = typename decltype(out_types)::compute;
      return [n, threads](const uint8_t* const* in, uint8_t* out) {
        const SI* x = reinterpret_cast<const SI*>(in[0]);
        SO* o = reinterpret_cast<SO*>(out);
        parallel_for(n, threads, [&](int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i) o[i] = SO(convert<CO>(static_cast<CI>(x[i])));
        });
      };
    });
  });
}

template <class T>
Step where_typed(int64_t n, int threads) {
  return [n, threads](const uint8_t* const* in, uint8_t* out) {
    const bool* c = reinterpret_cast<const bool*>(in[0]);
    const T* a = reinterpret_cast<const T*>(in[1]);
    const T* b = reinterpret_cast<const T*>(in[2]);
    T* o = reinterpret_cast<T*>(out);
    parallel_for(n, threads, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) o[i] = c[i] ? a[i] : b[i];
    });
  };
}

// where selects bytes: it copies either operand's element unchanged.
Step where(DType dtype, int64_t n, int threads) {
  switch (graph::dtype_size(dtype)) {
    case 1: return where_typed<uint8_t>(n, threads);
    case 2: return where_typed<uint16_t>(n, threads);
    case 4: return where_typed<uint32_t>(n, threads);
    default: return where_typed<uint64_t>(n, threads);
  }
}

}  // namespace

std::optional<Step> elementwise_step(const graph::Graph& graph, const graph::Node& node, int cores) {
  std::string_view op = node.op_name();
  int64_t n = graph::numel(node.shape);
  DType in = node.inputs.empty() ? node.dtype : graph.node(node.inputs[0]).dtype;
  int cheap = threads_for(n, cores), costly = threads_for(n * unary_cost(op), cores);
  // Unary.
  if (op == "neg") return unary(in, n, cheap, [](auto v) { return negate(v); });
  if (op == "abs") return unary(in, n, cheap, [](auto v) { return absolute(v); });
  if (op == "sign") return unary(in, n, cheap, [](auto v) { return sign_of(v); });
  if (op == "logical_not") return unary(in, n, cheap, [](auto v) { return !v; });
  if (op == "exp") return unary(in, n, costly, [](auto v) { return std::exp(v); });
  if (op == "log") return unary(in, n, costly, [](auto v) { return std::log(v); });
  if (op == "sqrt") return unary(in, n, costly, [](auto v) { return std::sqrt(v); });
  if (op == "rsqrt") return unary(in, n, costly, [](auto v) { return decltype(v)(1) / std::sqrt(v); });
  if (op == "sin") return unary(in, n, costly, [](auto v) { return std::sin(v); });
  if (op == "cos") return unary(in, n, costly, [](auto v) { return std::cos(v); });
  if (op == "tanh") return unary(in, n, costly, [](auto v) { return std::tanh(v); });
  if (op == "erf") return unary(in, n, costly, [](auto v) { return std::erf(v); });
  if (op == "logistic") {
    return unary(in, n, costly, [](auto v) { return decltype(v)(1) / (decltype(v)(1) + std::exp(-v)); });
  }
  // Binary arithmetic.
  if (op == "add") return binary<false>(in, n, cheap, [](auto a, auto b) { return wrap_add(a, b); });
  if (op == "sub") return binary<false>(in, n, cheap, [](auto a, auto b) { return wrap_sub(a, b); });
  if (op == "mul") return binary<false>(in, n, cheap, [](auto a, auto b) { return wrap_mul(a, b); });
  if (op == "div") return binary<false>(in, n, cheap, [](auto a, auto b) { return divide(a, b); });
  if (op == "pow") return binary<false>(in, n, costly, [](auto a, auto b) { return std::pow(a, b); });
  if (op == "max") return binary<false>(in, n, cheap, [](auto a, auto b) { return maximum(a, b); });
  if (op == "min") return binary<false>(in, n, cheap, [](auto a, auto b) { return minimum(a, b); });
  if (op == "logical_and") return binary<false>(in, n, cheap, [](auto a, auto b) { return a && b; });
  if (op == "logical_or") return binary<false>(in, n, cheap, [](auto a, auto b) { return a || b; });
  // Comparisons.
  if (op == "eq") return binary<true>(in, n, cheap, [](auto a, auto b) { return a == b; });
  if (op == "ne") return binary<true>(in, n, cheap, [](auto a, auto b) { return a != b; });
  if (op == "lt") return binary<true>(in, n, cheap, [](auto a, auto b) { return a < b; });
  if (op == "le") return binary<true>(in, n, cheap, [](auto a, auto b) { return a <= b; });
  if (op == "gt") return binary<true>(in, n, cheap, [](auto a, auto b) { return a > b; });
  if (op == "ge") return binary<true>(in, n, cheap, [](auto a, auto b) { return a >= b; });
  if (op == "where") return where(node.dtype, n, cheap);
  if (op == "cast") return cast(in, node.dtype, n, cheap);
  return std::nullopt;
}

}  // namespace sx::device::cpu
