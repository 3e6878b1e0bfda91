// The cpu device's matrix product, in GFLOP/s of a compiled plan (the device
// as a served model or a training step uses it: compiled once, its operands
// on the device and its result written to a buffer allocated once), for
// transformer shapes, f32 and bf16, on 1 and 2 threads. Beside each figure,
// measured in the same run and interleaved with it: the FMA peak of the
// instruction set the device runs (independent FMA or VDPBF16PS chains, before and after
// the row), numpy's matmul on OpenBLAS (f32; bench/numpy_peer.py) and, for
// M <= 8, the rate B is read at against a copy of as many bytes: such a product
// reads all of B once, or a few times, and little else.
//
//   build/bench/cpu_matmul [--quick] [--isa scalar|avx2|avx512|avx512bf16|amx]
//
// A row whose two peak measurements differ by more than 10%, or whose
// 2-thread peak is under 1.6 times the 1-thread one, is marked `loaded`: the
// host was busy and its ratios are not to be trusted.
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "device/cpu/isa.h"
#include "device/cpu/thread_pool.h"
#include "device/device.h"
#include "graph/builder.h"
#include "multiply_peak.h"

namespace {

using sx::device::cpu::Isa;
using sx::device::cpu::ThreadPool;
using sx::graph::DType;
using sx::graph::Tensor;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// GB/s of memcpy of `bytes` on `threads` threads, each its own part, the best of
// copies of the same buffers over `budget_s`: 256 MiB come from memory, the size of a
// B as many times as a product reads that B, from the cache level it lies in.
double copy_bandwidth(int threads, double budget_s, size_t bytes = size_t{256} << 20) {
  threads = std::min(threads, ThreadPool::shared().size());
  std::vector<char> from(bytes, 1), to(bytes, 0);
  double best = 0;
  for (auto begin = Clock::now(); seconds_since(begin) < budget_s;) {
    auto start = Clock::now();
    ThreadPool::shared().run(threads, [&](int t) {
      size_t part = bytes / static_cast<size_t>(threads), at = part * static_cast<size_t>(t);
      std::memcpy(to.data() + at, from.data() + at, part);
    });
    best = std::max(best, static_cast<double>(bytes) / seconds_since(start) / 1e9);
  }
  return best;
}

// numpy in a child process (bench/numpy_peer.py), asked one shape at a time.
class NumpyPeer {
 public:
  explicit NumpyPeer(const std::string& script) {
    int to_child[2], from_child[2];
    if (pipe(to_child) != 0 || pipe(from_child) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(to_child[0], 0);
      dup2(from_child[1], 1);
      close(to_child[1]);
      close(from_child[0]);
      execl(SEXPGPU_PYTHON, SEXPGPU_PYTHON, script.c_str(), nullptr);
      _exit(127);
    }
    close(to_child[0]);
    close(from_child[1]);
    in_ = fdopen(to_child[1], "w");
    out_ = fdopen(from_child[0], "r");
    std::string hello = read_line();
    if (hello.rfind("blas ", 0) == 0) {
      blas_ = hello.substr(5);
    } else {
      why_not_ = hello.empty() ? "python3 with numpy did not start" : hello.substr(hello.find(' ') + 1);
    }
  }
  ~NumpyPeer() {
    if (in_ != nullptr) fclose(in_);
    if (out_ != nullptr) fclose(out_);
    if (pid_ > 0) waitpid(pid_, nullptr, 0);
  }
  bool ok() const { return !blas_.empty(); }
  const std::string& blas() const { return blas_; }
  const std::string& why_not() const { return why_not_; }

  std::optional<double> gflops(int64_t m, int64_t k, int64_t n, int threads, double seconds) {
    if (!ok()) return std::nullopt;
    fmt::print(in_, "{} {} {} {} {}\n", m, k, n, threads, seconds);
    fflush(in_);
    std::string line = read_line();
    if (line.empty()) return std::nullopt;
    return std::stod(line);
  }

 private:
  std::string read_line() {
    if (out_ == nullptr) return "";
    char buffer[512];
    if (fgets(buffer, sizeof buffer, out_) == nullptr) return "";
    std::string line(buffer);
    while (!line.empty() && line.back() == '\n') line.pop_back();
    return line;
  }
  pid_t pid_ = -1;
  FILE* in_ = nullptr;
  FILE* out_ = nullptr;
  std::string blas_, why_not_;
};

Tensor random_tensor(DType dtype, sx::graph::Shape shape, std::mt19937& rng) {
  std::normal_distribution<double> normal;
  std::vector<double> values(static_cast<size_t>(sx::graph::numel(shape)));
  for (double& v : values) v = normal(rng);
  return Tensor::from_doubles(dtype, std::move(shape), values);
}

// Seconds of one call of a compiled [m, k] @ [k, n] plan on device buffers,
// the best over `budget_s` of batches of calls of about a millisecond.
// Where `form` says so, the left operand is the transpose of a [k, m]
// input (a weight gradient's x^T), the right one of an [n, k] input (a
// gradient's x @ W^T). With `weight_f32`, a bf16 product's right operand is an f32
// input cast to bf16 (a weight under `--precision bf16`), the cast under the transpose.
struct OperandForm {
  bool a_transposed = false, b_transposed = false;
  bool weight_f32 = false;
};

double time_matmul(DType dtype, int64_t m, int64_t k, int64_t n, int threads, Isa isa, double budget_s,
                   OperandForm form) {
  sx::graph::Graph graph;
  sx::graph::Builder b(graph);
  std::mt19937 rng(42);
  sx::graph::Shape a_shape = form.a_transposed ? sx::graph::Shape{k, m} : sx::graph::Shape{m, k};
  sx::graph::Shape w_shape = form.b_transposed ? sx::graph::Shape{n, k} : sx::graph::Shape{k, n};
  const DType w_dtype = form.weight_f32 ? DType::f32 : dtype;
  std::vector<Tensor> inputs{random_tensor(dtype, a_shape, rng), random_tensor(w_dtype, w_shape, rng)};
  auto a = b.input("a", a_shape, dtype);
  auto w = b.input("w", w_shape, w_dtype);
  if (w_dtype != dtype) w = b.cast(w, dtype);
  b.output("y",
           b.matmul(form.a_transposed ? b.transpose(a, {1, 0}) : a, form.b_transposed ? b.transpose(w, {1, 0}) : w));
  sx::device::DeviceOptions options{.cpu_cores = threads, .cpu_isa = std::string(sx::device::cpu::isa_name(isa))};
  auto on = sx::device::make_device("cpu", options);
  auto plan = on->compile(graph);
  std::vector<sx::device::Buffer> buffers;
  for (const Tensor& t : inputs) buffers.push_back(on->upload(t));
  const sx::device::Buffer* operands[] = {&buffers[0], &buffers[1]};
  sx::device::Buffer result = on->allocate(plan->output_types()[0]);
  sx::device::Buffer* results[] = {&result};
  auto start = Clock::now();
  int64_t calls = 0;
  while (seconds_since(start) < 0.05 || calls == 0) {
    plan->run(operands, results);
    ++calls;
  }
  int64_t per_batch = std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(calls) / 50));
  double best = 1e30;
  start = Clock::now();
  while (seconds_since(start) < budget_s) {
    auto t0 = Clock::now();
    for (int64_t i = 0; i < per_batch; ++i) plan->run(operands, results);
    best = std::min(best, seconds_since(t0) / static_cast<double>(per_batch));
  }
  return best;
}

struct Product {
  int64_t m, k, n;
};

// "MxKxN", each a positive count.
std::optional<Product> parse_product(const std::string& text) {
  Product p{};
  char x1 = 0, x2 = 0;
  std::istringstream in(text);
  in >> p.m >> x1 >> p.k >> x2 >> p.n;
  if (!in || !in.eof() || x1 != 'x' || x2 != 'x' || p.m < 1 || p.k < 1 || p.n < 1) return std::nullopt;
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  OperandForm form;
  std::string isa_name;
  std::vector<Product> chosen;
  std::vector<int> thread_counts{1, 2};
  std::vector<DType> dtypes{DType::f32, DType::bf16};
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::optional<Product> product;
    if (arg == "--quick") {
      quick = true;
    } else if (arg == "--isa" && i + 1 < argc) {
      isa_name = argv[++i];
    } else if (arg == "--a-transposed") {
      form.a_transposed = true;
    } else if (arg == "--b-transposed") {
      form.b_transposed = true;
    } else if (arg == "--weight-f32") {
      form.weight_f32 = true;
    } else if (arg == "--threads" && i + 1 < argc && std::atoi(argv[i + 1]) > 0) {
      thread_counts = {std::atoi(argv[++i])};
    } else if (arg == "--dtype" && i + 1 < argc &&
               (argv[i + 1] == std::string("f32") || argv[i + 1] == std::string("bf16"))) {
      dtypes = {argv[++i] == std::string("bf16") ? DType::bf16 : DType::f32};
    } else if (arg == "--shape" && i + 1 < argc && (product = parse_product(argv[++i]))) {
      chosen.push_back(*product);
    } else {
      bool help = arg == "--help" || arg == "-h";
      fmt::print(help ? stdout : stderr,
                 "usage: cpu_matmul [--quick] [--isa scalar|avx2|avx512|avx512bf16|amx] [--shape MxKxN]...\n"
                 "                  [--threads N] [--dtype f32|bf16]\n"
                 "                  [--a-transposed] [--b-transposed] [--weight-f32]\n"
                 "  --a-transposed: the left operand is the transpose of a [K, M] input\n"
                 "  --b-transposed: the right operand is the transpose of an [N, K] input\n"
                 "  --weight-f32: bf16's right operand is an f32 input cast to bf16 (a weight)\n");
      return help ? 0 : 2;
    }
  }
  Isa isa;
  try {
    isa = sx::device::cpu::choose_isa(isa_name);
  } catch (const sx::device::DeviceError& e) {
    fmt::print(stderr, "{}\n", e.what());
    return 2;
  }
  double budget = quick ? 0.2 : 0.5;
  fmt::print("{}\n", sx::bench::host_line(isa));
  NumpyPeer numpy(SEXPGPU_BENCH_DIR "/numpy_peer.py");
  if (numpy.ok()) fmt::print("peer: numpy on {}\n", numpy.blas());
  else fmt::print("peer: none ({})\n", numpy.why_not());
  double copy1 = copy_bandwidth(1, budget), copy2 = copy_bandwidth(2, budget);
  fmt::print("copy bandwidth: {:.1f} GB/s on 1 thread, {:.1f} on 2\n\n", copy1, copy2);
  fmt::print("{:<5} {:>3} {:>16} {:>9} {:>9} {:>7} {:>9} {:>8} {:>9}  {}\n", "dtype", "thr", "M x K x N", "GFLOP/s",
             "peak", "% peak", "numpy", "x numpy", "GB/s B", "note");
  std::vector<Product> products = chosen;
  if (products.empty()) {
    std::vector<int64_t> ms = quick ? std::vector<int64_t>{1, 64, 512} : std::vector<int64_t>{1, 8, 64, 512, 2048};
    std::vector<std::pair<int64_t, int64_t>> kns =
        quick ? std::vector<std::pair<int64_t, int64_t>>{{768, 3072}}
              : std::vector<std::pair<int64_t, int64_t>>{{256, 256}, {768, 768}, {768, 3072}, {3072, 768}};
    for (int64_t m : ms) {
      for (auto [k, n] : kns) products.push_back({m, k, n});
      // A few rows over a B that comes from memory (GPT-2's vocabulary projection, its
      // rows not on cache lines): the rate B is read at from memory.
      if (m <= 8 && !quick) products.push_back({m, 768, 50257});
    }
  }
  double peak_budget = 0.1;
  for (DType dtype : dtypes) {
    for (int threads : thread_counts) {
      for (auto [m, k, n] : products) {
        std::optional<double> before = sx::bench::multiply_peak(isa, dtype, threads, peak_budget);
        double seconds = time_matmul(dtype, m, k, n, threads, isa, budget, form);
        std::optional<double> after = sx::bench::multiply_peak(isa, dtype, threads, peak_budget);
        std::optional<double> theirs =
            dtype == DType::f32 ? numpy.gflops(m, k, n, threads, budget) : std::optional<double>{};
        double ours = 2.0 * static_cast<double>(m * k * n) / seconds / 1e9;
        std::string note;
        std::string peak_text = "-", percent = "-";
        if (before && after) {
          double p = std::max(*before, *after);
          peak_text = fmt::format("{:.1f}", p);
          percent = fmt::format("{:.1f}%", 100 * ours / p);
          if (std::min(*before, *after) < 0.9 * p) note = "loaded (peak moved)";
          if (threads == 2) {
            std::optional<double> one = sx::bench::multiply_peak(isa, dtype, 1, peak_budget);
            if (one && p < 1.6 * *one) note = "loaded (2 threads < 1.6x 1)";
          }
        }
        std::string numpy_text = theirs ? fmt::format("{:.1f}", *theirs) : "-";
        std::string ratio = theirs ? fmt::format("{:.2f}", ours / *theirs) : "-";
        std::string bandwidth = "-";
        if (m <= 8) {
          const size_t bytes = static_cast<size_t>(k * n) * (dtype == DType::bf16 ? 2 : 4);
          const double gbs = static_cast<double>(bytes) / seconds / 1e9;
          const double copy = copy_bandwidth(threads, peak_budget, bytes);
          bandwidth = fmt::format("{:.1f}", gbs);
          note += fmt::format("{}{:.0f}% of a copy of B ({:.1f} GB/s), {:.0f}% of memory's", note.empty() ? "" : "; ",
                              100 * gbs / copy, copy, 100 * gbs / (threads == 1 ? copy1 : copy2));
        }
        fmt::print("{:<5} {:>3} {:>16} {:>9.1f} {:>9} {:>7} {:>9} {:>8} {:>9}  {}\n", sx::graph::dtype_name(dtype),
                   threads, fmt::format("{}x{}x{}", m, k, n), ours, peak_text, percent, numpy_text, ratio, bandwidth,
                   note);
        std::fflush(stdout);
      }
    }
  }
  fmt::print(
      "\npeak: 12 independent FMA chains per thread of the kernels' vector width. x numpy: our GFLOP/s over\n"
      "numpy's (f32 only; numpy has no bf16). GB/s B (M <= 8): bytes of B per second of a call, against\n"
      "memcpy of as many bytes (from the cache level B lies in between calls) and of 256 MiB (memory).\n");
  return 0;
}
