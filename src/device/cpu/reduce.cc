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

#include "device/cpu/kernels.h"
#include "graph/prims/common.h"

namespace sx::device::cpu {
namespace {

using graph::DType;
using graph::Shape;

enum class Kind { sum, max, min, argmax, argmin };

// The running value of one output element.
template <class C>
struct Extremum {
  C best;
  int64_t where = 0;
  bool seen = false;
};

template <class C>
C initial(Kind kind) {
  bool want_max = kind == Kind::max || kind == Kind::argmax;
  if constexpr (std::numeric_limits<C>::has_infinity) {
    return want_max ? -std::numeric_limits<C>::infinity() : std::numeric_limits<C>::infinity();
  } else {
    return want_max ? std::numeric_limits<C>::lowest() : std::numeric_limits<C>::max();
  }
}

// The reference's update: NaN wins over every number, ties keep the first.
template <class C>
void update(Extremum<C>& e, C v, int64_t position, bool want_max) {
  bool better = want_max ? v > e.best : v < e.best;
  if constexpr (std::is_floating_point_v<C>) better = better || (std::isnan(v) && !std::isnan(e.best));
  if (!e.seen || better) {
    e.best = v;
    e.where = position;
    e.seen = true;
  }
}

// The sum of a contiguous row. Floats: element r goes to lane r % 16, the
// lanes are added in a fixed tree, then the tail in order: one order for
// every row length, thread count and batch, which the compiler vectorizes
// (a sequential sum waits on each add's latency). It differs from the
// reference's sequential order by rounding only; integers wrap, so any order
// gives the reference's bits, and they keep its loop.
template <class S, class C>
C row_sum(const S* row, int64_t n) {
  if constexpr (std::is_floating_point_v<C>) {
    constexpr int64_t kLanes = 16;
    if (n >= 2 * kLanes) {
      C lanes[kLanes] = {};
      int64_t full = n - n % kLanes;
      for (int64_t r = 0; r < full; r += kLanes) {
        for (int64_t l = 0; l < kLanes; ++l) lanes[l] += static_cast<C>(row[r + l]);
      }
      for (int64_t width = kLanes / 2; width > 0; width /= 2) {
        for (int64_t l = 0; l < width; ++l) lanes[l] += lanes[l + width];
      }
      C acc = lanes[0];
      for (int64_t r = full; r < n; ++r) acc += static_cast<C>(row[r]);
      return acc;
    }
  }
  C acc(0);
  for (int64_t r = 0; r < n; ++r) acc = graph::prims::wrap_add(acc, static_cast<C>(row[r]));
  return acc;
}

// The max (WantMax) or min of a contiguous float row, by 16 lanes the compiler
// vectorizes, where it is the reference's: when the row has no NaN and the result is
// not a zero. Then every element equal to it has its bits, whichever the reference's
// order finds first; a NaN's payload or a zero's sign depends on that order, and
// those rows (false) take the reference's loop.
template <bool WantMax, class S, class C>
bool row_extreme(const S* row, int64_t n, C& result) {
  constexpr int64_t kLanes = 16;
  if constexpr (!std::is_floating_point_v<C>) {
    return false;
  } else {
    if (n < kLanes) return false;
    C lanes[kLanes];
    bool unordered[kLanes];
    for (int64_t l = 0; l < kLanes; ++l) {
      lanes[l] = static_cast<C>(row[l]);
      unordered[l] = lanes[l] != lanes[l];
    }
    int64_t full = n - n % kLanes;
    for (int64_t r = kLanes; r < full; r += kLanes) {
      for (int64_t l = 0; l < kLanes; ++l) {
        C v = static_cast<C>(row[r + l]);
        lanes[l] = (WantMax ? v > lanes[l] : v < lanes[l]) ? v : lanes[l];
        unordered[l] = unordered[l] || v != v;
      }
    }
    C best = lanes[0];
    bool nan = false;
    for (int64_t l = 0; l < kLanes; ++l) {
      best = (WantMax ? lanes[l] > best : lanes[l] < best) ? lanes[l] : best;
      nan = nan || unordered[l];
    }
    for (int64_t r = full; r < n; ++r) {
      C v = static_cast<C>(row[r]);
      best = (WantMax ? v > best : v < best) ? v : best;
      nan = nan || v != v;
    }
    if (nan || best == C(0)) return false;
    result = best;
    return true;
  }
}

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

template <class S, class C>
Step make_reduction(Kind kind, Layout layout, int cores) {
  int64_t outputs = layout.outer * layout.inner;
  int threads = threads_for(outputs * layout.reduced, cores);
  return [kind, layout = std::move(layout), outputs, threads](const uint8_t* const* in, uint8_t* out) {
    const S* x = reinterpret_cast<const S*>(in[0]);
    bool want_max = kind == Kind::max || kind == Kind::argmax;
    bool want_index = kind == Kind::argmax || kind == Kind::argmin;
    auto write = [&](int64_t o, const Extremum<C>& e) {
      if (want_index) reinterpret_cast<int64_t*>(out)[o] = e.where;
      else reinterpret_cast<S*>(out)[o] = S(e.best);
    };
    const int64_t R = layout.reduced, I = layout.inner;
    if (!layout.adjacent) {
      parallel_for(outputs, threads, [&](int64_t begin, int64_t end) {
        for (int64_t o = begin; o < end; ++o) {
          const S* base = x + layout.bases[static_cast<size_t>(o)];
          if (kind == Kind::sum) {
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
          if (kind == Kind::sum) {
            reinterpret_cast<S*>(out)[o] = S(row_sum<S, C>(row, R));
          } else if (C best; (kind == Kind::max && row_extreme<true, S, C>(row, R, best)) ||
                             (kind == Kind::min && row_extreme<false, S, C>(row, R, best))) {
            reinterpret_cast<S*>(out)[o] = S(best);
          } else {
            Extremum<C> e{initial<C>(kind)};
            for (int64_t r = 0; r < R; ++r) update(e, static_cast<C>(row[r]), r, want_max);
            write(o, e);
          }
        }
      });
    } else {
      // [outer, R, inner]: each thread takes whole blocks of inner columns and
      // walks r outermost, so the loads are contiguous and each column still
      // accumulates in r order.
      constexpr int64_t kBlock = 256;
      int64_t blocks_per_outer = (I + kBlock - 1) / kBlock;
      parallel_for(layout.outer * blocks_per_outer, threads, [&](int64_t begin, int64_t end) {
        C acc[kBlock];  // on the stack: a run allocates nothing
        Extremum<C> ext[kBlock];
        for (int64_t blk = begin; blk < end; ++blk) {
          int64_t o = blk / blocks_per_outer, i0 = (blk % blocks_per_outer) * kBlock, w = std::min(kBlock, I - i0);
          const S* base = x + o * R * I + i0;
          if (kind == Kind::sum) {
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

template <Kind K>
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
    return make_reduction<S, C>(K, std::move(layout), c.cores);
  });
}

}  // namespace

void add_reduce_steps(StepTable& table) {
  table.set(graph::PrimId::sum, reduce_step<Kind::sum>);
  table.set(graph::PrimId::reduce_max, reduce_step<Kind::max>);
  table.set(graph::PrimId::reduce_min, reduce_step<Kind::min>);
  table.set(graph::PrimId::argmax, reduce_step<Kind::argmax>);
  table.set(graph::PrimId::argmin, reduce_step<Kind::argmin>);
}

}  // namespace sx::device::cpu
