// bench/runtime: what running a compiled program costs beyond its kernels (issue 9).
//
//   build/bench/runtime [--seconds S]
//
// 1. A one-op program (a [4 4] add) run again and again on cpu, through
//    runtime::Program: the time per run, against PyTorch eager's per-op cost
//    (torch.add on [4 4] tensors) measured in the same run.
// 2. The forward of examples/tiny-lm run 1,000 times on its initial weights: the time
//    per forward and the allocations per forward after the first (the goal: 0).
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "../tests/unit/allocation_counter.h"
#include "graph/builder.h"
#include "graph/passes.h"
#include "lang/tracer.h"
#include "model/values.h"
#include "runtime/program.h"
#include "train/session.h"

namespace {

using Clock = std::chrono::steady_clock;
using namespace sx;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// The best time per call of `body` over `budget` seconds, in batches of `per_batch`.
template <class Body>
double best_per_call(double budget, int per_batch, Body body) {
  double best = 1e30;
  auto start = Clock::now();
  while (seconds_since(start) < budget) {
    auto t0 = Clock::now();
    for (int i = 0; i < per_batch; ++i) body();
    best = std::min(best, seconds_since(t0) / per_batch);
  }
  return best;
}

// PyTorch's per-op cost in microseconds, or the reason there is none.
std::string torch_add_microseconds(double seconds) {
  std::string command =
      fmt::format("echo '1 {}' | {} {}/torch_eager_peer.py", seconds, SEXPGPU_TORCH_PYTHON, SEXPGPU_BENCH_DIR);
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return "refuse cannot start python";
  char line[512];
  std::string header = fgets(line, sizeof line, pipe) ? line : "refuse no answer";
  std::string value = fgets(line, sizeof line, pipe) ? line : "";
  pclose(pipe);
  while (!header.empty() && header.back() == '\n') header.pop_back();
  while (!value.empty() && value.back() == '\n') value.pop_back();
  return header.starts_with("refuse") ? header : header + " " + value;
}

void one_op(double budget) {
  graph::Graph g;
  graph::Builder b(g);
  b.output("c", b.add(b.input("a", {4, 4}, graph::DType::f32), b.input("b", {4, 4}, graph::DType::f32)));
  auto device = device::make_device("cpu", {.cpu_cores = 1});
  runtime::Program program(*device, g, {{runtime::Role::data, "a"}, {runtime::Role::data, "b"}},
                           {{runtime::Role::value, "c"}});
  runtime::Store store(*device);
  device::Buffer a = device->upload(graph::Tensor(graph::DType::f32, {4, 4}));
  device::Buffer c = device->upload(graph::Tensor(graph::DType::f32, {4, 4}));
  std::vector<const device::Buffer*> fed{&a, &c};
  double ours = best_per_call(budget, 1000, [&] { program.run(store, fed); });
  std::string torch = torch_add_microseconds(budget);
  fmt::print("one-op program ([4 4] add, cpu, 1 thread): {:.3f} us per run (goal: under 2)\n", ours * 1e6);
  if (torch.starts_with("refuse")) {
    fmt::print("  PyTorch eager: not measured: {}\n", torch.substr(7));
  } else {
    double theirs = std::stod(torch.substr(torch.rfind(' ') + 1)) * 1e-6;
    fmt::print("  {} eager torch.add(out=): {:.3f} us per op; ours / theirs = {:.2f}\n",
               torch.substr(0, torch.rfind(' ')), theirs * 1e6, ours / theirs);
  }
}

void tiny_lm_forward() {
  train::SessionOptions options;
  options.interpreter.library_dirs = {SEXPGPU_LIB_DIR};
  train::Session session(std::move(options));
  session.load(std::string(SEXPGPU_SOURCE_DIR) + "/examples/tiny-lm/run.sx");
  auto device = device::make_device("cpu");
  lang::Value logits = session.interp().eval_text("(model (zeros [1 64] :dtype :i32))", "<bench>", session.top());
  std::vector<graph::NodeId> outputs{lang::as_tensor(logits)->node};
  graph::Graph forward = graph::extract(session.interp().tracer()->graph(), outputs);
  runtime::Store store(*device);
  std::vector<runtime::Binding> inputs;
  for (const auto& input : forward.inputs) inputs.push_back({runtime::Role::parameter, input.name});
  for (auto& [path, value] : model::initial_values(session.params(), session.seed(), *device)) {
    store.put(path, std::move(value));
  }
  runtime::Program program(*device, forward, inputs, {{runtime::Role::value, "logits"}});
  std::vector<const device::Buffer*> none;
  program.run(store, none);
  int64_t before = sx::testing::allocations();
  auto start = Clock::now();
  for (int i = 0; i < 1000; ++i) program.run(store, none);
  double per = seconds_since(start) / 1000;
  double allocations = static_cast<double>(sx::testing::allocations() - before) / 1000;
  fmt::print(
      "examples/tiny-lm forward ([1 64] tokens, cpu, all cores), 1,000 runs: {:.3f} ms per forward, "
      "{:.1f} allocations per forward (goal: 0)\n",
      per * 1e3, allocations);
}

}  // namespace

int main(int argc, char** argv) {
  double budget = 1.0;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
      budget = std::stod(argv[++i]);
    } else {
      std::puts("usage: runtime [--seconds S]  (time per measurement, default 1)");
      return std::strcmp(argv[i], "--help") == 0 ? 0 : 2;
    }
  }
  one_op(budget);
  tiny_lm_forward();
  return 0;
}
