// The training step as one program (docs/training.md): the run file's prepare, model and
// loss traced on a batch of the loader's fields, the gradient of the loss with respect to
// every trainable parameter, the optimizer's update, metrics, counters and guards, in one
// graph: (parameters, optimizer state, batch, random keys, step) -> (new parameters, new
// state, loss, metrics). Parameters and state are read from the store and written back
// over it; the host feeds the batch and the step and reads the loss and metrics.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/program.h"
#include "train/loaders.h"
#include "train/optimizer.h"
#include "train/session.h"

namespace sx::train {

struct StepGraph {
  graph::Graph graph;
  std::vector<runtime::Binding> inputs;   // one per graph input
  std::vector<runtime::Binding> outputs;  // one per graph output
  std::vector<StateTensor> state;         // what the store must hold besides parameters
  // The returned outputs are named by their bindings: the metrics by the names they are
  // logged under ("loss" first, then "lr", "grad-norm", each `metric`'s name), each
  // counter by its name, each guard "guard: " and its message (numbered where two guards
  // give one).
  std::vector<std::string> counters;                // the counters' names
  std::map<std::string, StepRecord::Named> guards;  // by binding name

  // With StepSettings::split, the step is two programs (docs/distributed.md): `graph`
  // computes a micro-batch's loss, metrics, counters, guards and, as value outputs named
  // kGradPrefix and the parameter's path, its f32 gradients; `update` takes the summed
  // gradients (data inputs of those names) and the step to the new parameters and state,
  // "lr" and "grad-norm".
  struct Update {
    graph::Graph graph;
    std::vector<runtime::Binding> inputs, outputs;
  };
  std::optional<Update> update;
};

struct StepSettings {
  int64_t batch = 0;  // the rows the step's graph reads: a micro-batch's when split
  int64_t total_steps = 0;
  bool split = false;
};

// The gradient outputs and inputs of a split step are named this and the parameter's path.
inline constexpr std::string_view kGradPrefix = "grad.";

// Traces the step in the session's interpreter (after Session::load). E-RUN-005 for a
// file without `model` or `loss`, E-RUN-006 for a prepare without :inputs, E-RUN-007 for a
// loss that is not a floating-point scalar, E-RUN-009 for a defrun without :optimizer.
StepGraph trace_step(Session& session, const Loader& loader, const StepSettings& settings);

// The step graph's data inputs are named this and the loader field's name.
inline constexpr std::string_view kDataPrefix = "data.";

// The run file's top-level `name`; E-RUN-005 naming `what` it is for when it has none.
lang::Value required_definition(Session& session, std::string_view name, std::string_view what);

// f applied to `args` in the session's interpreter.
lang::Value call(Session& session, const lang::Value& f, std::vector<lang::Value> args);

// A batch of `batch` rows of the loader's fields as traced inputs: a plist of a data
// input per field, each named `prefix` and the field's name.
lang::Value traced_batch(Session& session, const Loader& loader, int64_t batch, std::string_view prefix);

// (model inputs...) on the `:inputs` of a prepared plist (E-RUN-006 without one;
// `prepared_by` names what made it, "" for the batch itself).
lang::Value apply_model(Session& session, const lang::Value& model, const lang::Value& prepared,
                        std::string_view prepared_by);

}  // namespace sx::train
