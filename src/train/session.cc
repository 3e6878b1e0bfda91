// Evaluating a run file for a command.
#include "cli/session.h"

#include <cstdio>

#include "cli/eager.h"
#include "lang/tracer.h"
#include "model/load.h"
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
      knobs_(train::install_knobs(interp_, knob_choices(flags))) {
  interp_.on_warning = [this](const lang::Diagnostic& d) {
    if (!warned_.insert({d.code + (d.span.known() ? d.span.file->path() : ""), d.span.offset}).second) return;
    std::fputs(lang::render(d, lang::stderr_wants_color()).c_str(), stderr);
  };
}

void Session::load(const std::string& file) {
  train::collect_variants(interp_, *knobs_, file);
  // As Interpreter::load_file, but with top_ set while the file evaluates, so that a
  // `print` in it can run its tensors (run_tensors_on).
  const auto& limits = interp_.options().reader_limits;
  const lang::SourceFile& source = lang::load_source_file(interp_.sources(), file, limits);
  top_ = interp_.new_top_level(file);
  interp_.eval_forms(lang::read_forms(source, limits), *top_);
  train::check_choices_used(*knobs_);
  resolve();
  model::check_unrooted_reads(interp_, *models_, interp_.tracer()->graph());
}

void Session::start_empty() {
  train::check_no_choices(*knobs_);
  top_ = interp_.new_top_level();
}

void Session::run_tensors_on(device::Device& device) {
  interp_.materialize = [this, &device](const lang::Value& value) {
    // A file's top level evaluated by load() has no environment to resolve yet.
    if (!top_) return value;
    return run(value, device);
  };
}

void Session::resolve() {
  params_ = model::resolve_parameters(interp_, *models_, *top_);
  model::check_loads(params_);
}

lang::Value Session::run(const lang::Value& value, device::Device& device) {
  resolve();
  graph::Graph& trace = interp_.tracer()->graph();
  auto stored = model::store_frozen_parameters(params_, trace);
  model::ParameterTable missing;
  for (const auto& param : params_.params) {
    // A parameter redefined (in the REPL, say) with another type gets a new value.
    const graph::Node& input = trace.node(param.decl->node);
    auto it = values_.find(param.path);
    if (it != values_.end() && (it->second.shape() != input.shape || it->second.dtype() != input.dtype)) {
      values_.erase(it);
    }
    if (!values_.count(param.path)) missing.params.push_back(param);
  }
  bool checked = false;
  auto feed = [&](const graph::Graph& program, const graph::NamedNode& input, bool read) {
    if (!checked) {
      model::check_unrooted_reads(interp_, *models_, program);
      checked = true;
    }
    if (read && !missing.params.empty()) {
      values_.merge(model::initial_values(missing, seed(), device, stored));
      missing.params.clear();
    }
    return model::input_value(program, input, read, values_, seed());
  };
  return materialize(value, interp_, device, feed);
}

}  // namespace sx::cli
