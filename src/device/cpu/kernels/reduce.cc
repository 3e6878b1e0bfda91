// Reductions: sum, reduce_max, reduce_min, argmax, argmin. The shape is
// folded to [outer, reduced, inner] when the reduced axes are adjacent (the
// usual case); other axis sets go through offset tables. Every output
// element is reduced by one thread, over the reduced positions in row-major
// order: the reference kernel's order (except float sums of contiguous rows,
// see row_sum), so the bits do not depend on the thread count or on the
// other rows.
#include <cmath>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

#include "device/cpu/fusion/fusion_tiles.h"
#include "device/cpu/kernels.h"
#include "device/cpu/kernels/row_reduce.h"
#include "device/cpu/products/gemm.h"
#include "graph/prims/common.h"

namespace sx::device::cpu {
namespace {

using graph::DType;
using graph::Shape;

// The layout of a reduction: out[o] reduces x[base(o) + offset(r)] for r in
// [0, reduced). Adjacent: base(o) = (o / inner) * reduced * inner + o % inner
// and offset(r) = r * inner. Otherwise the tables give them.
struct Layout {
  int64_t outer = 1, reduced = 1, inner = 1;
  bool adjacent = true;
  std::vector<int64_t> bases, offsets;
};

Layout layout_of(const Shape& shape, const std::vector<int64_t>& axes) {
  std::vector<bool> is_reduced(shape.size(), false);
  for (int64_t a : axes) is_reduced[static_cast<size_t>(a)] = true;
  // Fold into groups of adjacent axes with the same role, skipping size 1.
  std::vector<std::pair<bool, int64_t>> groups;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    if (!groups.empty() && groups.back().first == is_reduced[d]) groups.back().second *= shape[d];
    else groups.push_back({is_reduced[d], shape[d]});
  }
  Layout layout;
  int reduced_groups = 0;
  for (auto& g : groups) reduced_groups += g.first ? 1 : 0;
  if (reduced_groups == 0) {
    // Only axes of size 1 are reduced: each output reduces one element, which the
    // loop over whole blocks of columns takes many at a time.
    for (auto& group : groups) layout.inner *= group.second;
    return layout;
  }
  if (reduced_groups == 1) {
    bool past = false;
    for (auto& [reduced, size] : groups) {
      if (reduced) {
        layout.reduced = size;
        past = true;
      } else if (past) {
        layout.inner *= size;
      } else {
        layout.outer *= size;
      }
    }
    return layout;
  }
  layout.adjacent = false;
  Shape kept_shape, reduced_shape;
  std::vector<int64_t> strides = graph::row_major_strides(shape), kept_strides, reduced_strides;
  for (size_t d = 0; d < shape.size(); ++d) {
    (is_reduced[d] ? reduced_shape : kept_shape).push_back(shape[d]);
    (is_reduced[d] ? reduced_strides : kept_strides).push_back(strides[d]);
  }
  auto offsets = [](const Shape& s, const std::vector<int64_t>& st) {
    std::vector<int64_t> result;
    graph::prims::IndexWalk walk(s);
    for (int64_t i = 0; i < graph::numel(s); ++i, walk.next()) result.push_back(graph::prims::ravel(walk.index(), st));
    return result;
  };
  layout.bases = offsets(kept_shape, kept_strides);
  layout.offsets = offsets(reduced_shape, reduced_strides);
  layout.outer = static_cast<int64_t>(layout.bases.size());
  layout.reduced = static_cast<int64_t>(layout.offsets.size());
  return layout;
}

// The most columns a thread sums side by side: a row's run of them, in L1.
constexpr int64_t kBlock = 2048;

// f32 columns summed a row at a time by the instruction set's add (the same adds in
// the same order as the loop below, so the same bits); null for the other dtypes.
template <class S>
TileFn column_add(Isa isa) {
  if constexpr (std::is_same_v<S, float>)
    return tile_kernels_for(isa).by_primitive[graph::index_of(graph::PrimId::add)];
  return nullptr;
}

template <class S, class C>
Step make_reduction(ReduceKind kind, Layout layout, int cores, Isa isa) {
  int64_t outputs = layout.outer * layout.inner;
  int threads = threads_for(outputs * layout.reduced, cores);
  return [kind, layout = std::move(layout), outputs, threads, add = column_add<S>(isa)](const uint8_t* const* in,
                                                                                        uint8_t* out) {
    const S* x = reinterpret_cast<const S*>(in[0]);
    bool want_max = kind == ReduceKind::max || kind == ReduceKind::argmax;
    bool want_index = kind == ReduceKind::argmax || kind == ReduceKind::argmin;
    auto write = [&](int64_t o, const Extremum<C>& e) {
      if (want_index) reinterpret_cast<int64_t*>(out)[o] = e.where;
      else reinterpret_cast<S*>(out)[o] = S(e.best);
    };
    const int64_t R = layout.reduced, I = layout.inner;
    if (!layout.adjacent) {
      parallel_for(outputs, threads, [&](int64_t begin, int64_t end) {
        for (int64_t o = begin; o < end; ++o) {
          const S* base = x + layout.bases[static_cast<size_t>(o)];
          if (kind == ReduceKind::sum) {
            C acc(0);
            for (int64_t r = 0; r < R; ++r)
              acc = graph::prims::wrap_add(acc, static_cast<C>(base[layout.offsets[static_cast<size_t>(r)]]));
            reinterpret_cast<S*>(out)[o] = S(acc);
          } else {
            Extremum<C> e{initial<C>(kind)};
            for (int64_t r = 0; r < R; ++r)
              update(e, static_cast<C>(base[layout.offsets[static_cast<size_t>(r)]]), r, want_max);
            write(o, e);
          }
        }
      });
    } else if (I == 1) {
      // Contiguous rows.
      parallel_for(outputs, threads, [&](int64_t begin, int64_t end) {
        for (int64_t o = begin; o < end; ++o) {
          const S* row = x + o * R;
          if (!want_index) {
            reinterpret_cast<S*>(out)[o] = S(reduce_row<S, C>(kind, row, R));
          } else {
            Extremum<C> e{initial<C>(kind)};
            for (int64_t r = 0; r < R; ++r) update(e, static_cast<C>(row[r]), r, want_max);
            write(o, e);
          }
        }
      });
    } else {
      // [outer, R, inner]: each thread takes whole blocks of inner columns and
      // walks r outermost, each column accumulating in r order. A block is as many
      // columns as the threads leave each, up to kBlock: the rows are then read along
      // memory in long runs (a bias's gradient, [1024 rows, 1024 columns]: blocks of
      // 256 read 1 KiB every 4 KiB, 0.4 ms; the whole row, 0.1 ms).
      // Threads share a row's columns where there are fewer rows of blocks than threads.
      const int64_t column_parts = layout.outer >= threads ? 1 : threads;
      const int64_t block = std::min(kBlock, ((I + column_parts - 1) / column_parts + 15) / 16 * 16);
      int64_t blocks_per_outer = (I + block - 1) / block;
      parallel_for(layout.outer * blocks_per_outer, threads, [&](int64_t begin, int64_t end) {
        C acc[kBlock];  // on the stack: a run allocates nothing
        Extremum<C> ext[kBlock];
        for (int64_t blk = begin; blk < end; ++blk) {
          int64_t o = blk / blocks_per_outer, i0 = (blk % blocks_per_outer) * block, w = std::min(block, I - i0);
          const S* base = x + o * R * I + i0;
          if constexpr (std::is_same_v<S, float> && std::is_same_v<C, float>) {
            if (kind == ReduceKind::sum && add != nullptr) {
              std::fill_n(acc, w, 0.0f);
              for (int64_t r = 0; r < R; ++r) {
                const float* operands[2] = {acc, base + r * I};
                add(operands, acc, w, nullptr);
              }
              std::copy_n(acc, w, reinterpret_cast<float*>(out) + o * I + i0);
              continue;
            }
          }
          if (kind == ReduceKind::sum) {
            std::fill_n(acc, w, C(0));
            for (int64_t r = 0; r < R; ++r) {
              const S* row = base + r * I;
              for (int64_t i = 0; i < w; ++i) acc[i] = graph::prims::wrap_add(acc[i], static_cast<C>(row[i]));
            }
            for (int64_t i = 0; i < w; ++i) reinterpret_cast<S*>(out)[o * I + i0 + i] = S(acc[i]);
          } else {
            std::fill_n(ext, w, Extremum<C>{initial<C>(kind)});
            for (int64_t r = 0; r < R; ++r) {
              const S* row = base + r * I;
              for (int64_t i = 0; i < w; ++i) update(ext[i], static_cast<C>(row[i]), r, want_max);
            }
            for (int64_t i = 0; i < w; ++i) write(o * I + i0 + i, ext[i]);
          }
        }
      });
    }
  };
}

template <ReduceKind K>
Step reduce_step(const StepContext& c, const graph::Node& node) {
  const graph::Node& x = c.graph.node(node.inputs[0]);
  Layout layout = layout_of(x.shape, node.attrs.get_ints("axes"));
  if (graph::numel(x.shape) == 0) {
    // Nothing to read: the outputs keep their initial values, as in the
    // reference (0 for sum and the indices, the identity for max and min).
    layout = Layout{};
    layout.outer = graph::numel(node.shape);
    layout.reduced = 0;
  }
  return graph::visit_dtype(x.dtype, [&](auto types) -> Step {
    using S = typename decltype(types)::storage;
    using C = typename decltype(types)::compute;
    return make_reduction<S, C>(K, std::move(layout), c.cores, c.kernels.isa);
  });
}

}  // namespace

void add_reduce_steps(StepTable& table) {
  table.set(graph::PrimId::sum, reduce_step<ReduceKind::sum>);
  table.set(graph::PrimId::reduce_max, reduce_step<ReduceKind::max>);
  table.set(graph::PrimId::reduce_min, reduce_step<ReduceKind::min>);
  table.set(graph::PrimId::argmax, reduce_step<ReduceKind::argmax>);
  table.set(graph::PrimId::argmin, reduce_step<ReduceKind::argmin>);
}

}  // namespace sx::device::cpu
