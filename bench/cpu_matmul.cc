// The cpu device's matrix product against the machine's FMA peak: GFLOP/s
// of a matmul plan (the device as a user gets it: compile once, run many
// times, outputs copied out) on 1 and 2 threads, f32 and bf16, for
// 512x512x512 and 1x128x512 (M x K x N), next to the peak measured in the
// same run by a loop of independent AVX-512 FMAs (f32) and VDPBF16PS (bf16)
// on as many threads. Weights are a graph input (oneDNN repacks them every
// call) or a constant (packed once at compile time). Each result is checked
// against the reference device.
//
//   build-cpu/bench/cpu_matmul [--quick]
#include <fmt/format.h>
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "device/device.h"
#include "device/reference/reference.h"
#include "graph/builder.h"

namespace {

using sx::graph::DType;
using sx::graph::Tensor;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// 12 independent chains hide the FMA latency (4 cycles) on 2 ports.
__attribute__((target("avx512f"))) float fma_loop(int64_t iterations) {
  __m512 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i));
  __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-6f);
  for (int64_t it = 0; it < iterations; ++it) {
    for (int i = 0; i < 12; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
  }
  __m512 sum = acc[0];
  for (int i = 1; i < 12; ++i) sum = _mm512_add_ps(sum, acc[i]);
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, sum);
  return lanes[0] + lanes[15];
}

__attribute__((target("avx512f,avx512bf16"))) float dpbf16_loop(int64_t iterations) {
  __m512 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i));
  __m512bh a = (__m512bh)_mm512_set1_epi32(0x3f803f80), b = (__m512bh)_mm512_set1_epi32(0x33803380);
  for (int64_t it = 0; it < iterations; ++it) {
    for (int i = 0; i < 12; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], a, b);
  }
  __m512 sum = acc[0];
  for (int i = 1; i < 12; ++i) sum = _mm512_add_ps(sum, acc[i]);
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, sum);
  return lanes[0] + lanes[15];
}

// GFLOP/s of the loop on `threads` threads: the best of short tries (each a
// few milliseconds) over `budget_s`, so that a busy machine still shows it.
double peak(bool bf16, int threads, double budget_s) {
  const int64_t iterations = 200'000;
  const double flops_per_iteration = 12.0 * (bf16 ? 64 : 32);
  double best = 0;
  volatile float sink = 0;
  for (auto begin = Clock::now(); seconds_since(begin) < budget_s;) {
    auto start = Clock::now();
#pragma omp parallel num_threads(threads)
    {
      float r = bf16 ? dpbf16_loop(iterations) : fma_loop(iterations);
#pragma omp critical
      sink = sink + r;
    }
    best = std::max(best, flops_per_iteration * static_cast<double>(iterations) * threads / seconds_since(start) / 1e9);
  }
  return best;
}

Tensor random_tensor(DType dtype, sx::graph::Shape shape, std::mt19937& rng) {
  std::normal_distribution<double> normal;
  std::vector<double> values(static_cast<size_t>(sx::graph::numel(shape)));
  for (double& v : values) v = normal(rng);
  return Tensor::from_doubles(dtype, std::move(shape), values);
}

struct Result {
  double gflops;
  double max_error;  // against the reference, relative to sqrt(k)
};

// `constant_weights`: w is a constant of the graph (packed at compile time),
// else an input like a.
Result time_matmul(DType dtype, int64_t m, int64_t k, int64_t n, int threads, double budget_s, bool constant_weights) {
  sx::graph::Graph graph;
  sx::graph::Builder b(graph);
  std::mt19937 rng(42);
  std::vector<Tensor> inputs{random_tensor(dtype, {m, k}, rng)};
  Tensor weights = random_tensor(dtype, {k, n}, rng);
  auto a = b.input("a", {m, k}, dtype);
  auto w = constant_weights ? b.constant(weights) : b.input("w", {k, n}, dtype);
  if (!constant_weights) inputs.push_back(weights);
  b.output("y", b.matmul(a, w));
  auto plan = sx::device::make_device("cpu", sx::device::DeviceOptions{.cpu_cores = threads})->compile(graph);
  Tensor y = plan->run(inputs)[0];
  Tensor want = sx::device::run_reference(graph, inputs)[0];
  double error = 0;
  for (int64_t i = 0; i < y.numel(); ++i) error = std::max(error, std::fabs(y.value(i) - want.value(i)));
  // Calls per batch so that one batch takes about a millisecond.
  auto start = Clock::now();
  int64_t calls = 0;
  while (seconds_since(start) < 0.05) {
    plan->run(inputs);
    ++calls;
  }
  int64_t per_batch = std::max<int64_t>(1, calls / 50);
  double best = 1e30;
  start = Clock::now();
  while (seconds_since(start) < budget_s) {
    auto t0 = Clock::now();
    for (int64_t i = 0; i < per_batch; ++i) plan->run(inputs);
    best = std::min(best, seconds_since(t0) / static_cast<double>(per_batch));
  }
  return {2.0 * static_cast<double>(m * k * n) / best / 1e9, error / std::sqrt(static_cast<double>(k))};
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = argc > 1 && std::string(argv[1]) == "--quick";
  double budget = quick ? 0.3 : 1.5;
  bool has_bf16 = __builtin_cpu_supports("avx512bf16");
  if (!__builtin_cpu_supports("avx512f")) {
    fmt::print("this CPU has no AVX-512: no peak to compare with\n");
    return 0;
  }
  fmt::print("cpu matmul (oneDNN {} cores available), GFLOP/s of a compiled plan, best of {:.1f} s\n",
             omp_get_num_procs(), budget);
  fmt::print("{:<6} {:>7} {:>16} {:>8} {:>10} {:>10} {:>7} {:>12}\n", "dtype", "threads", "M x K x N", "weights",
             "GFLOP/s", "peak", "% peak", "max err/sqK");
  struct Shape3 {
    int64_t m, k, n;
  };
  for (DType dtype : {DType::f32, DType::bf16}) {
    if (dtype == DType::bf16 && !has_bf16) continue;
    for (int threads : {1, 2}) {
      double p = peak(dtype == DType::bf16, threads, budget);
      for (Shape3 s : {Shape3{512, 512, 512}, Shape3{1, 128, 512}}) {
        for (bool constant : {false, true}) {
          Result r = time_matmul(dtype, s.m, s.k, s.n, threads, budget, constant);
          fmt::print("{:<6} {:>7} {:>16} {:>8} {:>10.1f} {:>10.1f} {:>6.1f}% {:>12.2e}\n", sx::graph::dtype_name(dtype),
                     threads, fmt::format("{}x{}x{}", s.m, s.k, s.n), constant ? "const" : "input", r.gflops, p,
                     100 * r.gflops / p, r.max_error);
        }
      }
    }
  }
  fmt::print(
      "peak: {} independent FMA (f32) / VDPBF16PS (bf16) chains per thread; the bf16 peak counts\n"
      "2 multiply-adds per lane per instruction. 1x128x512 runs on one thread by design (under ~10 us).\n",
      12);
  return 0;
}
