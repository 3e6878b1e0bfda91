// The model alone (docs/serving.md): `model` applied, as a step
// applies it, to the `:inputs` that eval-prepare (else prepare) makes from a batch of one
// record of the training loader's fields. Its inputs are those tensors (`inputs`, or
// `inputs.0`, `inputs.1`, ...), not the records; its outputs are the prediction's tensors
// named by their paths through lists and plists. Every checkpoint holds it as model.json.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "train/loaders.h"
#include "train/session.h"

namespace sx::train {

struct ModelAlone {
  graph::Graph graph;  // inputs: the model's inputs, then parameters by path
  std::vector<std::string> inputs, outputs;
};

// The model alone, traced in the session after the file is loaded; E-INFER-001 (thrown)
// when the prediction holds anything but tensors, numbers, booleans, strings and nil in
// lists and plists, or the model reads random numbers.
ModelAlone trace_model_alone(Session& session, const Loader& loader);

// model.json: the graph with its metadata, for a checkpoint.
nlohmann::json model_json(const ModelAlone& model, const Session& session, const std::string& slug, int64_t step);

}  // namespace sx::train
