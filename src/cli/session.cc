// Evaluating a run file for a command.
#include "cli/session.h"

#include "cli/eager.h"
#include "lang/tracer.h"
#include "model/values.h"

namespace sx::cli {

namespace {

train::KnobChoices knob_choices(const EvalFlags& flags) {
  train::KnobChoices choices{flags.variant, {}};
  for (const auto& knob : flags.knobs) {
    auto eq = knob.find('=');
    choices.knobs[knob.substr(0, eq)] = knob.substr(eq + 1);
  }
  return choices;
}

}  // namespace

Session::Session(const EvalFlags& flags)
    : interp_(interpreter_options(flags)),
      models_(model::install_models(interp_)),
      settings_(train::install_defrun(interp_)),
      knobs_(train::install_knobs(interp_, knob_choices(flags))) {}

void Session::load(const std::string& file) {
  train::collect_variants(interp_, *knobs_, file);
  top_ = interp_.load_file(file);
  train::check_choices_used(*knobs_);
  params_ = model::resolve_parameters(interp_, *models_, *top_, file);
}

void Session::start_empty() { top_ = interp_.new_top_level(); }

lang::Value Session::run(const lang::Value& value, device::Device& device) {
  auto feed = [&](const graph::NamedNode& input, bool read) {
    if (read && !initialized_) {
      values_ = model::initial_values(params_, seed(), device);
      initialized_ = true;
    }
    return model::input_value(interp_.tracer()->graph(), input, read, values_, seed());
  };
  return materialize(value, interp_, device, feed);
}

}  // namespace sx::cli
