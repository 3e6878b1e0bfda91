// Data movement: transpose, broadcast, slice, concat, pad and gather, gather's
// gradient scatter_add, and one_hot. Each but scatter_add and one_hot is a strided
// copy (an output region walked in row-major order, a source reached through per-axis
// strides), so the bytes are the reference's. An index outside its axis stops the run
// as on the reference device (graph/index_error.h): the indices are checked before the
// step reads or writes by them.
#include <algorithm>
#include <cstring>
#include <optional>
#include <vector>

#include "device/cpu/kernels.h"
#include "device/cpu/kernels/view.h"
#include "device/cpu/products/gemm.h"
#include "graph/index_error.h"
#include "graph/prims/common.h"

namespace sx::device::cpu {
namespace {

using graph::DType;
using graph::Shape;

// Copies a region of `shape` elements: element at index i goes from
// src[src_base + sum i[d] * src_strides[d]] to dst[dst_base + sum i[d] *
// dst_strides[d]] (in elements of `size` bytes).
struct Copy {
  Shape shape;
  std::vector<int64_t> src_strides, dst_strides;
  int64_t src_base = 0, dst_base = 0;
};

// Drops size-1 axes and merges neighbours that are contiguous in both
// source and destination, so the innermost loop is as long as possible.
Copy simplify(Copy c) {
  Copy out;
  out.src_base = c.src_base;
  out.dst_base = c.dst_base;
  for (size_t d = 0; d < c.shape.size(); ++d) {
    if (c.shape[d] == 1) continue;
    if (!out.shape.empty() && out.src_strides.back() == c.src_strides[d] * c.shape[d] &&
        out.dst_strides.back() == c.dst_strides[d] * c.shape[d]) {
      out.shape.back() *= c.shape[d];
      out.src_strides.back() = c.src_strides[d];
      out.dst_strides.back() = c.dst_strides[d];
      continue;
    }
    out.shape.push_back(c.shape[d]);
    out.src_strides.push_back(c.src_strides[d]);
    out.dst_strides.push_back(c.dst_strides[d]);
  }
  if (out.shape.empty()) {
    out.shape = {1};
    out.src_strides = {1};
    out.dst_strides = {1};
  }
  // Where the source's rows lie across the destination's (a transpose), the axis along
  // the source's rows goes next to the last, whatever the order the copy walks: copy_rows
  // moves those two axes by blocks.
  const size_t rank = out.shape.size();
  if (rank >= 3 && out.dst_strides[rank - 1] == 1 && out.src_strides[rank - 1] != 1) {
    for (size_t d = 0; d + 2 < rank; ++d) {
      if (out.src_strides[d] != 1) continue;
      for (auto* axes : {&out.shape, &out.src_strides, &out.dst_strides}) {
        std::rotate(axes->begin() + static_cast<int64_t>(d), axes->begin() + static_cast<int64_t>(d) + 1,
                    axes->end() - 1);
      }
      break;
    }
  }
  return out;
}

// Rows of `n` elements whose last axis is the source's rows' axis: element (r, j) from
// src[s + r + j * ss] to dst[d + r * row_ds + j], in blocks of kSide rows and columns, so
// that the lines a block reads and those it writes stay in L1 while it moves them.
template <class T>
void transpose_rows(const T* src, T* dst, int64_t s, int64_t d, int64_t rows, int64_t n, int64_t ss, int64_t row_ds) {
  constexpr int64_t kSide = 16;
  for (int64_t r0 = 0; r0 < rows; r0 += kSide) {
    const int64_t r1 = std::min(rows, r0 + kSide);
    for (int64_t j0 = 0; j0 < n; j0 += kSide) {
      const int64_t j1 = std::min(n, j0 + kSide);
      for (int64_t r = r0; r < r1; ++r) {
        T* to = dst + d + r * row_ds;
        const T* from = src + s + r;
        for (int64_t j = j0; j < j1; ++j) to[j] = from[j * ss];
      }
    }
  }
}

// Rows [begin, end) of the copy (a row: its last axis). Rows go by panels along the axis
// before the last: a panel's first row is placed by its index, the rest by that axis's
// strides (a division a row cost more than a short row's copy). Elements of 4 bytes move
// through a transpose by the instruction set's vector transposes (`transpose`, the
// GEMM's, which moves bits as they are).
template <class T>
void copy_rows(const Copy& c, const T* src, T* dst, int64_t begin, int64_t end, TransposeKernel transpose) {
  const size_t rank = c.shape.size();
  const int64_t n = c.shape[rank - 1], ss = c.src_strides[rank - 1], ds = c.dst_strides[rank - 1];
  const int64_t panel = rank >= 2 ? c.shape[rank - 2] : 1;
  const int64_t row_ss = rank >= 2 ? c.src_strides[rank - 2] : 0, row_ds = rank >= 2 ? c.dst_strides[rank - 2] : 0;
  // The last two axes swapped (a transpose's): blocks, each side read or written along memory.
  const bool swapped = ds == 1 && ss != 1 && row_ss == 1 && n > 1;
  for (int64_t row = begin; row < end;) {
    const int64_t first = row % panel, rows = std::min(end - row, panel - first);
    int64_t s = c.src_base + first * row_ss, d = c.dst_base + first * row_ds, rest = row / panel;
    for (size_t k = rank >= 2 ? rank - 2 : 0; k-- > 0;) {
      int64_t i = rest % c.shape[k];
      rest /= c.shape[k];
      s += i * c.src_strides[k];
      d += i * c.dst_strides[k];
    }
    row += rows;
    if (swapped) {
      if constexpr (sizeof(T) == sizeof(float)) {
        transpose(rows, n, reinterpret_cast<const float*>(src + s), ss, reinterpret_cast<float*>(dst + d), row_ds);
      } else {
        transpose_rows(src, dst, s, d, rows, n, ss, row_ds);
      }
      continue;
    }
    for (int64_t r = 0; r < rows; ++r, s += row_ss, d += row_ds) {
      if (ss == 1 && ds == 1) std::memcpy(dst + d, src + s, static_cast<size_t>(n) * sizeof(T));
      else if (ss == 0 && ds == 1) std::fill_n(dst + d, n, src[s]);
      else
        for (int64_t j = 0; j < n; ++j) dst[d + j * ds] = src[s + j * ss];
    }
  }
}

template <class T>
void run_copy_typed(const Copy& c, const uint8_t* src, uint8_t* dst, int threads, TransposeKernel transpose) {
  int64_t rows = 1;  // counted in place: a run allocates nothing
  for (size_t d = 0; d + 1 < c.shape.size(); ++d) rows *= c.shape[d];
  parallel_for(rows, threads, [&](int64_t begin, int64_t end) {
    copy_rows(c, reinterpret_cast<const T*>(src), reinterpret_cast<T*>(dst), begin, end, transpose);
  });
}

void run_copy(const Copy& c, size_t size, const uint8_t* src, uint8_t* dst, int threads, TransposeKernel transpose) {
  switch (size) {
    case 1: return run_copy_typed<uint8_t>(c, src, dst, threads, transpose);
    case 2: return run_copy_typed<uint16_t>(c, src, dst, threads, transpose);
    case 4: return run_copy_typed<uint32_t>(c, src, dst, threads, transpose);
    default: return run_copy_typed<uint64_t>(c, src, dst, threads, transpose);
  }
}

// Elements [begin, end) of `out` set to `value` (one element's bytes), by a typed
// fill the compiler vectorizes (a memcpy an element costs a call an element).
void fill_elements(const std::vector<uint8_t>& value, uint8_t* out, int64_t begin, int64_t end) {
  auto typed = [&]<class T>() {
    T element;
    std::memcpy(&element, value.data(), sizeof(T));
    std::fill(reinterpret_cast<T*>(out) + begin, reinterpret_cast<T*>(out) + end, element);
  };
  switch (value.size()) {
    case 1: return typed.operator()<uint8_t>();
    case 2: return typed.operator()<uint16_t>();
    case 4: return typed.operator()<uint32_t>();
    default: return typed.operator()<uint64_t>();
  }
}

// A step made of copies, source k of copy k being input `inputs[k]`, after
// filling the output with `fill` (one element's bytes) when it is set.
Step copies_step(const StepContext& c, std::vector<Copy> copies, std::vector<size_t> inputs, size_t size,
                 int64_t out_count, std::optional<std::vector<uint8_t>> fill) {
  for (Copy& copy : copies) copy = simplify(std::move(copy));
  int threads = threads_for(out_count, c.cores);
  return [copies = std::move(copies), inputs = std::move(inputs), size, out_count, fill = std::move(fill), threads,
          transpose = c.kernels.pack_transposed](const uint8_t* const* in, uint8_t* out) {
    if (fill) {
      parallel_for(out_count, threads, [&](int64_t begin, int64_t end) { fill_elements(*fill, out, begin, end); });
    }
    for (size_t k = 0; k < copies.size(); ++k) run_copy(copies[k], size, in[inputs[k]], out, threads, transpose);
  };
}

// How gather and scatter_add walk x: as [outer, along, inner] around the indexed
// axis, with `count` indices into it.
struct IndexedAxes {
  int64_t outer = 1, along = 0, inner = 1, count = 0;
};

IndexedAxes indexed_axes(const graph::Graph& graph, const graph::Node& node) {
  const Shape& x = graph.node(node.inputs[0]).shape;
  auto axis = static_cast<int64_t>(node.attrs.get_int("axis"));
  return {.outer = graph::numel(Shape(x.begin(), x.begin() + axis)),
          .along = x[static_cast<size_t>(axis)],
          .inner = graph::numel(Shape(x.begin() + axis + 1, x.end())),
          .count = graph::numel(graph.node(node.inputs[1]).shape)};
}

Step gather_step(const graph::Graph& graph, const graph::Node& node, int cores) {
  const graph::Node &x = graph.node(node.inputs[0]), &idx = graph.node(node.inputs[1]);
  const IndexedAxes axes = indexed_axes(graph, node);
  const int64_t outer = axes.outer, along = axes.along, count = axes.count;
  size_t row_bytes = static_cast<size_t>(axes.inner) * graph::dtype_size(x.dtype);
  int threads = threads_for(graph::numel(node.shape), cores);
  return graph::visit_index_dtype(idx.dtype, [&](auto zero) -> Step {
    using I = decltype(zero);
    return [outer, along, count, row_bytes, threads](const uint8_t* const* in, uint8_t* out) {
      const I* indices = reinterpret_cast<const I*>(in[1]);
      graph::check_indices(indices, count, along, 1);
      parallel_for(outer * count, threads, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
          int64_t o = r / count, i = r % count;
          auto at = static_cast<int64_t>(indices[i]);
          std::memcpy(out + static_cast<size_t>(r) * row_bytes, in[0] + static_cast<size_t>(o * along + at) * row_bytes,
                      row_bytes);
        }
      });
    };
  });
}

// scatter_add: x, then each row of updates added to the row of x its index names, in
// the order of the updates, as the reference adds them, so the bits are the
// reference's: an element of x receives its additions in the order of their indices'
// positions. The threads take blocks of columns of an
// outer entry, each its own elements.
Step scatter_add_step(const graph::Graph& graph, const graph::Node& node, int cores) {
  const graph::Node &x = graph.node(node.inputs[0]), &idx = graph.node(node.inputs[1]);
  const IndexedAxes axes = indexed_axes(graph, node);
  const int64_t outer = axes.outer, along = axes.along, inner = axes.inner, count = axes.count;
  size_t x_bytes = static_cast<size_t>(graph::numel(x.shape)) * graph::dtype_size(x.dtype);
  int threads = threads_for(outer * count * inner, cores);
  return graph::visit_index_dtype(idx.dtype, [&](auto zero) -> Step {
    using I = decltype(zero);
    return graph::visit_dtype(x.dtype, [&](auto types) -> Step {
      using S = typename decltype(types)::storage;
      using C = typename decltype(types)::compute;
      return [outer, inner, along, count, x_bytes, threads](const uint8_t* const* in, uint8_t* out) {
        const I* indices = reinterpret_cast<const I*>(in[1]);
        graph::check_indices(indices, count, along, 1);
        if (x_bytes > 0) std::memcpy(out, in[0], x_bytes);
        const S* updates = reinterpret_cast<const S*>(in[2]);
        S* result = reinterpret_cast<S*>(out);
        constexpr int64_t kBlock = 1024;
        const int64_t blocks = (inner + kBlock - 1) / kBlock;
        parallel_for(outer * blocks, threads, [&](int64_t begin, int64_t end) {
          for (int64_t r = begin; r < end; ++r) {
            const int64_t o = r / blocks, j0 = r % blocks * kBlock, width = std::min(kBlock, inner - j0);
            for (int64_t i = 0; i < count; ++i) {
              const auto at = static_cast<int64_t>(indices[i]);
              S* target = result + (o * along + at) * inner + j0;
              const S* from = updates + (o * count + i) * inner + j0;
              for (int64_t j = 0; j < width; ++j) {
                target[j] = S(graph::prims::wrap_add(static_cast<C>(target[j]), static_cast<C>(from[j])));
              }
            }
          }
        });
      };
    });
  });
}

// one_hot: zeros, then a one at each index's place along its row (none for an index
// outside [0, depth), which a checked one_hot refuses), as the reference sets them. The
// rows go to the threads.
Step one_hot_step(const StepContext& c, const graph::Node& node) {
  const graph::Node& indices = c.graph.node(node.inputs[0]);
  const int64_t depth = node.attrs.get_int("depth"), count = graph::numel(indices.shape);
  const bool checked = node.attrs.has("checked");
  const size_t size = graph::dtype_size(node.dtype);
  const graph::Tensor one = graph::Tensor::scalar(node.dtype, 1.0);
  std::vector<uint8_t> one_bytes(one.bytes().begin(), one.bytes().end());
  const int threads = threads_for(count * depth, c.cores);
  return graph::visit_index_dtype(indices.dtype, [&](auto zero) -> Step {
    using I = decltype(zero);
    return [depth, count, size, one_bytes, threads, checked](const uint8_t* const* in, uint8_t* out) {
      const I* index = reinterpret_cast<const I*>(in[0]);
      if (checked) graph::check_indices(index, count, depth, 0);
      parallel_for(count, threads, [&](int64_t begin, int64_t end) {
        const auto row_bytes = static_cast<size_t>(depth) * size;
        std::memset(out + static_cast<size_t>(begin) * row_bytes, 0, static_cast<size_t>(end - begin) * row_bytes);
        for (int64_t i = begin; i < end; ++i) {
          const auto k = static_cast<int64_t>(index[i]);
          if (k >= 0 && k < depth) std::memcpy(out + static_cast<size_t>(i * depth + k) * size, one_bytes.data(), size);
        }
      });
    };
  });
}

// Each primitive's copies. An empty output needs no copy (and gather's shape
// rule refuses to read an empty axis, so an empty operand gives an empty
// result).
Step nothing_step() {
  return [](const uint8_t* const*, uint8_t*) {};
}

// The step of an index primitive whose output is empty: it reads and writes nothing, but
// its indices (input `operand`) are checked against `length` as when it does.
Step indices_check_step(const graph::Graph& graph, const graph::Node& node, size_t operand, int64_t length) {
  const graph::Node& indices = graph.node(node.inputs[operand]);
  const int64_t count = graph::numel(indices.shape);
  return graph::visit_index_dtype(indices.dtype, [&](auto zero) -> Step {
    using I = decltype(zero);
    return [operand, length, count](const uint8_t* const* in, uint8_t*) {
      graph::check_indices(reinterpret_cast<const I*>(in[operand]), count, length, operand);
    };
  });
}

Step transpose_step(const StepContext& c, const graph::Node& node) {
  int64_t out_count = graph::numel(node.shape);
  if (out_count == 0) return nothing_step();
  const graph::Node& x = c.graph.node(node.inputs[0]);
  std::vector<int64_t> in_strides = graph::row_major_strides(x.shape), src;
  for (int64_t p : node.attrs.get_ints("perm")) src.push_back(in_strides[static_cast<size_t>(p)]);
  return copies_step(c, {Copy{node.shape, src, graph::row_major_strides(node.shape)}}, {0},
                     graph::dtype_size(node.dtype), out_count, std::nullopt);
}

Step broadcast_step(const StepContext& c, const graph::Node& node) {
  int64_t out_count = graph::numel(node.shape);
  if (out_count == 0) return nothing_step();
  const Shape& from = c.graph.node(node.inputs[0]).shape;
  std::vector<int64_t> in_strides = graph::row_major_strides(from), src(node.shape.size(), 0);
  size_t lead = node.shape.size() - from.size();
  for (size_t d = 0; d < from.size(); ++d) src[lead + d] = from[d] == 1 ? 0 : in_strides[d];
  return copies_step(c, {Copy{node.shape, src, graph::row_major_strides(node.shape)}}, {0},
                     graph::dtype_size(node.dtype), out_count, std::nullopt);
}

Step slice_step(const StepContext& c, const graph::Node& node) {
  int64_t out_count = graph::numel(node.shape);
  if (out_count == 0) return nothing_step();
  const Shape& from = c.graph.node(node.inputs[0]).shape;
  std::vector<int64_t> in_strides = graph::row_major_strides(from), src;
  const auto &start = node.attrs.get_ints("start"), &step = node.attrs.get_ints("step");
  int64_t base = 0;
  for (size_t d = 0; d < from.size(); ++d) {
    base += start[d] * in_strides[d];
    src.push_back(in_strides[d] * step[d]);
  }
  return copies_step(c, {Copy{node.shape, src, graph::row_major_strides(node.shape), base, 0}}, {0},
                     graph::dtype_size(node.dtype), out_count, std::nullopt);
}

// Where a concat's part `input`, a reshape of a transpose (attention's heads merged, in
// a gradient), lies in the concat's output (at `offset` over `out_strides`), seen with
// the transpose's shape; nothing when the reshape needs a copy there.
std::optional<View> transposed_part(const graph::Graph& graph, const graph::Node& node, size_t input,
                                    const std::vector<int64_t>& out_strides, int64_t offset) {
  const graph::Node& reshape = graph.node(node.inputs[input]);
  if (reshape.op() != graph::PrimId::reshape) return std::nullopt;
  const graph::Node& transpose = graph.node(reshape.inputs[0]);
  if (transpose.op() != graph::PrimId::transpose) return std::nullopt;
  return reshaped(View{.shape = reshape.shape, .strides = out_strides, .offset = offset}, transpose.shape);
}

// A concat reads a part that is a reshape of a transpose through the transpose's input
// (one copy, not two).
int absorbs_transposed_part(const graph::Graph& graph, const graph::Node& node, size_t input, const KernelSet&) {
  return transposed_part(graph, node, input, graph::row_major_strides(node.shape), 0) ? 2 : 0;
}

Step concat_step(const StepContext& c, const graph::Node& node) {
  int64_t out_count = graph::numel(node.shape);
  if (out_count == 0) return nothing_step();
  std::vector<int64_t> out_strides = graph::row_major_strides(node.shape);
  auto axis = static_cast<size_t>(node.attrs.get_int("axis"));
  std::vector<Copy> copies;
  std::vector<size_t> inputs;
  int64_t offset = 0;
  for (size_t k = 0; k < node.inputs.size(); ++k) {
    const Shape& s = c.graph.node(node.inputs[k]).shape;
    if (graph::numel(s) > 0 && c.absorbs_deep(k)) {
      const graph::Node& transpose = c.graph.node(c.graph.node(node.inputs[k]).inputs[0]);
      const std::vector<int64_t> from = graph::row_major_strides(c.graph.node(transpose.inputs[0]).shape);
      std::vector<int64_t> src;
      for (int64_t p : transpose.attrs.get_ints("perm")) src.push_back(from[static_cast<size_t>(p)]);
      const View to = *transposed_part(c.graph, node, k, out_strides, offset * out_strides[axis]);
      copies.push_back(Copy{transpose.shape, src, to.strides, 0, to.offset});
      inputs.push_back(k);
    } else if (graph::numel(s) > 0) {
      copies.push_back(Copy{s, graph::row_major_strides(s), out_strides, 0, offset * out_strides[axis]});
      inputs.push_back(k);
    }
    offset += s[axis];
  }
  return copies_step(c, std::move(copies), std::move(inputs), graph::dtype_size(node.dtype), out_count, std::nullopt);
}

Step pad_step(const StepContext& c, const graph::Node& node) {
  int64_t out_count = graph::numel(node.shape);
  if (out_count == 0) return nothing_step();
  std::vector<int64_t> out_strides = graph::row_major_strides(node.shape);
  const Shape& from = c.graph.node(node.inputs[0]).shape;
  graph::Tensor value = graph::Tensor::scalar(node.dtype, node.attrs.get_double("value"));
  std::vector<uint8_t> fill(value.bytes().begin(), value.bytes().end());
  const auto &low = node.attrs.get_ints("low"), &interior = node.attrs.get_ints("interior");
  std::vector<int64_t> dst;
  int64_t base = 0;
  for (size_t d = 0; d < from.size(); ++d) {
    base += low[d] * out_strides[d];
    dst.push_back(out_strides[d] * (interior[d] + 1));
  }
  std::vector<Copy> copies;
  if (graph::numel(from) > 0) copies.push_back(Copy{from, graph::row_major_strides(from), dst, 0, base});
  std::vector<size_t> inputs(copies.size(), 0);
  return copies_step(c, std::move(copies), std::move(inputs), graph::dtype_size(node.dtype), out_count,
                     std::move(fill));
}

}  // namespace

void add_movement_steps(StepTable& table) {
  table.set(graph::PrimId::gather, [](const StepContext& c, const graph::Node& node) {
    if (graph::numel(node.shape) > 0) return gather_step(c.graph, node, c.cores);
    return indices_check_step(c.graph, node, 1, indexed_axes(c.graph, node).along);
  });
  table.set(graph::PrimId::scatter_add,
            [](const StepContext& c, const graph::Node& node) { return scatter_add_step(c.graph, node, c.cores); });
  table.set(graph::PrimId::one_hot, [](const StepContext& c, const graph::Node& node) {
    if (graph::numel(node.shape) > 0) return one_hot_step(c, node);
    return node.attrs.has("checked") ? indices_check_step(c.graph, node, 0, node.attrs.get_int("depth"))
                                     : nothing_step();
  });
  table.set(graph::PrimId::transpose, transpose_step);
  table.set(graph::PrimId::broadcast, broadcast_step);
  table.set(graph::PrimId::slice, slice_step);
  table.set(graph::PrimId::concat, concat_step, absorbs_transposed_part);
  table.set(graph::PrimId::pad, pad_step);
}

}  // namespace sx::device::cpu
