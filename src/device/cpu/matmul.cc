// Matrix products. f32 and bf16 run on our GEMM (gemm.h), whose summation
// order depends on K alone, so a row's bits never depend on the batch, the
// threads or the instruction set. bf16 operands are widened to f32 exactly
// while packing, the product accumulates in f32 and is rounded to bf16 once,
// as the reference does. f64, the integer dtypes and empty shapes run the
// loop below: the reference's order of products per element, so its bits,
// with rows spread over the threads.
//
// A product x[..., m, k] @ broadcast(w[k, n]) is run as one [rows, k] @
// [k, n] product; other batched products as one product per batch entry,
// whole entries spread over the threads when there are enough of them.
#include <memory>

#include "device/cpu/gemm.h"
#include "device/cpu/kernels.h"
#include "graph/prims/common.h"

namespace sx::device::cpu {
namespace {

using graph::DType;
using graph::Shape;

struct FloatMatmul {
  int64_t batch, m, k, n;
  bool bf16;
  std::vector<std::unique_ptr<Gemm>> gemms;  // one, or one per thread when entries are spread
  std::vector<float> result;                 // the f32 product of bf16 operands, before rounding

  void run(const uint8_t* a, const uint8_t* b, bool shared_b, uint8_t* out) {
    size_t elem = bf16 ? sizeof(graph::Bf16) : sizeof(float);
    float* c = bf16 ? result.data() : reinterpret_cast<float*>(out);
    auto entry = [&](Gemm& gemm, int64_t e) {
      MatrixRef ra{.data = a + static_cast<size_t>(e * m * k) * elem, .rows = k, .cols = 1, .bf16 = bf16};
      MatrixRef rb{
          .data = b + static_cast<size_t>(shared_b ? 0 : e * k * n) * elem, .rows = n, .cols = 1, .bf16 = bf16};
      gemm.run(ra, rb, c + e * m * n, n);
    };
    if (gemms.size() == 1) {
      for (int64_t e = 0; e < batch; ++e) entry(*gemms[0], e);
    } else {
      parallel_for(batch, static_cast<int>(gemms.size()), [&](int64_t begin, int64_t end) {
        Gemm& gemm = *gemms[static_cast<size_t>(omp_get_thread_num())];
        for (int64_t e = begin; e < end; ++e) entry(gemm, e);
      });
    }
    if (bf16) {
      auto* o = reinterpret_cast<graph::Bf16*>(out);
      int64_t count = batch * m * n;
      parallel_for(count, threads_for(count, static_cast<int>(gemms.size())), [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) o[i] = graph::Bf16(result[static_cast<size_t>(i)]);
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

Step matmul_step(const StepContext& c, const graph::Node& node) {
  int cores = c.cores;
  bool weights_broadcast = c.absorbs(1);
  const Shape& a = c.graph.node(node.inputs[0]).shape;
  size_t r = a.size();
  int64_t m = a[r - 2], k = a[r - 1], n = node.shape[r - 1];
  int64_t batch = graph::numel(Shape(node.shape.begin(), node.shape.end() - 2));
  double flops =
      2.0 * static_cast<double>(batch) * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  // About 10 microseconds of one core's FMA peak: below it, a fork costs more
  // than it saves.
  int threads = flops < 2e6 ? 1 : cores;
  bool empty = batch == 0 || m == 0 || n == 0;
  if ((node.dtype == DType::f32 || node.dtype == DType::bf16) && !empty) {
    auto mm = std::make_shared<FloatMatmul>();
    mm->bf16 = node.dtype == DType::bf16;
    mm->k = k;
    mm->n = n;
    if (weights_broadcast) {
      mm->batch = 1;
      mm->m = batch * m;
    } else {
      mm->batch = batch;
      mm->m = m;
    }
    if (mm->batch >= threads && threads > 1) {
      for (int t = 0; t < threads; ++t) mm->gemms.push_back(std::make_unique<Gemm>(c.kernels, mm->m, n, k, 1));
    } else {
      mm->gemms.push_back(std::make_unique<Gemm>(c.kernels, mm->m, n, k, threads));
    }
    if (mm->bf16) mm->result.resize(static_cast<size_t>(batch * m * n));
    return [mm, weights_broadcast](const uint8_t* const* in, uint8_t* out) {
      mm->run(in[0], in[1], weights_broadcast, out);
    };
  }
  int loop_threads = threads_for(static_cast<int64_t>(flops / 2), cores);
  return graph::visit_dtype(node.dtype, [&](auto types) -> Step {
    using S = typename decltype(types)::storage;
    using C = typename decltype(types)::compute;
    return loop_matmul<S, C>(batch, m, k, n, weights_broadcast, loop_threads);
  });
}

// The right operand is a broadcast that only adds batch axes to a [k, n] matrix: the
// step reads that matrix (the broadcast's input) for every batch.
bool absorbs_weights(const graph::Graph& graph, const graph::Node& node, size_t input) {
  const graph::Node& right = graph.node(node.inputs[1]);
  if (input != 1 || right.op() != graph::PrimId::broadcast || node.shape.size() < 3) return false;
  const Shape& from = graph.node(right.inputs[0]).shape;
  size_t r = right.shape.size();
  if (from.size() < 2) return false;
  for (size_t d = 0; d + 2 < from.size(); ++d) {
    if (from[d] != 1) return false;
  }
  return from[from.size() - 2] == right.shape[r - 2] && from[from.size() - 1] == right.shape[r - 1];
}

}  // namespace

void add_matmul_steps(StepTable& table) { table.set(graph::PrimId::matmul, matmul_step, absorbs_weights); }

}  // namespace sx::device::cpu
