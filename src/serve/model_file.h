// model.json, the model alone as a checkpoint (or an export directory) holds it: the
// forward graph with what the server and its clients need to know about it.
//
//   {"format": "sexpgpu-model", "version": 1, "checkpoint": "step-00000020", "step": 20,
//    "slug": "tiny", "precision": "f32",
//    "inputs":  [{"name": "inputs", "shape": [1, 16], "dtype": "i32"}],
//    "outputs": [{"name": "output", "shape": [1, 16, 32], "dtype": "f32"}],
//    "parameters": [{"path": "model.head.weight", "shape": [16, 32], "dtype": "f32"}, ...],
//    "graph": {the JSON form of the graph, graph/json.h}}
//
// The graph's inputs are the model's inputs and the parameters by path, in any order; its
// outputs are the model's, in order.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "graph/graph.h"
#include "serve/protocol.h"

namespace sx::serve {

inline constexpr std::string_view kModelFormat = "sexpgpu-model";
inline constexpr int kModelVersion = 1;

struct ModelFile {
  std::string checkpoint;
  int64_t step = 0;
  std::string slug;
  std::string precision;
  std::vector<TensorSpec> inputs, outputs, parameters;  // a parameter's name is its path
  graph::Graph graph;
};

// Reads and checks model.json at `path`: the format and version, every field, and that
// the graph's inputs and outputs are the ones listed, of the shapes and dtypes listed.
// Throws ServeError: E-SERVE-010 when the file cannot be read, E-SERVE-002 when it is not
// a model.json this build reads; each message names the file.
ModelFile read_model_file(const std::string& path);
// The same from the file's text; `path` names it in messages.
ModelFile parse_model_file(std::string_view text, const std::string& path);

}  // namespace sx::serve
