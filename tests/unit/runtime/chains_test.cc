// The library's GELU (sexpgpu/ops) and its gradient, as a model's step traces them, run
// on the cpu device by their kernels (a `gelu` node and its `composite_gradient`), in f32
// and with bf16 products; a transformer block's attention weights (a softmax), its
// layer-norms and their gradients (by x, weight and bias) by their kernels: each with the
// bits of the scalar instruction set on every instruction set this processor runs. The
// norms' weight and bias gradients by their kernels keep the bits the block's gradients
// had with them expanded. The library's cross-entropy of a layer's logits and its
// gradient run by their kernels too, in f32 and bf16. A change to the library or to
// autodiff that leaves the kernels behind fails here rather than only slowing the models
// down.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "device/cpu/isa.h"
#include "graph/autodiff.h"
#include "graph/builder.h"
#include "graph/passes.h"
#include "lang/tracer.h"
#include "model/values.h"
#include "occurrences.h"
#include "runtime/program.h"
#include "train/session.h"
#include "train/step.h"

namespace sx::runtime {
namespace {

using sx::testing::occurrences;

namespace cpu = device::cpu;

// A linear layer whose output is cast to bf16: logits of bf16.
constexpr const char* kBf16Head =
    "(defmodel bf16-head (in out) (let ((head (linear in out))) (lambda (x) (cast (head x) :bf16)))) ";

// A library model's loss and its gradients by every parameter, traced from `model`, an
// expression of sexpgpu/nn, on an input of `shape`: the sum of its output's squares, or
// where `classified` (and bf16-head defined) the library's cross-entropy of its output
// (classes on the last axis) against the input "data.targets", an output too.
graph::Graph model_gradient(train::Session& session, const std::string& model, const graph::Shape& shape, bool bf16,
                            bool classified = false) {
  session.start_empty();
  const std::string definitions = classified ? kBf16Head : "";
  session.interp().eval_text("(require \"sexpgpu/nn\") " + definitions + "(defvar model " + model + ")", "<test>",
                             session.top());
  session.resolve();
  const auto& tracer = session.interp().tracer();
  graph::Builder& b = tracer->builder();
  lang::Value x = lang::make_tensor(tracer, b.input("data.x", shape, graph::DType::f32));
  lang::Value y = train::call(session, *session.top().lookup(lang::intern("model")), {x});
  const graph::NodeId out = lang::as_tensor(y)->node;
  graph::NodeId loss;
  if (classified) {
    const graph::Shape rows(b.shape(out).begin(), b.shape(out).end() - 1);
    lang::Value targets = lang::make_tensor(tracer, b.input("data.targets", rows, graph::DType::i32));
    loss =
        lang::as_tensor(train::call(session, *session.top().lookup(lang::intern("cross-entropy")), {y, targets}))->node;
  } else {
    std::vector<int64_t> axes;
    for (size_t axis = 0; axis < shape.size(); ++axis) axes.push_back(static_cast<int64_t>(axis));
    loss = b.sum(b.mul(out, out), axes);
  }
  std::vector<graph::NodeId> wrt;
  for (const auto& p : session.params().params) wrt.push_back(p.decl->node);
  std::vector<graph::NodeId> outputs = graph::gradients(b, loss, wrt);
  if (classified) outputs.push_back(loss);
  outputs.push_back(out);
  graph::Graph extracted = graph::extract(tracer->graph(), outputs);
  return bf16 ? graph::bf16_products(extracted) : extracted;
}

struct Ran {
  std::vector<graph::Tensor> outputs;
  std::string profile;
};

// `g` with the gradients of the norms' weights and biases expanded: as the cpu device ran
// them before they had kernels (and, as their gradients then read their intermediates,
// the norms with them).
graph::Graph norm_parameter_gradients_expanded(const graph::Graph& g) {
  return graph::expand_composites(g, [](const graph::Graph&, const graph::Node& node) {
    return node.op() != graph::PrimId::composite_gradient || node.attrs.get_int("input") == 0;
  });
}

// What the model's step gives on `isa`, its targets (where `classified`) each row's
// index times 31 among its classes.
Ran run_on(cpu::Isa isa, const std::string& model, const graph::Shape& shape, bool bf16, bool classified = false,
           bool expand_norm_parameter_gradients = false) {
  train::SessionOptions options;
  options.interpreter.library_dirs = {SEXPGPU_LIB_DIR};
  train::Session session(options);
  graph::Graph g = model_gradient(session, model, shape, bf16, classified);
  if (expand_norm_parameter_gradients) g = norm_parameter_gradients_expanded(g);
  auto device = device::make_device("cpu", {.cpu_cores = 1, .cpu_isa = std::string(cpu::isa_name(isa))});
  Store store(*device);
  for (auto& [path, value] : model::initial_values(session.params(), session.seed(), *device))
    store.put(path, std::move(value));
  std::vector<Binding> inputs, outputs;
  for (const auto& input : g.inputs)
    inputs.push_back({input.name.starts_with("data.") ? Role::data : Role::parameter, input.name});
  for (const auto& output : g.outputs) outputs.push_back({Role::value, output.name});
  graph::Tensor x(graph::DType::f32, shape);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>((i * 7919) % 211 - 105) / 37.0f;
  Ran ran;
  setenv("SEXPGPU_CPU_PROFILE", "1", 1);
  ::testing::internal::CaptureStderr();
  {
    Program program(*device, g, inputs, outputs);
    std::vector<device::Buffer> fed;
    for (const auto& input : g.inputs) {
      if (input.name == "data.x") fed.push_back(device->upload(x));
      if (input.name != "data.targets") continue;
      const graph::Node& targets = g.node(input.node);
      const int64_t classes = g.node(g.outputs.back().node).shape.back();
      graph::Tensor t(graph::DType::i32, targets.shape);
      for (int64_t i = 0; i < t.numel(); ++i) t.data<int32_t>()[i] = static_cast<int32_t>(i * 31 % classes);
      fed.push_back(device->upload(t));
    }
    std::vector<const device::Buffer*> pointers;
    for (const device::Buffer& buffer : fed) pointers.push_back(&buffer);
    for (const auto& result : program.run(store, pointers)) ran.outputs.push_back(device->download(result));
  }
  ran.profile = ::testing::internal::GetCapturedStderr();
  unsetenv("SEXPGPU_CPU_PROFILE");
  return ran;
}

constexpr const char* kMlp = "(mlp 64 256 :out 64)";

TEST(Chains, TheLibrarysGeluAndItsGradientRunByTheirKernelsWithTheScalarBits) {
  for (bool bf16 : {false, true}) {
    SCOPED_TRACE(bf16 ? "bf16 products" : "f32");
    const Ran interpreted = run_on(cpu::Isa::scalar, kMlp, {32, 64}, bf16);
    for (cpu::Isa isa : cpu::host_isas()) {
      if (isa == cpu::Isa::scalar || isa == cpu::Isa::amx) continue;  // amx: other bf16 products
      SCOPED_TRACE(cpu::isa_name(isa));
      const Ran chained = run_on(isa, kMlp, {32, 64}, bf16);
      // The forward's gelu and the gradient's, by their kernels (in f32 between the bf16
      // products' casts).
      EXPECT_EQ(occurrences(chained.profile, "gelu of f32[32, 256]"), 1u) << chained.profile;
      EXPECT_EQ(occurrences(chained.profile, "gelu's gradient (input 0) of f32[32, 256] and f32[32, 256]"), 1u)
          << chained.profile;
      ASSERT_EQ(chained.outputs.size(), interpreted.outputs.size());
      for (size_t k = 0; k < chained.outputs.size(); ++k)
        EXPECT_TRUE(chained.outputs[k] == interpreted.outputs[k]) << "output " << k;
    }
  }
}

TEST(Chains, TheLibrarysSoftmaxLayerNormAndTheirGradientsRunByTheirKernelsWithTheScalarBits) {
  // Heads of 64 (scores times 1/8) and of 32 (scores divided by sqrt(32)), rows of 128
  // and 64 (a mean times 1/128 or 1/64) and of 96 (a mean divided by 96, heads of 48), in
  // f32 and with bf16 products.
  for (bool bf16 : {false, true}) {
    for (int dim : {128, 64, 96}) {
      const std::string block = "(transformer-block " + std::to_string(dim) + " 2)";
      SCOPED_TRACE(block + (bf16 ? " with bf16 products" : ""));
      const graph::Shape shape{2, 32, dim};
      const Ran interpreted = run_on(cpu::Isa::scalar, block, shape, bf16);
      const std::string rows = "f32[2, 32, " + std::to_string(dim) + "]", weights = "f32[2, 2, 32, 32]";
      const std::string column = "f32[" + std::to_string(dim) + "]";
      const std::string norm_operands = column + " and " + column;
      // With bf16 products the softmax and the layer-norm also write the casts the products read.
      const std::string cast = bf16 ? " and its cast to bf16" : "";
      const std::vector<std::string> kernels{"softmax of " + weights + cast,
                                             "softmax's gradient (input 0) of " + weights + " and " + weights,
                                             "layer_norm of " + rows + " and " + norm_operands + cast,
                                             "layer_norm's gradient (input 0) of " + rows + " and " + norm_operands,
                                             "layer_norm's gradient (input 1) of " + rows + " and " + norm_operands,
                                             "layer_norm's gradient (input 2) of " + rows + " and " + norm_operands};
      for (cpu::Isa isa : cpu::host_isas()) {
        if (isa == cpu::Isa::scalar || (bf16 && isa == cpu::Isa::amx)) continue;  // amx: other bf16 products
        SCOPED_TRACE(cpu::isa_name(isa));
        const Ran chained = run_on(isa, block, shape, bf16);
        for (const std::string& kernel : kernels)
          EXPECT_EQ(occurrences(chained.profile, kernel), 1u) << kernel << "\n" << chained.profile;
        ASSERT_EQ(chained.outputs.size(), interpreted.outputs.size());
        for (size_t k = 0; k < chained.outputs.size(); ++k)
          EXPECT_TRUE(chained.outputs[k] == interpreted.outputs[k]) << "output " << k;
      }
    }
  }
}

// A transformer block's gradients have the same bits whether the norms' weight and bias
// gradients run by their kernels or as their decompositions (with the norms then
// expanded too): the bits a training step had before those kernels.
TEST(Chains, TheNormsWeightAndBiasGradientsByTheirKernelsKeepTheDecompositionsBits) {
  const cpu::Isa isa = cpu::choose_isa("");
  const std::string block = "(transformer-block 96 2)";
  const Ran kernels = run_on(isa, block, {2, 32, 96}, false);
  const Ran expanded = run_on(isa, block, {2, 32, 96}, false, false, true);
  EXPECT_EQ(occurrences(kernels.profile, "layer_norm's gradient (input 1)"), 1u) << kernels.profile;
  EXPECT_EQ(occurrences(expanded.profile, "layer_norm's gradient"), 0u) << expanded.profile;
  ASSERT_EQ(kernels.outputs.size(), expanded.outputs.size());
  for (size_t k = 0; k < kernels.outputs.size(); ++k)
    EXPECT_TRUE(kernels.outputs[k] == expanded.outputs[k]) << "output " << k;
}

// Logits of 300 classes (a vector's width does not divide them) from a linear layer: the
// loss's cross-entropy and its gradient with respect to the logits by their kernels, in
// f32 and in bf16 (the logits cast).
TEST(Chains, TheLibrarysCrossEntropyAndItsGradientRunByTheirKernelsWithTheScalarBits) {
  for (const auto& [model, dtype] :
       {std::pair<std::string, std::string>{"(linear 64 300)", "f32"}, {"(bf16-head 64 300)", "bf16"}}) {
    SCOPED_TRACE(model);
    const Ran interpreted = run_on(cpu::Isa::scalar, model, {32, 64}, false, true);
    for (cpu::Isa isa : cpu::host_isas()) {
      if (isa == cpu::Isa::scalar) continue;
      SCOPED_TRACE(cpu::isa_name(isa));
      const Ran chained = run_on(isa, model, {32, 64}, false, true);
      EXPECT_EQ(occurrences(chained.profile, "cross_entropy of " + dtype + "[32, 300] and i32[32]"), 1u)
          << chained.profile;
      EXPECT_EQ(occurrences(chained.profile, "cross_entropy's gradient (input 0) of " + dtype + "[32, 300]"), 1u)
          << chained.profile;
      ASSERT_EQ(chained.outputs.size(), interpreted.outputs.size());
      for (size_t k = 0; k < chained.outputs.size(); ++k)
        EXPECT_TRUE(chained.outputs[k] == interpreted.outputs[k]) << "output " << k;
    }
  }
}

}  // namespace
}  // namespace sx::runtime
