// Elementwise kernels: the unary and binary primitives, where and cast, as
// parallel loops over the output. Each element is computed exactly as the
// reference kernel computes it (the same formula from graph/prims/scalar.h,
// the same compute type), so the results agree bit for bit; the speed comes
// from the threads, from loops the compiler can vectorize, and for exp, log,
// tanh, erf, logistic, sin and cos of f32 and bf16 from the vector kernels of
// the processor's instruction set (vector_math.h), which give the same bits.
#include <cstring>
#include <type_traits>

#include "device/cpu/fusion/fusion_tiles.h"
#include "device/cpu/kernels.h"
#include "device/cpu/kernels/operand_walk.h"
#include "device/cpu/kernels/vector_math.h"
#include "device/cpu/products/gemm.h"
#include "graph/prims/common.h"

namespace sx::device::cpu {
namespace {

using graph::DType;
using graph::PrimId;
using graph::prims::convert;
namespace scalar = graph::prims::scalar;

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

Step cast(DType from, DType to, int64_t n, int threads, const TileKernels& tiles) {
  // Between f32 and bf16 (a bf16 product's operands and result), the instruction set's
  // vector loops: the same conversions, several times faster than the generic one.
  if (from == DType::f32 && to == DType::bf16) {
    return [n, threads, narrow = tiles.narrow_bf16](const uint8_t* const* in, uint8_t* out) {
      parallel_for(n, threads, [&](int64_t begin, int64_t end) {
        narrow(reinterpret_cast<const float*>(in[0]) + begin, reinterpret_cast<graph::Bf16*>(out) + begin, end - begin);
      });
    };
  }
  if (from == DType::bf16 && to == DType::f32) {
    return [n, threads, widen = tiles.widen_bf16](const uint8_t* const* in, uint8_t* out) {
      parallel_for(n, threads, [&](int64_t begin, int64_t end) {
        widen(reinterpret_cast<const graph::Bf16*>(in[0]) + begin, reinterpret_cast<float*>(out) + begin, end - begin);
      });
    };
  }
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

// binary() over a walk (operand_walk.h): some operand is an absorbed broadcast's input.
// The last axis's loop is specialized for the strides that occur (1 and 0) so that it
// vectorizes; each element is still f of the same two values.
template <bool Bool, class Fn>
Step binary_walked(DType dtype, OperandWalk walk, int64_t n, int threads, Fn f) {
  return graph::visit_dtype(dtype, [&](auto types) -> Step {
    using S = typename decltype(types)::storage;
    using C = typename decltype(types)::compute;
    using O = std::conditional_t<Bool, bool, S>;
    return [walk = std::move(walk), n, threads, f](const uint8_t* const* in, uint8_t* out) {
      const int64_t sa = walk.strides[0].back(), sb = walk.strides[1].back();
      auto store = [](O& to, auto r) {
        if constexpr (Bool) to = static_cast<bool>(r);
        else to = S(static_cast<C>(r));
      };
      parallel_for(n, threads, [&](int64_t begin, int64_t end) {
        walk_segments(walk, begin, end, [&](int64_t at, const int64_t* offsets, int64_t length) {
          const S* a = reinterpret_cast<const S*>(in[0]) + offsets[0];
          const S* b = reinterpret_cast<const S*>(in[1]) + offsets[1];
          O* o = reinterpret_cast<O*>(out) + at;
          if (sa == 1 && sb == 1) {
            for (int64_t j = 0; j < length; ++j) store(o[j], f(static_cast<C>(a[j]), static_cast<C>(b[j])));
          } else if (sa == 1 && sb == 0) {
            const C y = static_cast<C>(b[0]);
            for (int64_t j = 0; j < length; ++j) store(o[j], f(static_cast<C>(a[j]), y));
          } else if (sa == 0 && sb == 1) {
            const C x = static_cast<C>(a[0]);
            for (int64_t j = 0; j < length; ++j) store(o[j], f(x, static_cast<C>(b[j])));
          } else {
            for (int64_t j = 0; j < length; ++j) store(o[j], f(static_cast<C>(a[j * sa]), static_cast<C>(b[j * sb])));
          }
        });
      });
    };
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

template <class T>
Step where_walked(OperandWalk walk, int64_t n, int threads) {
  return [walk = std::move(walk), n, threads](const uint8_t* const* in, uint8_t* out) {
    const int64_t sc = walk.strides[0].back(), sa = walk.strides[1].back(), sb = walk.strides[2].back();
    parallel_for(n, threads, [&](int64_t begin, int64_t end) {
      walk_segments(walk, begin, end, [&](int64_t at, const int64_t* offsets, int64_t length) {
        const bool* c = reinterpret_cast<const bool*>(in[0]) + offsets[0];
        const T* a = reinterpret_cast<const T*>(in[1]) + offsets[1];
        const T* b = reinterpret_cast<const T*>(in[2]) + offsets[2];
        T* o = reinterpret_cast<T*>(out) + at;
        for (int64_t j = 0; j < length; ++j) o[j] = c[j * sc] ? a[j * sa] : b[j * sb];
      });
    });
  };
}

// where selects bytes: it copies either operand's element unchanged.
Step where(const StepContext& c, const graph::Node& node) {
  int64_t n = graph::numel(node.shape);
  int threads = threads_for(n, c.cores);
  auto typed = [&]<class T>() {
    return c.absorbed ? where_walked<T>(operand_walk(c, node), n, threads) : where_typed<T>(n, threads);
  };
  switch (graph::dtype_size(node.dtype)) {
    case 1: return typed.operator()<uint8_t>();
    case 2: return typed.operator()<uint16_t>();
    case 4: return typed.operator()<uint32_t>();
    default: return typed.operator()<uint64_t>();
  }
}

// A transcendental primitive: f32 and bf16 (widened a block at a time) by the
// vector kernels when the instruction set has them; the rest as unary() does.
template <class F>
Step math(DType dtype, int64_t n, int threads, const MathKernels* kernels, MathFn fn) {
  if (kernels != nullptr && dtype == DType::f32) {
    return [n, threads, kernels, fn](const uint8_t* const* in, uint8_t* out) {
      const float* x = reinterpret_cast<const float*>(in[0]);
      float* o = reinterpret_cast<float*>(out);
      parallel_for(n, threads,
                   [&](int64_t begin, int64_t end) { apply_math<F>(*kernels, fn, x + begin, o + begin, end - begin); });
    };
  }
  if (kernels != nullptr && dtype == DType::bf16) {
    return [n, threads, kernels, fn](const uint8_t* const* in, uint8_t* out) {
      const graph::Bf16* x = reinterpret_cast<const graph::Bf16*>(in[0]);
      graph::Bf16* o = reinterpret_cast<graph::Bf16*>(out);
      parallel_for(n, threads, [&](int64_t begin, int64_t end) {
        constexpr int64_t kBlock = 256;
        float block[kBlock];
        for (int64_t start = begin; start < end; start += kBlock) {
          int64_t count = std::min(kBlock, end - start);
          for (int64_t i = 0; i < count; ++i) block[i] = static_cast<float>(x[start + i]);
          apply_math<F>(*kernels, fn, block, block, count);
          for (int64_t i = 0; i < count; ++i) o[start + i] = graph::Bf16(block[i]);
        }
      });
    };
  }
  return unary(dtype, n, threads, F{});
}

// The dtype of the node's first operand: what its elements are computed in.
DType operand_dtype(const StepContext& c, const graph::Node& node) { return c.graph.node(node.inputs[0]).dtype; }

// Threads for the node's elements, at the work its row's cost gives each.
int elementwise_threads(const StepContext& c, const graph::Node& node) {
  return threads_for(graph::numel(node.shape) * element_work(node.prim->cost), c.cores);
}

// The step of a primitive whose formula is F.
template <class F>
Step unary_step(const StepContext& c, const graph::Node& node) {
  return unary(operand_dtype(c, node), graph::numel(node.shape), elementwise_threads(c, node), F{});
}

template <class F, MathFn Fn>
Step math_step(const StepContext& c, const graph::Node& node) {
  return math<F>(operand_dtype(c, node), graph::numel(node.shape), elementwise_threads(c, node),
                 math_kernels_for(c.kernels.isa), Fn);
}

// `Bool` as binary()'s. Reads absorbed broadcasts through a walk, else contiguously.
template <bool Bool, class F>
Step binary_step(const StepContext& c, const graph::Node& node) {
  int64_t n = graph::numel(node.shape);
  int threads = elementwise_threads(c, node);
  if (c.absorbed) return binary_walked<Bool>(operand_dtype(c, node), operand_walk(c, node), n, threads, F{});
  return binary<Bool>(operand_dtype(c, node), n, threads, F{});
}

}  // namespace

const MathKernels* math_kernels_for(Isa isa) {
  switch (isa) {
    case Isa::avx2: return &avx2_math_kernels();
    case Isa::avx512:
    case Isa::avx512bf16:
    case Isa::amx: return &avx512_math_kernels();
    case Isa::scalar: break;
  }
  return nullptr;
}

void add_elementwise_steps(StepTable& table) {
  // Unary.
  table.set(PrimId::neg, unary_step<scalar::Neg>);
  table.set(PrimId::abs, unary_step<scalar::Abs>);
  table.set(PrimId::sign, unary_step<scalar::Sign>);
  table.set(PrimId::logical_not, unary_step<scalar::LogicalNot>);
  table.set(PrimId::exp, math_step<scalar::Exp, MathFn::exp>);
  table.set(PrimId::log, math_step<scalar::Log, MathFn::log>);
  table.set(PrimId::sqrt, unary_step<scalar::Sqrt>);
  table.set(PrimId::rsqrt, unary_step<scalar::Rsqrt>);
  table.set(PrimId::sin, math_step<scalar::Sin, MathFn::sin>);
  table.set(PrimId::cos, math_step<scalar::Cos, MathFn::cos>);
  table.set(PrimId::tanh, math_step<scalar::Tanh, MathFn::tanh>);
  table.set(PrimId::erf, math_step<scalar::Erf, MathFn::erf>);
  table.set(PrimId::logistic, math_step<scalar::Logistic, MathFn::logistic>);
  // Binary arithmetic and logic.
  table.set(PrimId::add, binary_step<false, scalar::Add>, absorbs_any_broadcast);
  table.set(PrimId::sub, binary_step<false, scalar::Sub>, absorbs_any_broadcast);
  table.set(PrimId::mul, binary_step<false, scalar::Mul>, absorbs_any_broadcast);
  table.set(PrimId::div, binary_step<false, scalar::Div>, absorbs_any_broadcast);
  table.set(PrimId::pow, binary_step<false, scalar::Pow>, absorbs_any_broadcast);
  table.set(PrimId::max, binary_step<false, scalar::Max>, absorbs_any_broadcast);
  table.set(PrimId::min, binary_step<false, scalar::Min>, absorbs_any_broadcast);
  table.set(PrimId::logical_and, binary_step<false, scalar::LogicalAnd>, absorbs_any_broadcast);
  table.set(PrimId::logical_or, binary_step<false, scalar::LogicalOr>, absorbs_any_broadcast);
  // Comparisons.
  table.set(PrimId::eq, binary_step<true, scalar::Eq>, absorbs_any_broadcast);
  table.set(PrimId::ne, binary_step<true, scalar::Ne>, absorbs_any_broadcast);
  table.set(PrimId::lt, binary_step<true, scalar::Lt>, absorbs_any_broadcast);
  table.set(PrimId::le, binary_step<true, scalar::Le>, absorbs_any_broadcast);
  table.set(PrimId::gt, binary_step<true, scalar::Gt>, absorbs_any_broadcast);
  table.set(PrimId::ge, binary_step<true, scalar::Ge>, absorbs_any_broadcast);
  // where selects bytes; cast converts as graph::prims::convert does.
  table.set(PrimId::where, where, absorbs_any_broadcast);
  table.set(PrimId::cast, [](const StepContext& c, const graph::Node& node) {
    int64_t n = graph::numel(node.shape);
    return cast(operand_dtype(c, node), node.dtype, n, threads_for(n, c.cores), tile_kernels_for(c.kernels.isa));
  });
}

}  // namespace sx::device::cpu
