// Evaluating a run file for a command.
#include "cli/session.h"

#include "cli/eager.h"
#include "lang/tracer.h"
#include "model/values.h"

namespace sx::cli {

Session::Session(lang::InterpreterOptions options)
    : interp_(std::move(options)), models_(model::install_models(interp_)), settings_(train::install_defrun(interp_)) {}

void Session::load(const std::string& file) {
  top_ = interp_.load_file(file);
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
