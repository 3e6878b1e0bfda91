// Evaluating a run file for a command, and running the tensors of its values.
#include "train/session.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

#include "device/codes.h"
#include "device/interrupt.h"
#include "graph/memory.h"
#include "graph/passes.h"
#include "io/checkpoint.h"
#include "io/checkpoint_files.h"
#include "lang/codes.h"
#include "lang/tracer.h"
#include "model/codes.h"
#include "model/load.h"
#include "model/values.h"
#include "runtime/compile.h"
#include "train/run_record.h"

namespace sx::train {
namespace {

void collect(const lang::Value& v, std::vector<graph::NodeId>& nodes) {
  if (const auto* t = lang::as_tensor(v)) {
    if (!t->info().value) nodes.push_back(t->node);
  } else if (v.is(lang::Type::Cons)) {
    for (lang::Cons* c = lang::as_cons(v); c; c = lang::next(c)) collect(c->car, nodes);
  } else if (v.is(lang::Type::Vector)) {
    for (const auto& item : v.as<lang::Vector>()->items) collect(item, nodes);
  }
}

lang::Value replace(const lang::Value& v, const std::map<graph::NodeId, lang::Value>& done) {
  if (const auto* t = lang::as_tensor(v)) {
    auto it = done.find(t->node);
    return it == done.end() ? v : it->second;
  }
  if (v.is(lang::Type::Cons)) {
    std::vector<lang::Value> items;
    for (lang::Cons* c = lang::as_cons(v); c; c = lang::next(c)) items.push_back(replace(c->car, done));
    return lang::list(std::move(items));
  }
  if (v.is(lang::Type::Vector)) {
    std::vector<lang::Value> items;
    for (const auto& item : v.as<lang::Vector>()->items) items.push_back(replace(item, done));
    return lang::make_vector(std::move(items));
  }
  return v;
}

// Runs `body`, which compiles or runs a program of `subject` (what the user asked for),
// a part of `tracer`'s trace, on `device`, with the device's refusals as diagnostics:
// E-MEM-001 pointing at `form`, the refusal's code (E-DEVICE-001 unless it has its own)
// saying the device could not `verb` it, E-DEVICE-004 for an index outside its axis,
// E-EVAL-020 for an interruption (the REPL's Ctrl-C).
void on_device(const lang::Tracer& tracer, device::Device& device, lang::Span form, std::string_view verb,
               std::string_view subject, const std::function<void()>& body) {
  try {
    body();
  } catch (const graph::IndexOutOfRange& e) {
    fail_index_out_of_range(tracer, e, "", {}, form);
  } catch (const graph::MemoryLimitError& e) {
    lang::fail(graph::kOverMemoryLimit, form, e.what(), std::string(graph::kMemoryLimitHelp));
  } catch (const std::bad_alloc&) {
    lang::fail(
        graph::kOverMemoryLimit, form,
        graph::out_of_memory_message(fmt::format("as the {} device tried to {} {}", device.name(), verb, subject)),
        std::string(graph::kOutOfMemoryHelp));
  } catch (const device::DeviceError& e) {
    lang::fail(e.code(), {}, fmt::format("the {} device could not {} {}: {}", device.name(), verb, subject, e.what()));
  } catch (const device::Interrupted&) {
    lang::fail(lang::kInterrupted, {}, fmt::format("interrupted while the {} device ran {}", device.name(), subject),
               "Ctrl-C stopped this input; the session goes on");
  }
}

}  // namespace

void fail_index_out_of_range(const lang::Tracer& tracer, const graph::IndexOutOfRange& error, std::string_view context,
                             std::string_view data_prefix, lang::Span otherwise) {
  const std::optional<std::string>& input = error.input();
  std::string message = error.what();
  // A batch's field: its first axis is the batch's rows.
  if (std::vector<int64_t> at = error.position();
      !data_prefix.empty() && input && input->starts_with(data_prefix) && !at.empty()) {
    message =
        error.message(fmt::format("the batch's `{}` (row {})", input->substr(data_prefix.size()), at.front()), at);
  }
  lang::Span at_form = tracer.span_of(error.origin());
  lang::fail(device::kIndexOutsideAxis, at_form.known() ? at_form : otherwise, fmt::format("{}{}", context, message),
             "no index is clamped or wrapped: check the data where it is made");
}

Session::Session(SessionOptions options)
    : interp_(std::move(options.interpreter)),
      models_(model::install_models(interp_)),
      settings_(train::install_defrun(interp_)),
      knobs_(train::install_knobs(interp_, std::move(options.choices))),
      step_record_(install_step_forms(interp_)) {
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

void Session::use_checkpoint(const std::string& location) {
  try {
    checkpoint_read_ = io::resolve_checkpoint(location);
    io::CheckpointReader files = open_checkpoint_files(checkpoint_read_);
    checkpoint_ = files.read_tensors("params.safetensors");
    const nlohmann::json experiment = files.read_json("experiment.json");
    checkpoint_loads_ = io::parse_load_record(experiment, checkpoint_read_.written + "/experiment.json");
    checkpoint_table_.clear();
    for (const auto& p : experiment.value("parameters", nlohmann::json::array())) {
      if (p.is_object() && p.contains("path") && p["path"].is_string()) checkpoint_table_.insert(p["path"]);
    }
  } catch (const io::CheckpointError& e) {
    lang::fail(e.code(), {}, checkpoint_read_.named_as_written(e.what()));
  } catch (const io::LoadError& e) {
    lang::fail(io::kCheckpointMismatch, {}, checkpoint_read_.named_as_written(e.what()));
  }
  model::check_recorded_files(checkpoint_loads_, checkpoint_read_.written);
}

void Session::run_tensors_on(device::Device& device) {
  interp_.materialize = [this, &device](const lang::Value& value) {
    // A file's top level evaluated by load() has no environment to resolve yet.
    if (!top_) return value;
    return run(value, device);
  };
}

graph::Graph Session::under_precision(graph::Graph graph) const {
  std::vector<std::string> high;
  for (const auto& p : params_.params) {
    if (p.decl->numerics_high) high.push_back(p.path);
  }
  return settings_->under_precision(std::move(graph), high);
}

void Session::resolve() {
  params_ = model::resolve_parameters(interp_, *models_, *top_);
  model::check_loads(params_);
}

std::vector<runtime::Binding> Session::bind_inputs(const graph::Graph& program) const {
  std::vector<runtime::Binding> bindings;
  for (const graph::NamedNode& input : program.inputs) {
    if (params_.find(input.name)) {
      bindings.push_back({runtime::Role::parameter, input.name});
    } else if (input.name.starts_with("rng.")) {
      bindings.push_back({runtime::Role::random_key, input.name});
    } else {
      const graph::Node& node = program.node(input.node);
      lang::fail(
          model::kParameterWithoutRoot, {},
          fmt::format("a value reads the parameter input `{}` ({}{}), which has no root or no value",
                      lang::shown_in_message(input.name), graph::dtype_name(node.dtype), graph::shape_str(node.shape)),
          "bind the model with `defvar` at the top level, or build it inside the `defmodel` that uses it");
    }
  }
  return bindings;
}

void Session::initialize(const graph::Graph& program, const std::map<std::string, graph::DType>& stored) {
  model::ParameterTable missing;
  for (const graph::NamedNode& input : program.inputs) {
    const model::Parameter* param = params_.find(input.name);
    if (!param) continue;
    // A parameter redefined (in the REPL, say) with another type gets a new value.
    const graph::Node& node = program.node(input.node);
    if (store_->contains(param->path)) {
      const device::Buffer& held = store_->at(param->path);
      if (held.shape() == node.shape && held.dtype() == node.dtype) continue;
      store_->erase(param->path);
    }
    missing.params.push_back(*param);
  }
  if (checkpoint_) {
    std::erase_if(missing.params, [&](const model::Parameter& param) {
      const io::TensorInfo* info = checkpoint_->find(param.path);
      if (!info) {
        // Read from its file below, as the checkpoint's run read it.
        if (model::is_frozen_load(param)) {
          model::check_load_reference(param, checkpoint_loads_, checkpoint_read_.written);
        } else if (checkpoint_table_.count(param.path)) {
          // A parameter of the checkpoint's run, which its weights must hold; one defined
          // since (in the REPL) starts from its initializer.
          lang::fail(io::kCheckpointMismatch, param.decl->span,
                     fmt::format("{} holds no `{}`, a parameter its run trained",
                                 lang::shown_in_message(checkpoint_read_.named_as_written(checkpoint_->path())),
                                 lang::shown_in_message(param.path)),
                     "the checkpoint is not whole: use another, or run the file again with --fresh");
        }
        return false;
      }
      const graph::Node& node = program.node(*program.find_input(param.path));
      graph::Tensor value;
      try {
        value = io::read_tensor(*checkpoint_, *info, node.dtype);
      } catch (const io::LoadError& e) {
        lang::fail(io::kCheckpointMismatch, param.decl->span, checkpoint_read_.named_as_written(e.what()));
      }
      if (value.shape() != node.shape) {
        lang::fail(io::kCheckpointMismatch, param.decl->span,
                   fmt::format("`{}` is {} in {}, {} here", lang::shown_in_message(param.path),
                               graph::shape_str(value.shape()),
                               lang::shown_in_message(checkpoint_read_.named_as_written(checkpoint_->path())),
                               graph::shape_str(node.shape)));
      }
      store_->put(param.path, std::move(value));
      return true;
    });
  }
  if (missing.params.empty()) return;
  for (auto& [path, value] : model::initial_values(missing, seed(), store_->device(), stored)) {
    store_->put(path, std::move(value));
  }
}

void Session::forget_unreachable() {
  // A floor, so that small sessions never pay for it; doubling keeps its cost, a walk over
  // the trace, proportional to what the entries added.
  constexpr size_t kFloor = 4096;
  lang::Tracer& tracer = *interp_.tracer();
  if (tracer.graph().nodes.size() < std::max(kFloor, 2 * compacted_size_)) return;
  tracer.compact();
  compacted_size_ = tracer.graph().nodes.size();
}

lang::Value Session::run(const lang::Value& value, device::Device& device) {
  resolve();
  std::vector<graph::NodeId> nodes;
  collect(value, nodes);
  if (nodes.empty()) return value;
  graph::Graph& trace = interp_.tracer()->graph();
  auto stored = model::store_frozen_parameters(params_, trace);
  graph::Graph program = graph::extract(trace, nodes);
  model::check_unrooted_reads(interp_, *models_, program);
  if (!store_ || &store_->device() != &device) {
    auto moved = std::make_unique<runtime::Store>(device);
    if (store_) {
      for (const std::string& path : store_->paths()) moved->put(path, store_->read(path));
    }
    store_ = std::move(moved);
  }
  // Where a refusal of the whole program points: the form that built the value's first tensor.
  lang::Span form = interp_.tracer()->span_of(trace.nodes[nodes.front()].origin);
  std::vector<graph::Tensor> results;
  // What the device runs, the parameters' initializers first: the errors of either (and
  // an interruption, the REPL's Ctrl-C) are the value's.
  on_device(*interp_.tracer(), device, form, "run", "the value", [&] {
    initialize(program, stored);
    std::vector<runtime::Binding> inputs = bind_inputs(program);
    std::vector<device::Buffer> keys;
    for (const runtime::Binding& input : inputs) {
      if (input.role == runtime::Role::random_key) keys.push_back(device.upload(model::random_key(seed(), input.name)));
    }
    std::vector<const device::Buffer*> fed;
    for (const device::Buffer& key : keys) fed.push_back(&key);
    runtime::Program run(device, std::move(program), std::move(inputs),
                         std::vector<runtime::Binding>(nodes.size(), {runtime::Role::value, ""}));
    for (const device::Buffer& result : run.run(*store_, fed)) results.push_back(device.download(result));
  });
  const auto& tracer = interp_.tracer();
  std::map<graph::NodeId, lang::Value> done;
  for (size_t i = 0; i < nodes.size(); ++i) {
    done[nodes[i]] = lang::make_tensor(tracer, tracer->builder().constant(std::move(results[i])));
  }
  return replace(value, done);
}

graph::Graph Session::compile(const graph::Graph& graph, device::Device& device) {
  lang::Span form =
      graph.outputs.empty() ? lang::Span{} : interp_.tracer()->span_of(graph.node(graph.outputs[0].node).origin);
  graph::Graph optimized;
  on_device(*interp_.tracer(), device, form, "compile", "the file's tensors",
            [&] { optimized = runtime::compile(device, graph).graph; });
  return optimized;
}

}  // namespace sx::train
