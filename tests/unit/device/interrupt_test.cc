// A plan's run stops between two operations once the flag given to stop_runs_when is
// set (the REPL's Ctrl-C), on every device, before it writes any output: a donated input
// keeps its value.
#include "device/interrupt.h"

#include "util.h"

namespace sx::device::testing {
namespace {

using graph::Builder;

TEST(Interrupt, ARunStopsBeforeWritingAnyOutput) {
  Graph graph;
  Builder b(graph);
  b.output("y", b.neg(b.exp(b.input("x", {2}, DType::f32))));
  for (const char* device : {"cpu", "reference"}) {
    auto on = make_device(device);
    auto plan = on->compile(graph);
    Tensor one(DType::f32, {2});
    one.set_value(0, 1.0);
    one.set_value(1, 1.0);
    Buffer x = on->upload(one);
    std::vector<const Buffer*> inputs{&x};
    std::vector<Buffer*> outputs{&x};  // donated: written over its input

    std::atomic<bool> interrupted{true};
    stop_runs_when(&interrupted);
    EXPECT_THROW(plan->run(inputs, outputs), Interrupted) << device;
    EXPECT_TRUE(same_bits(on->download(x), one)) << device << ": the output was written";

    interrupted = false;
    plan->run(inputs, outputs);
    EXPECT_FALSE(same_bits(on->download(x), one)) << device << ": the run after did not run";
    stop_runs_when(nullptr);
  }
}

}  // namespace
}  // namespace sx::device::testing
