// Opening what `serve` is given: a checkpoint, a location, an export directory; the
// weights (the :ema averages, or --trained); each way the files can be wrong, a coded
// error naming the file; and the flags that shape the model (--output, --at, --precision).
#include "serve/model.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "graph/passes.h"
#include "io/checkpoint.h"
#include "io/safetensors.h"
#include "serve/errors.h"
#include "serve/fixture.h"

namespace sx::serve {
namespace {

using testing::TempDir;

template <class Error>
std::string error_of(const std::function<void()>& body, const std::string& code) {
  try {
    body();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "expected " << code;
  return {};
}

std::string serve_error(const std::string& operand, const std::string& code, const ServeOptions& options = {}) {
  return error_of<ServeError>([&] { open_model(resolve_operand(operand), options); }, code);
}

TEST(ServeModel, CheckpointLocationMeansItsNewest) {
  TempDir tmp;
  auto m = testing::tiny_lm();
  testing::write_checkpoint(tmp.path(), m, 10);
  std::string newest = testing::write_checkpoint(tmp.path(), m, 20);
  ModelSource source = resolve_operand(tmp.path());
  EXPECT_EQ(source.folder, newest);
  EXPECT_TRUE(source.is_checkpoint);
  EXPECT_EQ(resolve_operand(tmp / "step-00000010").folder, tmp / "step-00000010");
  ServedModel served = open_model(source, {});
  EXPECT_EQ(served.about.checkpoint, newest);
  EXPECT_EQ(served.about.step, 20);
  EXPECT_EQ(served.about.slug, "tiny");
  EXPECT_EQ(served.about.precision, "f32");
  EXPECT_EQ(served.about.inputs, m.inputs);
  EXPECT_EQ(served.about.outputs, m.outputs);
  ASSERT_EQ(served.weights.size(), 3u);
  EXPECT_EQ(served.weights[0].second, m.weights[0].second);
}

TEST(ServeModel, ExportDirectoryIsServedAndRefusesTrained) {
  TempDir tmp;
  auto m = testing::tiny_lm();
  testing::write_model(tmp / "tiny-model", m);
  ModelSource source = resolve_operand(tmp / "tiny-model");
  EXPECT_FALSE(source.is_checkpoint);
  EXPECT_EQ(open_model(source, {}).about.checkpoint, "step-00000020");
  std::string message = serve_error(tmp / "tiny-model", "E-SERVE-004", {.trained = true});
  EXPECT_NE(message.find("export directory"), std::string::npos) << message;
}

TEST(ServeModel, EmaAveragesUnlessTrained) {
  TempDir tmp;
  auto m = testing::tiny_lm();
  std::string folder = testing::write_checkpoint(tmp.path(), m);
  graph::Tensor averaged = testing::pseudo_random({testing::kWindow, testing::kWidth}, 99);
  io::write_safetensors(folder + "/ema.safetensors", {{"model.positions", averaged}});
  auto weight = [](const ServedModel& s, const std::string& path) {
    for (const auto& [name, value] : s.weights) {
      if (name == path) return value;
    }
    return graph::Tensor();
  };
  ServedModel ema = open_model(resolve_operand(folder), {});
  EXPECT_EQ(weight(ema, "model.positions"), averaged);
  EXPECT_EQ(weight(ema, "model.head.weight"), m.weights[2].second);  // not averaged: the trained one
  ServedModel trained = open_model(resolve_operand(folder), {.trained = true});
  EXPECT_EQ(weight(trained, "model.positions"), m.weights[1].second);
}

TEST(ServeModel, CheckpointWithoutModelSaysExportWritesOne) {
  TempDir tmp;
  std::string folder = testing::write_checkpoint(tmp.path(), testing::tiny_lm());
  std::filesystem::remove(folder + "/model.json");
  std::string message;
  try {
    open_model(resolve_operand(tmp.path()), {});
  } catch (const ServeError& e) {
    EXPECT_EQ(e.code(), "E-SERVE-001");
    message = std::string(e.what()) + " / " + e.help();
  }
  EXPECT_NE(message.find(folder + ": the checkpoint holds no model"), std::string::npos) << message;
  EXPECT_NE(message.find("sexpgpu export tiny.sx --checkpoint " + folder), std::string::npos) << message;
}

TEST(ServeModel, NothingToServeIsNoCheckpoint) {
  TempDir tmp;
  error_of<io::CheckpointError>([&] { resolve_operand(tmp / "absent"); }, io::kNoCheckpoint);
  error_of<io::CheckpointError>([&] { resolve_operand(tmp.path()); }, io::kNoCheckpoint);
}

TEST(ServeModel, MalformedModelJsonNamesTheFile) {
  TempDir tmp;
  auto m = testing::tiny_lm();
  std::string folder = testing::write_checkpoint(tmp.path(), m);
  std::string path = folder + "/model.json";
  auto with = [&](const std::string& text) {
    testing::write_text(path, text);
    return serve_error(folder, "E-SERVE-002");
  };
  EXPECT_NE(with("{not json").find(path + ": not JSON"), std::string::npos);
  nlohmann::json doc = testing::model_json(m);
  doc["format"] = "other";
  EXPECT_NE(with(doc.dump()).find("the format is \"other\""), std::string::npos);
  doc = testing::model_json(m);
  doc["version"] = 2;
  EXPECT_NE(with(doc.dump()).find("newer than this build reads"), std::string::npos);
  doc = testing::model_json(m);
  doc.erase("parameters");
  EXPECT_NE(with(doc.dump()).find("no \"parameters\""), std::string::npos);
  doc = testing::model_json(m);
  doc["inputs"][0]["shape"] = {1, 9};
  EXPECT_NE(with(doc.dump()).find("`inputs` is listed as [1, 9] i32 but the graph has [1, 8] i32"), std::string::npos);
  doc = testing::model_json(m);
  doc["graph"]["nodes"][0]["op"] = "no-such-op";
  EXPECT_NE(with(doc.dump()).find("unknown op"), std::string::npos);
  doc = testing::model_json(m);
  doc["parameters"].erase(doc["parameters"].begin());
  EXPECT_NE(with(doc.dump()).find("the graph has 4 inputs"), std::string::npos);
}

TEST(ServeModel, UnreadableModelJsonNamesTheFile) {
  TempDir tmp;
  std::string folder = testing::write_checkpoint(tmp.path(), testing::tiny_lm());
  std::filesystem::remove(folder + "/model.json");
  std::filesystem::create_directory(folder + "/model.json");
  EXPECT_NE(serve_error(folder, "E-SERVE-010").find(folder + "/model.json"), std::string::npos);
}

TEST(ServeModel, WeightsThatDoNotFitNameTheFileAndPath) {
  TempDir tmp;
  auto m = testing::tiny_lm();
  std::string folder = testing::write_checkpoint(tmp.path(), m);
  std::string params = folder + "/params.safetensors";
  // A missing tensor.
  io::write_safetensors(params, {m.weights[0], m.weights[1]});
  EXPECT_NE(serve_error(folder, "E-SERVE-003").find(params + ": holds no `model.head.weight`"), std::string::npos);
  // One of another shape.
  io::write_safetensors(params, {m.weights[0], m.weights[1], {"model.head.weight", testing::pseudo_random({4}, 1)}});
  EXPECT_NE(serve_error(folder, "E-SERVE-003").find("`model.head.weight` is [4], but the model reads it as [16, 32]"),
            std::string::npos);
  // A truncated file: io's own code, naming the file; none at all: a checkpoint without
  // the file every checkpoint holds.
  io::write_safetensors(params, m.weights);
  std::filesystem::resize_file(params, std::filesystem::file_size(params) - 10);
  std::string message = error_of<io::LoadError>([&] { open_model(resolve_operand(folder), {}); }, io::kTruncated);
  EXPECT_NE(message.find(params), std::string::npos) << message;
  std::filesystem::remove(params);
  message = error_of<io::CheckpointError>([&] { open_model(resolve_operand(folder), {}); }, io::kCheckpointMismatch);
  EXPECT_NE(message.find(folder + ": the checkpoint holds no params.safetensors"), std::string::npos) << message;
  // Not a safetensors file at all.
  testing::write_text(params, "this is not a safetensors file");
  EXPECT_THROW(open_model(resolve_operand(folder), {}), io::LoadError);
}

// "--output: only this output, repeatable, in the order given"
TEST(ServeModel, OutputKeepsOnlyTheNamedInTheirOrder) {
  auto m = testing::tiny_lm({.heavy_head = true});
  ShapedGraph both = shape_graph(m.graph, {.outputs = {"aux", "output"}});
  ASSERT_EQ(both.graph.outputs.size(), 2u);
  EXPECT_EQ(both.graph.outputs[0].name, "aux");
  EXPECT_EQ(both.graph.outputs[1].name, "output");
  auto message = error_of<ServeError>([&] { shape_graph(m.graph, {.outputs = {"logits"}}); }, "E-SERVE-004");
  EXPECT_NE(message.find("no output `logits`; it has `output`, `aux`"), std::string::npos) << message;
  message = error_of<ServeError>([&] { shape_graph(m.graph, {.outputs = {"aux", "aux"}}); }, "E-SERVE-004");
  EXPECT_NE(message.find("given twice"), std::string::npos) << message;
}

// "--output leaves out what the others alone compute ... does none of that work"
TEST(ServeModel, OutputPrunesAHeavyUnusedHead) {
  auto m = testing::tiny_lm({.heavy_head = true});
  graph::Graph whole = shape_graph(m.graph, {}).graph;
  graph::Graph logits = shape_graph(m.graph, {.outputs = {"output"}}).graph;
  size_t matmuls_whole = 0, matmuls_logits = 0;
  for (const auto& n : whole.nodes) matmuls_whole += n.op_name() == "matmul";
  for (const auto& n : logits.nodes) matmuls_logits += n.op_name() == "matmul";
  EXPECT_EQ(matmuls_whole, 13u);
  EXPECT_EQ(matmuls_logits, 1u);
  EXPECT_LT(logits.nodes.size() + 24, whole.nodes.size());
}

// "--at: a last input `at`, an i32 of shape [1], and each output only at that place of its second axis"
TEST(ServeModel, AtAddsALastInputAndRemembersTheAxis) {
  TempDir tmp;
  auto m = testing::tiny_lm();
  testing::write_checkpoint(tmp.path(), m);
  ServedModel served = open_model(resolve_operand(tmp.path()), {.at = true});
  ASSERT_EQ(served.about.inputs.size(), 2u);
  EXPECT_EQ(served.about.inputs[1], (TensorSpec{"at", {1}, graph::DType::i32}));
  EXPECT_EQ(served.about.outputs[0], (TensorSpec{"output", {1, 1, testing::kVocab}, graph::DType::f32}));
  EXPECT_EQ(served.at_limit, testing::kWindow);
  // An output without a second axis cannot be taken at a place of it.
  graph::Graph scalar_out;
  graph::Builder b(scalar_out);
  b.output("output", b.sum(b.input("inputs", {4}, graph::DType::f32), {}));
  error_of<ServeError>([&] { shape_graph(scalar_out, {.at = true}); }, "E-SERVE-004");
}

// "--precision bf16: run the model under the bf16 policy": its products on bf16 operands,
// each output keeping its dtype.
TEST(ServeModel, Bf16RunsTheProductsOnBf16Operands) {
  const graph::Graph& model = testing::tiny_lm().graph;
  ShapedGraph shaped = shape_graph(model, {.precision = "bf16"});
  size_t products = 0;
  for (const graph::Node& node : shaped.graph.nodes) {
    if (node.op_name() != "matmul") continue;
    ++products;
    EXPECT_EQ(node.dtype, graph::DType::bf16);
  }
  EXPECT_GT(products, 0u);
  for (size_t i = 0; i < model.outputs.size(); ++i) {
    EXPECT_EQ(shaped.graph.node(shaped.graph.outputs[i].node).dtype, model.node(model.outputs[i].node).dtype);
  }
  error_of<ServeError>([&] { shape_graph(model, {.precision = "f16"}); }, "E-SERVE-004");
}

}  // namespace
}  // namespace sx::serve
