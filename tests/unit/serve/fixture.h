// What the serve tests share: a scratch folder, a small language model built with the
// graph's builder (no Lisp: serve reads model.json, not run files), and writing it as a
// checkpoint or an export directory holds it.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "graph/builder.h"
#include "graph/json.h"
#include "graph/tensor.h"
#include "io/safetensors.h"
#include "serve/protocol.h"

namespace sx::serve::testing {

// A folder under the system's temporary folder, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "sexpgpu-serve-XXXXXX").string();
    path_ = ::mkdtemp(pattern.data());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Deterministic values in [-1, 1), different for each seed.
inline graph::Tensor pseudo_random(graph::Shape shape, uint32_t seed) {
  std::vector<double> values(static_cast<size_t>(graph::numel(shape)));
  uint32_t state = seed * 2654435761u + 1;
  for (double& v : values) {
    state = state * 1664525u + 1013904223u;
    v = static_cast<double>(state >> 8) / static_cast<double>(1u << 23) - 1.0;
  }
  return graph::Tensor::from_doubles(graph::DType::f32, std::move(shape), values);
}

struct TestModel {
  graph::Graph graph;  // inputs: the parameters, then the data inputs
  std::vector<TensorSpec> inputs, outputs, parameters;
  std::vector<std::pair<std::string, graph::Tensor>> weights;
};

struct TestModelOptions {
  bool mask = false;        // a second input, `inputs.1`, bool [1, 8]: the logits where it is false are 0
  bool heavy_head = false;  // a second output, `aux`, from a chain of products the logits do not need
};

inline constexpr int64_t kWindow = 8, kVocab = 32, kWidth = 16;

// ids i32 [1, 8] -> logits [1, 8, 32]: an embedding, learned positions, tanh, a
// projection; the shape of the model alone of a tiny causal language model.
inline TestModel tiny_lm(TestModelOptions options = {}) {
  TestModel m;
  graph::Builder b(m.graph);
  // The parameters first, then the data inputs, as a run's trace orders them.
  auto parameter = [&](const std::string& path, graph::Shape shape, uint32_t seed) {
    m.parameters.push_back({path, shape, graph::DType::f32});
    m.weights.emplace_back(path, pseudo_random(shape, seed));
    return b.input(path, std::move(shape), graph::DType::f32);
  };
  graph::NodeId embed = parameter("model.embed.weight", {kVocab, kWidth}, 1);
  graph::NodeId positions = parameter("model.positions", {kWindow, kWidth}, 2);
  graph::NodeId head = parameter("model.head.weight", {kWidth, kVocab}, 3);
  graph::NodeId heavy = options.heavy_head ? parameter("model.aux.weight", {kWidth, kWidth}, 4) : 0;
  std::string ids_name = options.mask ? "inputs.0" : "inputs";
  graph::NodeId ids = b.input(ids_name, {1, kWindow}, graph::DType::i32);
  m.inputs.push_back({ids_name, {1, kWindow}, graph::DType::i32});
  graph::NodeId mask = 0;
  if (options.mask) {
    mask = b.input("inputs.1", {1, kWindow}, graph::DType::boolean);
    m.inputs.push_back({"inputs.1", {1, kWindow}, graph::DType::boolean});
  }
  graph::NodeId h = b.tanh(b.add(b.gather(embed, ids, 0), positions));
  graph::NodeId logits = b.matmul(h, head);
  if (options.mask) logits = b.where(b.reshape(mask, {1, kWindow, 1}), logits, b.scalar(0.0, graph::DType::f32));
  b.output("output", logits);
  m.outputs.push_back({"output", {1, kWindow, kVocab}, graph::DType::f32});
  if (options.heavy_head) {
    graph::NodeId x = h;
    for (int i = 0; i < 12; ++i) x = b.tanh(b.matmul(x, heavy));
    b.output("aux", x);
    m.outputs.push_back({"aux", {1, kWindow, kWidth}, graph::DType::f32});
  }
  return m;
}

inline nlohmann::json specs_json(const std::vector<TensorSpec>& specs, const char* key) {
  nlohmann::json out = nlohmann::json::array();
  for (const TensorSpec& s : specs) {
    out.push_back({{key, s.name}, {"shape", s.shape}, {"dtype", graph::dtype_name(s.dtype)}});
  }
  return out;
}

// model.json as a run writes it into a checkpoint.
inline nlohmann::json model_json(const TestModel& m, int64_t step = 20) {
  return {{"format", "sexpgpu-model"},
          {"version", 1},
          {"checkpoint", fmt::format("step-{:08}", step)},
          {"step", step},
          {"slug", "tiny"},
          {"precision", "f32"},
          {"inputs", specs_json(m.inputs, "name")},
          {"outputs", specs_json(m.outputs, "name")},
          {"parameters", specs_json(m.parameters, "path")},
          {"graph", graph::graph_to_json(m.graph)}};
}

inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// model.json and params.safetensors in `folder` (created), as an export directory holds
// them; a checkpoint is the same in a folder named step-NNNNNNNN.
inline void write_model(const std::string& folder, const TestModel& m, int64_t step = 20) {
  std::filesystem::create_directories(folder);
  write_text(folder + "/model.json", model_json(m, step).dump());
  io::write_safetensors(folder + "/params.safetensors", m.weights);
}

// The checkpoint LOC/step-N of the model.
inline std::string write_checkpoint(const std::string& location, const TestModel& m, int64_t step = 20) {
  std::string folder = fmt::format("{}/step-{:08}", location, step);
  write_model(folder, m, step);
  write_text(folder + "/experiment.json", R"({"file": "tiny.sx"})");
  return folder;
}

// One call's body: each input's bytes in order.
inline std::string call_body(std::initializer_list<graph::Tensor> inputs) {
  std::string body;
  for (const graph::Tensor& t : inputs) body += encode_tensor(t);
  return body;
}

// ids [1, 8] from a seed, each below the vocabulary's size.
inline graph::Tensor ids(uint32_t seed) {
  graph::Tensor t(graph::DType::i32, {1, kWindow});
  for (int64_t i = 0; i < kWindow; ++i) t.data<int32_t>()[i] = static_cast<int32_t>((seed * 7 + i * 13) % kVocab);
  return t;
}

}  // namespace sx::serve::testing
