// Eager evaluation (`eval`, the REPL): a value's tensors run as a program of
// the part of the trace they need. A session's trace grows with every entry;
// running an entry must not grow with it.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>

#include "lang/printer.h"
#include "lang/tracer.h"
#include "train/session.h"

namespace sx::train {
namespace {

SessionOptions options() {
  SessionOptions o;
  o.interpreter.library_dirs = {SEXPGPU_LIB_DIR};
  return o;
}

// The tenth percentile: what an entry costs when no other process takes the core.
double typical(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 10];
}

// The seconds of each of 1,000 REPL entries that run a model on a batch, each followed,
// as in the REPL, by forget_unreachable.
std::vector<double> thousand_entries() {
  Session session(options());
  session.start_empty();
  auto device = device::make_device("cpu", {.cpu_cores = 1});
  session.run_tensors_on(*device);
  session.interp().eval_text("(require \"sexpgpu/nn\") (defvar model (mlp 16 32 :out 4))", "<setup>", session.top());
  std::vector<double> seconds;
  for (int i = 0; i < 1000; ++i) {
    auto start = std::chrono::steady_clock::now();
    lang::Value v = session.interp().eval_text("(sum (model (* (ones [2 16]) " + std::to_string(i % 7) + ".0)))",
                                               "<entry>", session.top());
    v = session.run(v, *device);
    session.forget_unreachable();
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    EXPECT_TRUE(lang::print(v).starts_with("(tensor")) << lang::print(v);
  }
  return seconds;
}

TEST(Eager, ASessionOfAThousandEntriesDoesNotSlowDown) {
  // A session that slows down as it grows does so every time; a busy machine only
  // sometimes: three tries.
  std::string failures;
  for (int attempt = 0; attempt < 3; ++attempt) {
    std::vector<double> seconds = thousand_entries();
    double first = typical({seconds.begin(), seconds.begin() + 100});
    double last = typical({seconds.end() - 100, seconds.end()});
    if (last < 1.5 * first) return;
    failures += fmt::format("an entry took {:.3f} ms among the first 100, {:.3f} ms among the last 100\n", first * 1e3,
                            last * 1e3);
  }
  ADD_FAILURE() << failures;
}

// What a session's entries leave in its trace is dropped once nothing reaches it, and
// what the session still holds keeps its value: a tensor defined at the start, a model's
// parameters, and a gradient taken after the trace was compacted.
TEST(Eager, ASessionDropsWhatItsEntriesLeftBehind) {
  Session session(options());
  session.start_empty();
  auto device = device::make_device("cpu", {.cpu_cores = 1});
  session.run_tensors_on(*device);
  auto eval = [&](const std::string& text) {
    return lang::print(session.run(session.interp().eval_text(text, "<entry>", session.top()), *device));
  };
  eval("(require \"sexpgpu/nn\") (defvar model (mlp 16 32 :out 4))");
  eval("(defvar traced (model (ones [2 16])))");
  const std::string kept = eval("traced");
  const std::string gradient_of = "((grad (lambda (x) (sum (* x (model (ones [1 16])))))) (ones [1 4]))";
  const std::string gradient = eval(gradient_of);
  const graph::Graph& trace = session.interp().tracer()->graph();
  size_t largest = 0;
  for (int i = 0; i < 2000; ++i) {
    eval("(sum (model (* (ones [2 16]) " + std::to_string(i % 7) + ".0)))");
    session.forget_unreachable();
    largest = std::max(largest, trace.nodes.size());
  }
  // Without it, 2,000 entries of about 20 nodes each.
  EXPECT_LT(largest, 2 * 4096u);
  EXPECT_EQ(eval("traced"), kept);
  EXPECT_EQ(eval(gradient_of), gradient);
  EXPECT_EQ(gradient, eval("(model (ones [1 16]))"));
}

TEST(Eager, AParameterKeepsItsValueOnTheDevice) {
  Session session(options());
  session.start_empty();
  auto device = device::make_device("cpu");
  session.run_tensors_on(*device);
  session.interp().eval_text("(require \"sexpgpu/nn\") (defvar model (linear 3 2))", "<setup>", session.top());
  auto run = [&] {
    return lang::print(session.run(session.interp().eval_text("(model (ones [1 3]))", "<e>", session.top()), *device));
  };
  std::string first = run();
  EXPECT_EQ(run(), first);
  // The same value on another device: moved there, not initialized again.
  auto reference = device::make_device("reference");
  EXPECT_EQ(
      lang::print(session.run(session.interp().eval_text("(model (ones [1 3]))", "<e>", session.top()), *reference)),
      first);
}

}  // namespace
}  // namespace sx::train
