// Matrix products. f32 and bf16 go through oneDNN's matmul primitive,
// created once per node at compile time for that node's shapes (with the
// thread count it will run on: oneDNN picks its blocking for it). bf16
// products accumulate in f32 and round once, as the reference does. f64 and
// the integer dtypes, which oneDNN does not multiply, and empty shapes run
// the loop below: the reference's order of products per element, so its
// bits, with rows spread over the threads.
//
// Constant weights are packed once at compile time.
//
// Rows: oneDNN's kernels give a row of the product the same bits whatever
// the number of rows (tests/unit/device checks 1, 8 and 64), and a product
// x[..., m, k] @ broadcast(w[k, n]) is run as one [rows, k] @ [k, n] GEMM.
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <unordered_map>

#include "device/cpu/kernels.h"
#include "graph/prims/common.h"

namespace sx::device::cpu {
namespace {

using graph::DType;
using graph::Shape;

dnnl::engine& engine() {
  static dnnl::engine instance(dnnl::engine::kind::cpu, 0);
  return instance;
}

// Sets the OpenMP thread count of the calling thread for a scope: oneDNN
// sizes its parallel regions by omp_get_max_threads().
class ThreadScope {
 public:
  explicit ThreadScope(int threads) : saved_(omp_get_max_threads()) { omp_set_num_threads(threads); }
  ~ThreadScope() { omp_set_num_threads(saved_); }
  ThreadScope(const ThreadScope&) = delete;
  ThreadScope& operator=(const ThreadScope&) = delete;

 private:
  int saved_;
};

struct OneDnnMatmul {
  dnnl::matmul primitive;
  dnnl::memory src, weights, dst;
  std::unordered_map<int, dnnl::memory> args;
  dnnl::stream stream;
  int threads = 1;
  bool packed = false;  // `weights` holds the constant weights, packed at compile time

  void run(const uint8_t* a, const uint8_t* b, uint8_t* out) {
    ThreadScope scope(threads);
    src.set_data_handle(const_cast<uint8_t*>(a));
    if (!packed) weights.set_data_handle(const_cast<uint8_t*>(b));
    dst.set_data_handle(out);
    primitive.execute(stream, args);
    stream.wait();
  }
};

std::shared_ptr<OneDnnMatmul> make_onednn(DType dtype, int64_t batch, int64_t m, int64_t k, int64_t n,
                                          bool shared_weights, int threads, const graph::Tensor* constant) {
  using dt = dnnl::memory::data_type;
  dt type = dtype == DType::bf16 ? dt::bf16 : dt::f32;
  dnnl::memory::desc a_md, b_md, c_md;
  if (batch == 1 || shared_weights) {
    a_md = dnnl::memory::desc({batch * m, k}, type, dnnl::memory::dims{k, 1});
    b_md = dnnl::memory::desc({k, n}, type, dnnl::memory::dims{n, 1});
    c_md = dnnl::memory::desc({batch * m, n}, type, dnnl::memory::dims{n, 1});
  } else {
    a_md = dnnl::memory::desc({batch, m, k}, type, dnnl::memory::dims{m * k, k, 1});
    b_md = dnnl::memory::desc({batch, k, n}, type, dnnl::memory::dims{k * n, n, 1});
    c_md = dnnl::memory::desc({batch, m, n}, type, dnnl::memory::dims{m * n, n, 1});
  }
  auto mm = std::make_shared<OneDnnMatmul>();
  mm->threads = threads;
  ThreadScope scope(threads);
  mm->stream = dnnl::stream(engine());
  // Constant [k, n] weights are packed once here into the layout oneDNN
  // prefers; plain weights would be repacked by every call (measured for
  // 1x128x512: 6.5 us a call plain, 3.5 packed, f32).
  bool pack = constant != nullptr && b_md.dims().size() == 2;
  dnnl::memory::desc w_md = pack ? dnnl::memory::desc({k, n}, type, dnnl::memory::format_tag::any) : b_md;
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, w_md, c_md), engine());
  mm->primitive = dnnl::matmul(pd);
  mm->src = dnnl::memory(a_md, engine(), DNNL_MEMORY_NONE);
  if (pack) {
    dnnl::memory plain(b_md, engine(), const_cast<uint8_t*>(constant->bytes().data()));
    mm->weights = dnnl::memory(pd.weights_desc(), engine());
    dnnl::reorder(plain, mm->weights).execute(mm->stream, plain, mm->weights);
    mm->stream.wait();
    mm->packed = true;
  } else {
    mm->weights = dnnl::memory(b_md, engine(), DNNL_MEMORY_NONE);
  }
  mm->dst = dnnl::memory(c_md, engine(), DNNL_MEMORY_NONE);
  mm->args = {{DNNL_ARG_SRC, mm->src}, {DNNL_ARG_WEIGHTS, mm->weights}, {DNNL_ARG_DST, mm->dst}};
  return mm;
}

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

}  // namespace

Step matmul_step(const graph::Graph& graph, const graph::Node& node, int cores, bool weights_broadcast) {
  // The right operand's value when it is a constant (under the broadcast
  // when there is one).
  const graph::Node* right = &graph.node(node.inputs[1]);
  if (weights_broadcast) right = &graph.node(right->inputs[0]);
  const graph::Tensor* constant = right->op_name() == "constant" ? right->value.get() : nullptr;
  const Shape& a = graph.node(node.inputs[0]).shape;
  size_t r = a.size();
  int64_t m = a[r - 2], k = a[r - 1], n = node.shape[r - 1];
  int64_t batch = graph::numel(Shape(node.shape.begin(), node.shape.end() - 2));
  double flops =
      2.0 * static_cast<double>(batch) * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  // About 10 microseconds of one core's FMA peak: below it, a fork costs more
  // than it saves.
  int threads = flops < 2e6 ? 1 : cores;
  bool empty = batch == 0 || m == 0 || n == 0 || k == 0;
  if ((node.dtype == DType::f32 || node.dtype == DType::bf16) && !empty) {
    auto mm = make_onednn(node.dtype, batch, m, k, n, weights_broadcast, threads, constant);
    return [mm](const uint8_t* const* in, uint8_t* out) { mm->run(in[0], in[1], out); };
  }
  int loop_threads = threads_for(static_cast<int64_t>(flops / 2), cores);
  return graph::visit_dtype(node.dtype, [&](auto types) -> Step {
    using S = typename decltype(types)::storage;
    using C = typename decltype(types)::compute;
    return loop_matmul<S, C>(batch, m, k, n, weights_broadcast, loop_threads);
  });
}

}  // namespace sx::device::cpu
