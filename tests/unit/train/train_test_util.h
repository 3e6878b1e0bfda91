// Helpers for the optimizer tests: a run file evaluated with models and defrun, and one
// optimizer step as a graph run on the reference device, fed its own outputs step after
// step as the training loop will.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "device/device.h"
#include "lang/interp.h"
#include "lang/printer.h"
#include "model/model.h"
#include "model/paths.h"
#include "train/optimizer.h"
#include "train/run_settings.h"

namespace sx::train::testing {

inline lang::InterpreterOptions test_options() {
  lang::InterpreterOptions options;
  options.library_dirs = {SEXPGPU_LIB_DIR};
  return options;
}

// The one place these tests use the device API: runs `graph` on a device, by default the
// reference.
inline std::vector<graph::Tensor> run_graph(const graph::Graph& graph, const std::vector<graph::Tensor>& inputs,
                                            const std::string& device = "reference") {
  return device::make_device(device)->compile(graph)->run_host(inputs);
}

struct RunFile {
  lang::Interpreter interp{test_options()};
  std::shared_ptr<model::ModelState> state = model::install_models(interp);
  std::shared_ptr<RunSettings> settings = install_defrun(interp);
  lang::Ref<lang::Env> top = interp.new_top_level();
  model::ParameterTable table;

  void load(const std::string& text) {
    interp.eval_text(text, "run.sx", *top);
    table = model::resolve_parameters(interp, *state, *top);
  }
  lang::Value eval(const std::string& text) { return interp.eval_text(text, "<expr>", *top); }
  const OptimizerSpec& optimizer(const std::string& text) {
    held_.push_back(eval(text));
    const OptimizerSpec* spec = as_optimizer(held_.back());
    if (!spec) throw std::runtime_error("not an optimizer: " + text);
    return *spec;
  }
  const ScheduleSpec& schedule(const std::string& text) {
    held_.push_back(eval(text));
    const ScheduleSpec* spec = as_schedule(held_.back());
    if (!spec) throw std::runtime_error("not a schedule: " + text);
    return *spec;
  }

 private:
  std::vector<lang::Value> held_;
};

// The code of the error evaluating `text` in a fresh run file raises, or "".
inline std::string error_code(const std::string& text) {
  RunFile f;
  try {
    f.load(text);
  } catch (const lang::Error& e) {
    return e.diagnostic().code;
  }
  return "";
}

// The settings of a run with this optimizer, schedule and total steps, without clipping
// or EMA.
inline UpdateSettings settings_for(const OptimizerSpec& optimizer, const ScheduleSpec* schedule = nullptr,
                                   int64_t total_steps = 0) {
  UpdateSettings settings;
  settings.optimizer = &optimizer;
  settings.schedule = schedule;
  settings.total_steps = total_steps;
  return settings;
}

using Values = std::map<std::string, std::vector<double>>;  // by parameter path or state name

// One optimizer step as a graph: inputs are each parameter (named by its path), its
// gradient (grad.<path>), `step` and the state; outputs the new parameters, the new
// state, the learning rate and (with clipping) the global norm.
class Stepper {
 public:
  Stepper(const GroupAssignment& groups, const UpdateSettings& settings) : groups_(groups) {
    graph::Builder b(graph_);
    std::vector<ParamNodes> nodes;
    for (const auto& entry : groups.params) {
      const auto& decl = *entry.param->decl;
      nodes.push_back({b.input(entry.param->path, decl.shape, decl.dtype),
                       b.input("grad." + entry.param->path, decl.shape, graph::DType::f32)});
    }
    update_ = build_update(b, groups, nodes, settings);
    for (size_t i = 0; i < groups.params.size(); ++i)
      b.output("new." + groups.params[i].param->path, update_.new_params[i]);
    for (const auto& s : update_.state) b.output("state." + s.tensor.name, s.updated);
    b.output("lr", update_.lr);
    if (update_.grad_norm) b.output("norm", *update_.grad_norm);
    for (const auto& s : update_.state) state[s.tensor.name] = std::vector<double>(graph::numel(s.tensor.shape), 0.0);
  }

  // Runs one step on `params` (by path) with `grads` (by path), updating both `params`
  // and `state`; `lr` and `norm` are this step's.
  void step(Values& params, const Values& grads, const std::string& device = "reference") {
    auto outputs = run_graph(graph_, inputs(params, grads), device);
    for (size_t i = 0; i < graph_.outputs.size(); ++i) {
      const std::string& name = graph_.outputs[i].name;
      std::vector<double> v = outputs[i].to_doubles();
      if (name.starts_with("new.")) params[name.substr(4)] = v;
      else if (name.starts_with("state.")) state[name.substr(6)] = v;
      else if (name == "lr") lr = v[0];
      else if (name == "norm") norm = v[0];
    }
    ++steps_done;
  }

  // The graph's inputs for a step on `params` with `grads`, in its order.
  std::vector<graph::Tensor> inputs(const Values& params, const Values& grads) const {
    std::vector<graph::Tensor> tensors;
    for (const auto& input : graph_.inputs) {
      const graph::Node& n = graph_.node(input.node);
      const std::vector<double>* values = nullptr;
      if (input.name == "step") {
        tensors.push_back(graph::Tensor::scalar(graph::DType::i64, static_cast<double>(steps_done)));
        continue;
      }
      if (input.name.starts_with("grad.")) values = &grads.at(input.name.substr(5));
      else if (state.count(input.name)) values = &state.at(input.name);
      else values = &params.at(input.name);
      tensors.push_back(graph::Tensor::from_doubles(n.dtype, n.shape, *values));
    }
    return tensors;
  }

  const UpdateGraph& update() const { return update_; }
  const graph::Graph& graph() const { return graph_; }

  Values state;
  double lr = 0, norm = 0;
  int64_t steps_done = 0;

 private:
  GroupAssignment groups_;
  graph::Graph graph_;
  UpdateGraph update_;
};

// Each |got - want| within rel * |want| + abs.
inline void expect_close(const std::vector<double>& got, const std::vector<double>& want, double rel, double abs,
                         const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_LE(std::abs(got[i] - want[i]), rel * std::abs(want[i]) + abs)
        << what << "[" << i << "]: got " << got[i] << ", want " << want[i];
  }
}

}  // namespace sx::train::testing
