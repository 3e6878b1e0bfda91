// The compile path: a program runs the optimized graph (identities, repeated work and
// constant parts gone), with the inputs and outputs it was given, and the same bits as
// the graph compiled as it is, on reference and on cpu: constants are folded by the
// device's own kernels, which on cpu sum a matmul in another order than reference.
#include "runtime/compile.h"

#include <gtest/gtest.h>

#include "device/reference/reference.h"
#include "graph/builder.h"
#include "graph/errors.h"
#include "graph/passes.h"
#include "runtime/program.h"

namespace sx::runtime {
namespace {

using graph::DType;
using graph::NodeId;
using graph::Tensor;

// Values whose sums depend on their order: no two elements alike, of mixed magnitudes.
Tensor uneven(graph::Shape shape, double seed) {
  std::vector<double> values(static_cast<size_t>(graph::numel(shape)));
  for (size_t i = 0; i < values.size(); ++i) {
    double k = seed + static_cast<double>(i);
    values[i] = (static_cast<double>(static_cast<int64_t>(k * 7919) % 1000) - 500.0) / (1.0 + k * 0.37);
  }
  return Tensor::from_doubles(DType::f32, std::move(shape), values);
}

size_t count_op(const graph::Graph& g, std::string_view op) {
  size_t n = 0;
  for (const graph::Node& node : g.nodes) n += node.op_name() == op;
  return n;
}

// y = x w + 0 + c, where c = tanh(a w) + sum(b) is made of constants alone;
// z = exp(x) + exp(x).
graph::Graph graph_with_work_to_remove() {
  graph::Graph g;
  graph::Builder b(g);
  NodeId x = b.input("x", {8, 256}, DType::f32);
  NodeId w = b.constant(uneven({256, 8}, 1));
  NodeId c = b.add(b.tanh(b.matmul(b.constant(uneven({8, 256}, 2)), w)),
                   b.broadcast_to(b.sum(b.constant(uneven({4000}, 3)), {0}), {8, 8}));
  b.output("y", b.add(b.add(b.matmul(x, w), b.literal(0.0)), c));
  b.output("z", b.add(b.exp(x), b.exp(x)));
  return g;
}

TEST(Compile, AProgramRunsTheOptimizedGraphWithTheSameBitsOnEachDevice) {
  graph::Graph g = graph_with_work_to_remove();
  // The constant part alone: cpu and reference give it different bits, so folding it
  // with the reference kernels would change what a cpu program computes.
  graph::Graph constant_part;
  {
    graph::Builder b(constant_part);
    b.output("c", b.matmul(b.constant(uneven({8, 256}, 2)), b.constant(uneven({256, 8}, 1))));
    b.output("s", b.sum(b.constant(uneven({4000}, 3)), {0}));
  }
  auto cpu = device::make_device("cpu");
  std::vector<Tensor> on_cpu = cpu->compile(constant_part)->run_host({});
  std::vector<Tensor> on_reference = device::run_reference(constant_part, {});
  EXPECT_TRUE(on_cpu[0] != on_reference[0] || on_cpu[1] != on_reference[1])
      << "the test needs a constant part whose bits differ between the devices";

  Tensor x = uneven({8, 256}, 4);
  for (const char* name : {"reference", "cpu"}) {
    auto device = device::make_device(name);
    Program program(*device, g, {{Role::data, "x"}}, {{Role::value, "y"}, {Role::value, "z"}});
    const graph::Graph& optimized = program.graph();
    EXPECT_EQ(count_op(optimized, "tanh"), 0u) << name;
    EXPECT_EQ(count_op(optimized, "sum"), 0u) << name;
    EXPECT_EQ(count_op(optimized, "matmul"), 1u) << name;  // x w; a w is folded
    EXPECT_EQ(count_op(optimized, "exp"), 1u) << name;
    EXPECT_EQ(count_op(optimized, "add"), 2u) << name;  // (x w) + c and e + e
    ASSERT_EQ(optimized.inputs.size(), 1u);
    EXPECT_EQ(optimized.inputs[0].name, "x");
    ASSERT_EQ(optimized.outputs.size(), 2u);
    EXPECT_EQ(optimized.outputs[0].name, "y");
    EXPECT_EQ(optimized.outputs[1].name, "z");

    Store store(*device);
    device::Buffer fed = device->upload(x);
    std::vector<const device::Buffer*> feed{&fed};
    auto results = program.run(store, feed);
    std::vector<Tensor> as_given = device->compile(g)->run_host(std::vector<Tensor>{x});
    EXPECT_EQ(device->download(results[0]), as_given[0]) << name;
    EXPECT_EQ(device->download(results[1]), as_given[1]) << name;
  }
}

// The reference device runs no composite itself: it runs the decomposition, which the
// compiled graph holds in its place, and says so. The cpu device runs these forms by its
// kernels, and keeps their nodes. Either way the bits are the decomposition's.
TEST(Compile, ACompositeRunsAsItsDecompositionNamedAsAFallback) {
  graph::Graph g;
  graph::Builder b(g);
  NodeId x = b.input("x", {4, 8}, DType::f32);
  NodeId p = b.op("softmax", {x});
  b.output("y", b.op("gelu", {b.op("softmax", {p})}, {{"form", std::string("erf")}}));
  for (const char* name : {"reference", "cpu"}) {
    auto device = device::make_device(name);
    Compiled compiled = compile(*device, g);
    const bool kernels = std::string(name) == "cpu";
    const std::vector<graph::PrimId> decomposed =
        kernels ? std::vector<graph::PrimId>{} : std::vector{graph::PrimId::softmax, graph::PrimId::gelu};
    EXPECT_EQ(compiled.decomposed, decomposed) << name;
    EXPECT_EQ(count_op(compiled.graph, "softmax") + count_op(compiled.graph, "gelu"), kernels ? 3u : 0u) << name;
    EXPECT_EQ(count_op(compiled.graph, "erf"), kernels ? 0u : 1u) << name;
    Tensor values = uneven({4, 8}, 5);
    EXPECT_EQ(compiled.plan->run_host(std::vector<Tensor>{values})[0],
              device->compile(graph::expand_composites(g))->run_host(std::vector<Tensor>{values})[0])
        << name;
  }
  graph::Graph plain = graph_with_work_to_remove();
  EXPECT_TRUE(compile(*device::make_device("cpu"), plain).decomposed.empty());
}

// The composites the cpu device runs by its kernels give the bits of their decompositions
// compiled in their place (expanded before the optimizer), in f32 and bf16.
TEST(Compile, TheCpuCompositeKernelsGiveTheBitsOfTheirDecompositionsCompiled) {
  for (DType dtype : {DType::f32, DType::bf16}) {
    graph::Graph g;
    graph::Builder b(g);
    NodeId x = b.input("x", {6, 40}, dtype);
    // A weight and a bias of about unit size: the softmax's rows are not one-hot.
    const auto unit = [&](double seed) { return b.cast(b.div(b.constant(uneven({40}, seed)), b.literal(300)), dtype); };
    NodeId w = unit(3), bias = unit(4);
    NodeId normed = b.op("layer_norm", {x, w, bias}, {{"eps", 1e-5}, {"weight", int64_t{1}}, {"bias", int64_t{1}}});
    NodeId curved = b.op("gelu", {normed}, {{"form", std::string("tanh")}});
    NodeId scaled = b.op("rms_norm", {b.op("softmax", {curved})}, {{"eps", 1e-6}, {"weight", int64_t{0}}});
    b.output("y", b.op("log_softmax", {scaled}));
    auto cpu = device::make_device("cpu");
    Compiled kernels = compile(*cpu, g), decomposed = compile(*cpu, graph::expand_composites(g));
    EXPECT_EQ(count_op(kernels.graph, "layer_norm") + count_op(kernels.graph, "log_softmax"), 2u);
    const Tensor f32 = uneven({6, 40}, 5);
    Tensor in_dtype(dtype, f32.shape());
    for (int64_t i = 0; i < f32.numel(); ++i) in_dtype.set_value(i, f32.value(i));
    const std::vector<Tensor> values{in_dtype};
    EXPECT_EQ(kernels.plan->run_host(values)[0], decomposed.plan->run_host(values)[0]) << graph::dtype_name(dtype);
  }
}

TEST(Compile, VerifiesTheGraphAsGivenBeforeOptimizingIt) {
  graph::Graph g;
  graph::Builder b(g);
  NodeId c = b.neg(b.neg(b.constant(Tensor::from_doubles(DType::f32, {2}, std::vector<double>{1, 2}))));
  NodeId e = b.exp(b.input("x", {2}, DType::f32));
  b.output("y", b.add(e, c));
  g.nodes[e].shape = {3};
  auto device = device::make_device("cpu");
  // Named by its id in the graph given, not in one the passes renumbered (folding drops
  // the inner neg).
  try {
    compile(*device, g);
    ADD_FAILURE() << "compiled a graph that is not well formed";
  } catch (const graph::VerifyError& error) {
    EXPECT_EQ(std::string(error.what()), "verify: node 4 (exp f32[3]): its rule gives f32[2]");
  }
}

}  // namespace
}  // namespace sx::runtime
