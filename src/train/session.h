// A run file evaluated for a command: the interpreter with models, defrun and knobs
// installed, the top level, its parameters by path and, once something runs, their values.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>

#include "cli/common.h"
#include "device/device.h"
#include "model/model.h"
#include "model/paths.h"
#include "train/knobs.h"
#include "train/run_settings.h"

namespace sx::cli {

class Session {
 public:
  explicit Session(const EvalFlags& flags);

  // Evaluates the file's top level and gives its parameters their paths.
  void load(const std::string& file);
  // An empty top level (eval and repl without a file); E-RUN-003 or E-RUN-004 when the
  // flags name a knob or a variant, which only a file defines.
  void start_empty();

  lang::Interpreter& interp() { return interp_; }
  lang::Env& top() { return *top_; }
  const model::ParameterTable& params() const { return params_; }
  const train::KnobState& knobs() const { return *knobs_; }
  uint64_t seed() const { return settings_->seed(); }

  // Gives every parameter of the top level its path again, after more code ran there
  // (eval's expression, a REPL entry); each warning is shown once.
  void resolve();

  // The value with its tensors computed on `device`; parameters get their initial values
  // the first time something reads them.
  lang::Value run(const lang::Value& value, device::Device& device);
  // From now on `print`, `str`, `format`, `item` and `save-tensors` run the tensors they
  // are given on `device` (which must outlive the session's evaluation).
  void run_tensors_on(device::Device& device);

 private:
  lang::Interpreter interp_;
  std::shared_ptr<model::ModelState> models_;
  std::shared_ptr<train::RunSettings> settings_;
  std::shared_ptr<train::KnobState> knobs_;
  lang::Ref<lang::Env> top_;
  model::ParameterTable params_;
  std::map<std::string, graph::Tensor> values_;
  std::set<std::pair<std::string, uint32_t>> warned_;
};

}  // namespace sx::cli
