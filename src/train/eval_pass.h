// Evaluation passes (docs/training.md): `(pass :name "val" :data LOADER :every N :batches B
// :metrics (list :accuracy fn ...))` in defrun's `:eval`. A pass runs the model on B
// batches of its loader (eval-prepare, else prepare; the model; the loss; each metric
// function of (prediction prepared)), with no gradient and no update, and gives the mean
// of each over the batches. A run runs each pass every N steps and at its end;
// `sexpgpu evaluate` runs them on a checkpoint.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/program.h"
#include "train/loaders.h"
#include "train/session.h"
#include "train/step_feed.h"

namespace sx::train {

class EvalPassSpec final : public lang::Opaque {
 public:
  std::string type_label() const override { return "an evaluation pass"; }
  std::string print() const override;

  std::string name;
  lang::Value data;   // a loader
  int64_t every = 0;  // steps between runs in training; 0: only at the end
  int64_t batches = 10;
  std::vector<std::pair<std::string, lang::Value>> metrics;  // name, (fn prediction prepared)
  lang::Span span;
};

void install_eval_passes(lang::Interpreter& interp);
const EvalPassSpec* as_eval_pass(const lang::Value& v);

// defrun's `:eval` (checked when defrun is evaluated): its passes.
std::vector<const EvalPassSpec*> eval_passes(const RunSettings& run);

struct EvaluateOptions {
  std::string file;        // the run file
  std::string checkpoint;  // LOC/step-N, or LOC for its newest
  bool trained = false;    // the trained parameters, not the :ema averages
};

// `sexpgpu evaluate`: each pass of the run file on the checkpoint, with the :ema averages
// unless `trained`; prints a line a pass. The file is compiled under the variant and
// knobs the checkpoint records and must declare its parameters (E-CKPT-006), as `export`
// does (train/run_record.h). The session the file is compiled in is made in `session`,
// which the caller keeps until it has reported any error: a diagnostic's spans point into
// the session's sources.
void evaluate_checkpoint(const EvaluateOptions& options, lang::InterpreterOptions interpreter, device::Device& device,
                         std::optional<Session>& session);

// A pass traced and compiled for a device: its program reads the parameters from a store.
class EvalPass {
 public:
  // Traces the pass in the session (after the file is loaded) for batches of `batch` rows.
  EvalPass(Session& session, const EvalPassSpec& spec, int64_t batch, device::Device& device);
  const std::string& name() const { return spec_.name; }
  const EvalPassSpec& spec() const { return spec_; }
  // The mean loss and metrics over the pass's batches, by name ("loss" first).
  std::vector<std::pair<std::string, double>> run(runtime::Store& store, uint64_t seed);

 private:
  // Its data inputs' names start with this: "pass.NAME.".
  std::string prefix() const { return "pass." + spec_.name + "."; }
  const EvalPassSpec& spec_;
  std::shared_ptr<const Loader> loader_;
  int64_t batch_;
  std::shared_ptr<const lang::Tracer> tracer_;  // the trace the program came from, for its errors
  std::vector<std::string> names_;
  std::unique_ptr<runtime::Program> program_;
  std::unique_ptr<StepFeed> feed_;  // its data inputs, a batch at a time
};

}  // namespace sx::train
