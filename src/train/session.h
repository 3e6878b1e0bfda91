// A run file evaluated for a command: the interpreter with models, defrun and knobs
// installed, the top level, its parameters by path and, once something runs, their
// values in a store on the device that ran it.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>

#include "device/device.h"
#include "graph/index_error.h"
#include "io/checkpoint.h"
#include "io/load_record.h"
#include "io/safetensors.h"
#include "model/model.h"
#include "model/paths.h"
#include "runtime/program.h"
#include "train/knobs.h"
#include "train/run_settings.h"
#include "train/step_forms.h"

namespace sx::train {

struct SessionOptions {
  lang::InterpreterOptions interpreter;
  KnobChoices choices;  // --variant and --knob
};

class Session {
 public:
  explicit Session(SessionOptions options);

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
  const RunSettings& settings() const { return *settings_; }
  StepRecord& step_record() { return *step_record_; }
  // A graph the run runs (its step, a pass, the model alone) under `defrun :precision`:
  // under :bf16, products on bf16 operands but for those reading a :numerics :high
  // parameter (RunSettings::under_precision).
  graph::Graph under_precision(graph::Graph graph) const;

  // Gives every parameter of the top level its path again, after more code ran there
  // (eval's expression, a REPL entry); each warning is shown once.
  void resolve();

  // The value with every traced tensor in it (at any depth of lists and vectors)
  // replaced by a constant holding its elements, computed on `device` by a program
  // of what those tensors need. Parameters get their initial values the first time
  // a program reads them, and keep them on the device from then on.
  lang::Value run(const lang::Value& value, device::Device& device);
  // `graph`, a part of the trace with its outputs named, compiled for `device` by the one
  // compile path (runtime::compile) and not run: what `check` does with the tensors a file
  // defines. Returns the optimized graph; the device's refusals are diagnostics, as
  // run's are, pointing at the form of the first output.
  graph::Graph compile(const graph::Graph& graph, device::Device& device);
  // Parameters get their values from this checkpoint's params.safetensors (a location
  // means its newest checkpoint) instead of their initializers, and frozen :load ones
  // from the files it names; E-CKPT-003 when there is none, E-LOAD when a file cannot be
  // read, E-LOAD-001 when a named file changed.
  void use_checkpoint(const std::string& location);
  // Drops from the trace what no value of the session can reach any more
  // (lang::Tracer::compact) once it has doubled since the last time, so a REPL's
  // memory does not grow with its history. Only between evaluations (REPL entries).
  void forget_unreachable();
  // From now on `print`, `str`, `format`, `item` and `save-tensors` run the tensors they
  // are given on `device` (which must outlive the session's evaluation).
  void run_tensors_on(device::Device& device);

 private:
  // The binding of each input of `program`, a part of the trace: a parameter by path,
  // or the key of a random stream. E-PARAM-009 for a parameter without a root.
  std::vector<runtime::Binding> bind_inputs(const graph::Graph& program) const;
  // Puts in the store the values of the parameters `program` reads that it lacks.
  void initialize(const graph::Graph& program, const std::map<std::string, graph::DType>& stored);

  lang::Interpreter interp_;
  std::shared_ptr<model::ModelState> models_;
  std::shared_ptr<train::RunSettings> settings_;
  std::shared_ptr<train::KnobState> knobs_;
  std::shared_ptr<StepRecord> step_record_;
  lang::Ref<lang::Env> top_;
  model::ParameterTable params_;
  std::unique_ptr<runtime::Store> store_;
  std::shared_ptr<const io::SafetensorsFile> checkpoint_;
  io::Checkpoint checkpoint_read_;  // the checkpoint checkpoint_ is of: messages name it as written
  io::LoadRecord checkpoint_loads_;
  std::set<std::string> checkpoint_table_;  // the paths of the checkpoint's parameters
  std::set<std::pair<std::string, uint32_t>> warned_;
  size_t compacted_size_ = 0;  // the trace's node count after the last forget_unreachable
};

// E-DEVICE-004 for an index outside its axis met running a program of `tracer`'s trace
// (graph::IndexOutOfRange): at the form that read it (`otherwise` where the node has no
// form), its message after `context` ("step 12: "), a graph input named `data_prefix` and
// a field (a batch's) named as the batch's field, with its row.
[[noreturn]] void fail_index_out_of_range(const lang::Tracer& tracer, const graph::IndexOutOfRange& error,
                                          std::string_view context, std::string_view data_prefix = {},
                                          lang::Span otherwise = {});

}  // namespace sx::train
