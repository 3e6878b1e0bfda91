// What a training step returns, decoded by the bindings of the program's outputs: the
// loss, each metric, each counter's count and each guard; what the run logs of it; and
// the checks that stop a run (E-RUN-008).
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "runtime/program.h"
#include "train/session.h"
#include "train/step.h"

namespace sx::train {

struct StepResults {
  double loss = 0;
  std::vector<std::pair<std::string, double>> metrics;  // by name, in the program's order: "loss" first
  std::vector<std::pair<std::string, double>> counts;   // each counter's count at this step
  std::vector<std::string> failed_guards;               // the binding names of the guards that failed

  // The values a step logs, by name: the metrics, then each counter's total once this
  // step's count is added to `totals`.
  std::vector<std::pair<std::string, double>> logged(std::map<std::string, double>& totals) const;
};

// The results of a run: `values[k]` is the value of the output bound by `bindings[k]`
// (a metric, a counter, or a guard, which failed when its value is 0).
StepResults decode_step_results(std::span<const runtime::Binding> bindings, std::span<const double> values);

// What a program's run returns: its value buffers, and its numbers, read in one copy.
struct ProgramRun {
  std::span<const device::Buffer> values;
  std::span<const double> numbers;
};

// Runs `program` for the step after `steps_done` steps on the `fed` inputs. A device's
// refusal, or an index outside its axis, is the diagnostic of step `steps_done`, and of
// the part of it `part` names (", micro-batch 3 (rows 6 to 7)"), when given.
ProgramRun run_checked(Session& session, runtime::Program& program, runtime::Store& store,
                       std::span<const device::Buffer* const> fed, int64_t steps_done, std::string_view part = {});

// Runs the step as run_checked does and decodes the numbers it returns.
StepResults run_step(Session& session, runtime::Program& program, runtime::Store& store,
                     std::span<const device::Buffer* const> fed, int64_t steps_done);

// E-RUN-008 at the form of the first guard that failed, else when the loss is not finite.
void check_step(const StepResults& results, const StepGraph& step, int64_t steps_done);

}  // namespace sx::train
