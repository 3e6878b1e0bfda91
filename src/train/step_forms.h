// What a run file's model and loss say to the training loop while the step is traced:
// (metric :name x) logs a scalar each step, (counter :name n) sums one over the run,
// (guard condition "message") stops the run when the condition is false. Outside a
// traced step (eval, the REPL) each gives its value back and records nothing.
// (field batch :name) reads a field of the loader's batch.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "lang/interp.h"

namespace sx::train {

struct StepRecord {
  struct Named {
    std::string name;
    graph::NodeId node = 0;
    lang::Span span;
  };
  bool recording = false;  // true while the loop traces the step
  std::vector<Named> metrics;
  std::vector<Named> counters;
  std::vector<Named> guards;  // name: the message; node: a bool scalar, false to stop
};

// Installs metric, counter, guard and field; returns the record they fill.
std::shared_ptr<StepRecord> install_step_forms(lang::Interpreter& interp);

// The value under `key` (a keyword's name) in the plist `plist`, or nullptr.
const lang::Value* plist_find(const lang::Value& plist, std::string_view key);

}  // namespace sx::train
