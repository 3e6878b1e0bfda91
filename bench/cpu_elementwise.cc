// The cpu device's transcendental elementwise primitives on [8, 128, 1024] f32 (the
// activations of a batch of 8 by 128 tokens of dim 1024), on one thread: exp, tanh,
// erf, logistic and a GELU (the tanh form of lib/sexpgpu/ops.sx: 8 multiplies and
// adds around a tanh, each a primitive of its own, which the cpu device fuses into
// one pass), each as a compiled plan run on device buffers, under every instruction
// set this host runs. Beside them, measured
// in the same run: the same computation as a plain loop of glibc's functions, one
// element at a time, which is what the kernels did before graph/prims/lane_math.h.
// Then random_normal and random_uniform of that shape on 1 and 2 threads, beside the
// reference device's kernel, which the cpu device ran them by before device/cpu/random.cc.
//
//   build/bench/cpu_elementwise [--quick]
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "device/cpu/isa.h"
#include "device/device.h"
#include "graph/builder.h"

namespace {

using sx::device::cpu::Isa;
using sx::graph::DType;
using sx::graph::NodeId;
using sx::graph::Tensor;
using Clock = std::chrono::steady_clock;

const sx::graph::Shape kShape{8, 128, 1024};
constexpr int64_t kCount = 8 * 128 * 1024;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// The best time of one call of `run` over `budget_s`, in milliseconds.
double best_ms(const std::function<void()>& run, double budget_s) {
  run();
  double best = 1e30;
  for (auto start = Clock::now(); seconds_since(start) < budget_s;) {
    auto t0 = Clock::now();
    run();
    best = std::min(best, seconds_since(t0));
  }
  return best * 1e3;
}

struct Case {
  std::string name;
  std::function<NodeId(sx::graph::Builder&, NodeId)> build;
  float (*glibc)(float);
};

float gelu_glibc(float x) { return 0.5f * x * (1.0f + std::tanh(0.7978845608f * (x + 0.044715f * x * x * x))); }

const std::vector<Case>& cases() {
  static const std::vector<Case> list{
      {"exp", [](sx::graph::Builder& b, NodeId x) { return b.op("exp", {x}); }, [](float x) { return std::exp(x); }},
      {"tanh", [](sx::graph::Builder& b, NodeId x) { return b.op("tanh", {x}); }, [](float x) { return std::tanh(x); }},
      {"erf", [](sx::graph::Builder& b, NodeId x) { return b.op("erf", {x}); }, [](float x) { return std::erf(x); }},
      {"logistic", [](sx::graph::Builder& b, NodeId x) { return b.op("logistic", {x}); },
       [](float x) { return 1.0f / (1.0f + std::exp(-x)); }},
      {"gelu",
       [](sx::graph::Builder& b, NodeId x) {
         NodeId cube = b.op("mul", {b.op("mul", {b.literal(0.044715), x}), b.op("mul", {x, x})});
         NodeId inner = b.op("mul", {b.literal(0.7978845608028654), b.op("add", {x, cube})});
         NodeId one_plus = b.op("add", {b.literal(1.0), b.op("tanh", {inner})});
         return b.op("mul", {b.op("mul", {b.literal(0.5), x}), one_plus});
       },
       &gelu_glibc},
  };
  return list;
}

std::unique_ptr<sx::device::Device> cpu_device(Isa isa, int cores) {
  return sx::device::make_device(
      "cpu", sx::device::DeviceOptions{.cpu_cores = cores, .cpu_isa = std::string(sx::device::cpu::isa_name(isa))});
}

// The best time of a run of `graph`, compiled on `device`, on its one input `x`.
double time_plan(sx::device::Device& device, const sx::graph::Graph& graph, const Tensor& x, double budget_s) {
  auto plan = device.compile(graph);
  sx::device::Buffer in = device.upload(x);
  sx::device::Buffer out = device.allocate(plan->output_types()[0]);
  const sx::device::Buffer* ins[] = {&in};
  sx::device::Buffer* outs[] = {&out};
  return best_ms([&] { plan->run(ins, outs); }, budget_s);
}

double time_device(const Case& c, const Tensor& x, Isa isa, double budget_s) {
  sx::graph::Graph graph;
  sx::graph::Builder b(graph);
  b.output("y", c.build(b, b.input("x", kShape, DType::f32)));
  return time_plan(*cpu_device(isa, 1), graph, x, budget_s);
}

// random_normal or random_uniform of kShape in f32, from an i64 key input.
sx::graph::Graph random_graph(const std::string& op) {
  sx::graph::Graph graph;
  sx::graph::Builder b(graph);
  NodeId key = b.input("key", {}, DType::i64);
  b.output("y", op == "random_normal" ? b.random_normal(key, kShape) : b.random_uniform(key, kShape));
  return graph;
}

double time_glibc(const Case& c, const std::vector<float>& x, double budget_s) {
  std::vector<float> y(x.size());
  return best_ms(
      [&] {
        for (size_t i = 0; i < x.size(); ++i) y[i] = c.glibc(x[i]);
      },
      budget_s);
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = argc > 1 && std::string(argv[1]) == "--quick";
  if (argc > 1 && !quick) {
    fmt::print(std::string(argv[1]) == "--help" ? stdout : stderr, "usage: cpu_elementwise [--quick]\n");
    return std::string(argv[1]) == "--help" ? 0 : 2;
  }
  double budget = quick ? 0.3 : 1.0;
  std::mt19937 rng(42);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> values(kCount);
  for (float& v : values) v = normal(rng);
  Tensor x(DType::f32, kShape);
  std::copy(values.begin(), values.end(), x.data<float>());
  std::vector<Isa> isas = sx::device::cpu::host_isas();
  std::string header = fmt::format("{:<30} {:>9}", "[8 128 1024] f32, 1 thread, ms", "glibc");
  for (Isa isa : isas) header += fmt::format(" {:>9}", sx::device::cpu::isa_name(isa));
  fmt::print("{}\n", header);
  for (const Case& c : cases()) {
    std::string row = fmt::format("{:<30} {:>9.2f}", c.name, time_glibc(c, values, budget));
    for (Isa isa : isas) row += fmt::format(" {:>9.2f}", time_device(c, x, isa, budget));
    fmt::print("{}\n", row);
    std::fflush(stdout);
  }
  fmt::print(
      "\nglibc: a plain loop of std::exp, std::tanh, std::erf (one element at a time); the rest: the cpu\n"
      "device's plan under that instruction set (scalar: our functions' scalar instance).\n");
  header = fmt::format("\n{:<30} {:>9}", "[8 128 1024] f32, ms", "reference");
  for (Isa isa : isas) {
    for (int cores : {1, 2})
      header += fmt::format(" {:>9}", fmt::format("{} {}t", sx::device::cpu::isa_name(isa), cores));
  }
  fmt::print("{}\n", header);
  Tensor key = Tensor::scalar(DType::i64, 7);
  for (std::string op : {"random_normal", "random_uniform"}) {
    sx::graph::Graph graph = random_graph(op);
    std::string row =
        fmt::format("{:<30} {:>9.2f}", op, time_plan(*sx::device::make_device("reference"), graph, key, budget));
    for (Isa isa : isas) {
      for (int cores : {1, 2}) row += fmt::format(" {:>9.2f}", time_plan(*cpu_device(isa, cores), graph, key, budget));
    }
    fmt::print("{}\n", row);
    std::fflush(stdout);
  }
  fmt::print(
      "\nreference: the reference device's kernel (one thread, a Philox block and a set_value per element);\n"
      "the rest: the cpu device's plan under that instruction set on 1 and 2 threads.\n");
  return 0;
}
