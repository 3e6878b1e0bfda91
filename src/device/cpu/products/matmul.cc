// Matrix products. f32 and bf16 run on our GEMM (gemm.h), whose summation
// order depends on K alone, so a row's bits never depend on the batch, the
// threads or the instruction set. bf16 products accumulate in f32 by the bf16
// rule of gemm.h and are rounded to bf16 once, as the reference's are. f64, the integer dtypes and empty shapes run the
// loop below: the reference's order of products per element, so its bits,
// with rows spread over the threads.
//
// A product x[..., m, k] @ broadcast(w[k, n]) is run as one [rows, k] @
// [k, n] product; other batched products as one product per batch entry,
// whole entries spread over the threads when there are enough of them. An
// operand that is a transpose (a gradient's x^T, attention's heads) is read
// through its input's strides rather than copied. A product that one fused chain
// alone reads runs in that chain's step (epilogue.h): its GEMM hands the chain each
// block of the result as it finishes it. A bf16 product that only a cast to f32 reads
// writes that cast's output itself, each sum rounded to bf16 and widened back.
#include <memory>
#include <optional>

#include "device/cpu/kernels.h"
#include "device/cpu/kernels/view.h"
#include "device/cpu/products/epilogue.h"
#include "device/cpu/products/gemm.h"
#include "device/cpu/products/operands.h"
#include "graph/prims/common.h"

namespace sx::device::cpu {

std::optional<View> slice_view(const graph::Graph& graph, const graph::Node& transpose) {
  const graph::Node& reshape = graph.node(transpose.inputs[0]);
  if (reshape.op() != graph::PrimId::reshape) return std::nullopt;
  const graph::Node& slice = graph.node(reshape.inputs[0]);
  if (slice.op() != graph::PrimId::slice) return std::nullopt;
  const graph::Shape& from = graph.node(slice.inputs[0]).shape;
  const auto &start = slice.attrs.get_ints("start"), &step = slice.attrs.get_ints("step");
  View view{.shape = slice.shape, .strides = graph::row_major_strides(from), .offset = 0};
  for (size_t d = 0; d < from.size(); ++d) {
    view.offset += start[d] * view.strides[d];
    view.strides[d] *= step[d];
  }
  return reshaped(view, reshape.shape);
}

OperandLayout operand_layout(const StepContext& c, const graph::Node& node, size_t input) {
  const graph::Node& operand = c.graph.node(node.inputs[input]);
  const size_t rank = operand.shape.size(), batch_axes = rank - 2;
  OperandLayout layout;
  if (c.absorbs(input) && operand.op() == graph::PrimId::broadcast) {
    layout.batch_strides.assign(batch_axes, 0);
    if (c.absorbs_deep(input)) {  // the matrix is a transpose's: its columns are its input's rows
      layout.rows = 1;
      layout.cols = operand.shape[rank - 2];
    } else {
      layout.rows = operand.shape[rank - 1];
    }
    return layout;
  }
  std::vector<int64_t> strides = graph::row_major_strides(operand.shape);
  if (c.absorbs(input)) {  // a transpose: output axis d is its input's axis perm[d]
    std::vector<int64_t> from = graph::row_major_strides(c.graph.node(operand.inputs[0]).shape);
    if (c.absorbs_deep(input)) {  // of a reshape of a slice: through the slice's input
      const View view = *slice_view(c.graph, operand);
      from = view.strides;
      layout.offset = view.offset;
    }
    const auto& perm = operand.attrs.get_ints("perm");
    for (size_t d = 0; d < rank; ++d) strides[d] = from[static_cast<size_t>(perm[d])];
  }
  layout.batch_strides.assign(strides.begin(), strides.begin() + static_cast<int64_t>(batch_axes));
  layout.rows = strides[rank - 2];
  layout.cols = strides[rank - 1];
  return layout;
}

namespace {

using graph::DType;
using graph::Shape;

struct FloatMatmul {
  int64_t batch, m, k, n;
  Shape batch_shape;  // the output's batch axes, which `batch` entries run over
  OperandLayout a_layout, b_layout;
  bool bf16;
  bool b_from_f32 = false;                   // B is an f32 weight the product rounds (a cast it absorbs)
  bool widened = false;                      // bf16 written as f32, each value widened (epilogue.h)
  std::vector<std::unique_ptr<Gemm>> gemms;  // one, or one per thread when entries are spread
  // Where a bf16 product's f32 sums wait to be rounded (which the GEMM does tile by
  // tile): the plan's, shared by its products, or own_scratch.
  GemmScratch* scratch = nullptr;
  GemmScratch own_scratch;

  // Operand `layout`'s first element for batch entry e.
  int64_t offset_of(const OperandLayout& layout, int64_t e) const {
    int64_t offset = 0;
    for (size_t d = batch_shape.size(); d-- > 0;) {
      offset += e % batch_shape[d] * layout.batch_strides[d];
      e /= batch_shape[d];
    }
    return offset;
  }

  // With `done`, called on each block of the result as it is finished, its rows
  // counted over the batch entries in order.
  void run(const uint8_t* a, const uint8_t* b, uint8_t* out, const BlockDone* done) {
    size_t elem = bf16 ? sizeof(graph::Bf16) : sizeof(float), b_elem = b_from_f32 ? sizeof(float) : elem;
    const bool to_bf16 = bf16 && !widened;
    float* c = reinterpret_cast<float*>(to_bf16 ? scratch->product.data.get() : out);
    auto* rounded = to_bf16 ? reinterpret_cast<graph::Bf16*>(out) : nullptr;
    auto entry = [&](Gemm& gemm, int part, int64_t e) {
      MatrixRef ra{.data = a + static_cast<size_t>(a_layout.offset + offset_of(a_layout, e)) * elem,
                   .rows = a_layout.rows,
                   .cols = a_layout.cols,
                   .bf16 = bf16};
      MatrixRef rb{.data = b + static_cast<size_t>(b_layout.offset + offset_of(b_layout, e)) * b_elem,
                   .rows = b_layout.rows,
                   .cols = b_layout.cols,
                   .bf16 = bf16,
                   .from_f32 = b_from_f32};
      graph::Bf16* entry_rounded = rounded ? rounded + e * m * n : nullptr;
      if (!done) {
        gemm.run(ra, rb, c + e * m * n, n, entry_rounded, nullptr, widened);
        return;
      }
      // The entry's parts are the gemm's own (one gemm) or the entry's (one a thread).
      const auto to_entry = [&](int gemm_part, int64_t row, int64_t rows, int64_t col, int64_t cols) {
        (*done)(part + gemm_part, e * m + row, rows, col, cols);
      };
      const BlockDone entry_done = blocks_to(to_entry, done->whole_rows);
      gemm.run(ra, rb, c + e * m * n, n, entry_rounded, &entry_done, widened);
    };
    if (gemms.size() == 1) {
      for (int64_t e = 0; e < batch; ++e) entry(*gemms[0], 0, e);
    } else {
      parallel_parts(batch, static_cast<int>(gemms.size()), [&](int part, int64_t begin, int64_t end) {
        Gemm& gemm = *gemms[static_cast<size_t>(part)];
        for (int64_t e = begin; e < end; ++e) entry(gemm, part, e);
      });
    }
  }
};

// The reference's loop, rows over the threads; the right operand's batch
// stride is 0 when it is shared.
template <class S, class C>
Step loop_matmul(int64_t batch, int64_t m, int64_t k, int64_t n, bool shared_weights, int threads) {
  return [=](const uint8_t* const* in, uint8_t* out) {
    const S* pa = reinterpret_cast<const S*>(in[0]);
    const S* pb = reinterpret_cast<const S*>(in[1]);
    S* po = reinterpret_cast<S*>(out);
    int64_t b_stride = shared_weights ? 0 : k * n;
    parallel_for(batch * m, threads, [&](int64_t begin, int64_t end) {
      std::unique_ptr<C[]> acc(new C[static_cast<size_t>(n)]);
      for (int64_t row = begin; row < end; ++row) {
        const S* a = pa + row * k;
        const S* b = pb + (row / m) * b_stride;
        std::fill_n(acc.get(), n, C(0));
        for (int64_t p = 0; p < k; ++p) {
          C x = static_cast<C>(a[p]);
          const S* brow = b + p * n;
          for (int64_t j = 0; j < n; ++j) {
            acc[j] = graph::prims::wrap_add(acc[j], graph::prims::wrap_mul(x, static_cast<C>(brow[j])));
          }
        }
        for (int64_t j = 0; j < n; ++j) po[row * n + j] = S(acc[j]);
      }
    });
  };
}

// A product's sizes, its batch axes flattened, and its threads.
struct ProductSize {
  int64_t batch, m, k, n;
  double flops;
  int threads;
};

ProductSize product_size(const StepContext& c, const graph::Node& node) {
  const Shape& a = c.graph.node(node.inputs[0]).shape;
  size_t r = a.size();
  ProductSize size{.batch = graph::numel(Shape(node.shape.begin(), node.shape.end() - 2)),
                   .m = a[r - 2],
                   .k = a[r - 1],
                   .n = node.shape[r - 1],
                   .flops = 0,
                   .threads = 1};
  size.flops = 2.0 * static_cast<double>(size.batch) * static_cast<double>(size.m) * static_cast<double>(size.n) *
               static_cast<double>(size.k);
  // About 10 microseconds of one core's FMA peak: below it, a fork costs more
  // than it saves.
  size.threads = size.flops < 2e6 ? 1 : c.cores;
  return size;
}

Step matmul_step(const StepContext& c, const graph::Node& node) {
  if (std::optional<ProductStep> product = make_product_step(c, node)) {
    return [run = std::move(product->run)](const uint8_t* const* in, uint8_t* out) { run(in[0], in[1], out, nullptr); };
  }
  const ProductSize size = product_size(c, node);
  bool weights_broadcast = c.absorbs(1) && c.graph.node(node.inputs[1]).op() == graph::PrimId::broadcast;
  int loop_threads = threads_for(static_cast<int64_t>(size.flops / 2), c.cores);
  return graph::visit_dtype(node.dtype, [&](auto types) -> Step {
    using S = typename decltype(types)::storage;
    using C = typename decltype(types)::compute;
    return loop_matmul<S, C>(size.batch, size.m, size.k, size.n, weights_broadcast, loop_threads);
  });
}

// Whether node `id` casts an f32 weight (a graph input or constant) to bf16.
bool casts_weight(const graph::Graph& graph, graph::NodeId id) {
  const graph::Node& cast = graph.node(id);
  if (cast.op() != graph::PrimId::cast || cast.dtype != DType::bf16) return false;
  const graph::Node& weight = graph.node(cast.inputs[0]);
  return weight.dtype == DType::f32 && (weight.op() == graph::PrimId::input || weight.op() == graph::PrimId::constant);
}

// What a product reads in an operand's place: for the right operand, a broadcast that
// only adds batch axes to a [k, n] matrix (the matrix serves every entry), and for f32
// and bf16 products, through that matrix too when it is a transpose of a [n, k] matrix
// (a gradient's weights); for f32 and bf16 products, a transpose (its input read
// through permuted strides, which the GEMM's packing takes; the sums keep their order,
// so the bits are those of the copy), and through a reshape and a slice under it where
// the reshape needs no copy (slice_view): the slice is then not made either.
//
// A bf16 product's right operand is read through a cast too where it casts a weight
// (casts_weight), under those views or in the operand's place (kThroughCast), where
// the products run on AMX: its packing rounds the weight as the cast would, so the
// cast's pass over the weight, written and read again as bf16, is not made. (The other
// kernels widen B or make it into pairs as they pack it, from bf16.)
int absorbs_operand(const graph::Graph& graph, const graph::Node& node, size_t input, const KernelSet& kernels) {
  const graph::Node& operand = graph.node(node.inputs[input]);
  const bool floats = node.dtype == DType::f32 || node.dtype == DType::bf16;
  const bool rounds =
      input == 1 && node.dtype == DType::bf16 && graph::numel(node.shape) > 0 && kernels.isa == Isa::amx;
  const auto through_cast = [&](graph::NodeId under) {
    return rounds && casts_weight(graph, under) ? kThroughCast : 0;
  };
  if (operand.op() == graph::PrimId::cast) return through_cast(node.inputs[input]);
  if (operand.op() == graph::PrimId::transpose) {
    if (!floats || graph::numel(node.shape) == 0) return 0;
    return slice_view(graph, operand) ? 2 : (1 | through_cast(operand.inputs[0]));
  }
  if (input != 1 || operand.op() != graph::PrimId::broadcast || node.shape.size() < 3) return 0;
  const graph::Node& matrix = graph.node(operand.inputs[0]);
  const Shape& from = matrix.shape;
  size_t r = operand.shape.size();
  if (from.size() < 2) return 0;
  for (size_t d = 0; d + 2 < from.size(); ++d) {
    if (from[d] != 1) return 0;
  }
  if (from[from.size() - 2] != operand.shape[r - 2] || from[from.size() - 1] != operand.shape[r - 1]) return 0;
  bool transposed = floats && graph::numel(node.shape) > 0 && from.size() == 2 &&
                    matrix.op() == graph::PrimId::transpose &&
                    matrix.attrs.get_ints("perm") == std::vector<int64_t>{1, 0};
  return transposed ? (2 | through_cast(matrix.inputs[0])) : (1 | through_cast(operand.inputs[0]));
}

}  // namespace

std::optional<ProductStep> make_product_step(const StepContext& c, const graph::Node& node, bool widened) {
  const ProductSize size = product_size(c, node);
  if ((node.dtype != DType::f32 && node.dtype != DType::bf16) || size.batch == 0 || size.m == 0 || size.n == 0) {
    return std::nullopt;
  }
  const int threads = size.threads;
  auto mm = std::make_shared<FloatMatmul>();
  mm->bf16 = node.dtype == DType::bf16;
  mm->widened = widened && mm->bf16;
  mm->b_from_f32 = c.absorbs_cast(1);
  mm->k = size.k;
  mm->n = size.n;
  mm->a_layout = operand_layout(c, node, 0);
  mm->b_layout = operand_layout(c, node, 1);
  bool weights_broadcast = c.absorbs(1) && c.graph.node(node.inputs[1]).op() == graph::PrimId::broadcast;
  if (weights_broadcast && !c.absorbs(0)) {
    // The rows of every entry of A follow one another: one product of all of them.
    mm->batch = 1;
    mm->m = size.batch * size.m;
    mm->a_layout.batch_strides.clear();
    mm->b_layout.batch_strides.clear();
  } else {
    mm->batch = size.batch;
    mm->m = size.m;
    mm->batch_shape.assign(node.shape.begin(), node.shape.end() - 2);
  }
  mm->scratch = c.gemm_scratch ? c.gemm_scratch : &mm->own_scratch;
  if (mm->batch >= threads && threads > 1) {
    for (int t = 0; t < threads; ++t)
      mm->gemms.push_back(std::make_unique<Gemm>(c.kernels, mm->m, size.n, size.k, 1, mm->bf16, mm->scratch, t));
  } else {
    mm->gemms.push_back(std::make_unique<Gemm>(c.kernels, mm->m, size.n, size.k, threads, mm->bf16, mm->scratch));
  }
  if (mm->bf16 && !mm->widened)
    mm->scratch->product.reserve(static_cast<size_t>(size.batch * size.m * size.n) * sizeof(float));
  const bool one = mm->gemms.size() == 1;
  return ProductStep{.run = [mm](const uint8_t* a, const uint8_t* b, uint8_t* out,
                                 const BlockDone* done) { mm->run(a, b, out, done); },
                     .parts = one ? mm->gemms[0]->threads() : static_cast<int>(mm->gemms.size()),
                     .splits_columns = one && mm->gemms[0]->splits_columns()};
}

void add_matmul_steps(StepTable& table) { table.set(graph::PrimId::matmul, matmul_step, absorbs_operand); }

}  // namespace sx::device::cpu
