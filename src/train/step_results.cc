// Decoding and checking a step's results (see step_results.h).
#include "train/step_results.h"

#include <fmt/format.h>

#include <cmath>

#include "lang/printer.h"
#include "train/codes.h"

namespace sx::train {

std::vector<std::pair<std::string, double>> StepResults::logged(std::map<std::string, double>& totals) const {
  std::vector<std::pair<std::string, double>> out = metrics;
  for (const auto& [name, count] : counts) out.emplace_back(name, totals[name] += count);
  return out;
}

StepResults decode_step_results(std::span<const runtime::Binding> bindings, std::span<const double> values) {
  StepResults results;
  for (size_t k = 0; k < bindings.size(); ++k) {
    const auto& [role, name] = bindings[k];
    if (role == runtime::Role::metric) {
      if (name == "loss") results.loss = values[k];
      results.metrics.emplace_back(name, values[k]);
    } else if (role == runtime::Role::counter) {
      results.counts.emplace_back(name, values[k]);
    } else if (role == runtime::Role::guard && values[k] == 0) {
      results.failed_guards.push_back(name);
    }
  }
  return results;
}

ProgramRun run_checked(Session& session, runtime::Program& program, runtime::Store& store,
                       std::span<const device::Buffer* const> fed, int64_t steps_done, std::string_view part) {
  // A device that runs the step later than it is given reports its errors when the
  // numbers are read.
  try {
    ProgramRun ran;
    ran.values = program.run(store, fed);
    ran.numbers = program.read_numbers();
    return ran;
  } catch (const device::DeviceError& e) {
    lang::fail(e.code(), {}, fmt::format("step {}{}: {}", steps_done, part, e.what()));
  } catch (const graph::IndexOutOfRange& e) {
    fail_index_out_of_range(*session.interp().tracer(), e, fmt::format("step {}{}: ", steps_done, part), kDataPrefix);
  }
}

StepResults run_step(Session& session, runtime::Program& program, runtime::Store& store,
                     std::span<const device::Buffer* const> fed, int64_t steps_done) {
  const std::span<const double> numbers = run_checked(session, program, store, fed, steps_done).numbers;
  std::vector<runtime::Binding> bindings;
  for (size_t i : program.number_outputs()) bindings.push_back(program.outputs()[i]);
  return decode_step_results(bindings, numbers);
}

void check_step(const StepResults& results, const StepGraph& step, int64_t steps_done) {
  if (!results.failed_guards.empty()) {
    const StepRecord::Named& guard = step.guards.at(results.failed_guards.front());
    lang::fail(kRunStopped, guard.span,
               fmt::format("step {}: guard: {}", steps_done, lang::shown_in_message(guard.name)));
  }
  if (!std::isfinite(results.loss)) {
    lang::fail(kRunStopped, {}, fmt::format("the loss is {} at step {}", results.loss, steps_done),
               "lower the learning rate, clip the gradients (:grad-clip), or guard the loss");
  }
}

}  // namespace sx::train
