// The served model: a checkpoint's (or an export directory's) model.json and weights,
// shaped by serve's flags (--output, --at, --precision) into the graph one call runs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "graph/graph.h"
#include "graph/tensor.h"
#include "io/checkpoint_files.h"
#include "serve/model_file.h"
#include "serve/protocol.h"

namespace sx::serve {

struct ServeOptions {
  std::vector<std::string> outputs = {};  // --output, in the order given; empty: every output
  bool at = false;                        // --at
  std::string precision = {};             // --precision: "" (the model's own) or "bf16"
  bool trained = false;                   // --trained: params.safetensors even where ema.safetensors is
};

// Where a model and its weights are: a checkpoint folder, or an export directory.
struct ModelSource {
  std::string folder;         // LOC/step-00000020, or the export directory
  bool is_checkpoint = true;  // false: an export directory
  std::string shown;          // what the banner, the handshake and messages name: a checkpoint as
                              // written (io::Checkpoint::written, never the cache's copy), else `folder`
  // A checkpoint's files, read checked against its manifest (an export directory's are
  // read as they are); one without checksums is W-CKPT-001's to warn of.
  std::optional<io::CheckpointReader> files;
};

// The operand as `serve` takes it: LOC/step-N, a location (its newest complete
// checkpoint) or an export directory (model.json and params.safetensors at its top).
// Throws io::CheckpointError for a location without checkpoints that is no export
// directory either, or one that cannot be listed.
ModelSource resolve_operand(const std::string& operand);

struct ServedModel {
  ModelSource source;
  Handshake about;     // inputs and outputs as the flags left them
  graph::Graph graph;  // one call: the data inputs (about.inputs) and the weights by path
  std::vector<std::pair<std::string, graph::Tensor>> weights;  // every weight the graph reads
  std::optional<int64_t> at_limit;                             // with --at: the outputs' second-axis length
};

// The graph as the flags shape it: only the outputs named (graph::select_outputs), each
// taken at `at` (graph::take_at), under the precision asked. Throws ServeError
// (E-SERVE-004) when a flag does not fit the model.
struct ShapedGraph {
  graph::Graph graph;
  std::optional<int64_t> at_limit;  // with --at: the outputs' second-axis length, which `at` must stay in
};
ShapedGraph shape_graph(const graph::Graph& model, const ServeOptions& options);

// The model at `source` with its weights: ema.safetensors where the checkpoint has it and
// --trained is not given, else params.safetensors. Each parameter is checked against the
// graph's input of its path. Throws ServeError (E-SERVE-001 for a checkpoint without
// model.json, E-SERVE-002/003/004/005/010) and io::LoadError for a weights file that is
// not a whole safetensors file; each message names the file.
ServedModel open_model(const ModelSource& source, const ServeOptions& options);

}  // namespace sx::serve
