// Tracing the training step.
#include "train/step.h"

#include <fmt/format.h>

#include "graph/autodiff.h"
#include "graph/errors.h"
#include "graph/passes.h"
#include "lang/printer.h"
#include "lang/tracer.h"
#include "model/codes.h"
#include "model/values.h"
#include "train/codes.h"

namespace sx::train {

lang::Value call(Session& session, const lang::Value& f, std::vector<lang::Value> args) {
  std::vector<lang::Span> spans(args.size());
  return session.interp().apply(f, args, spans, {});
}

lang::Value required_definition(Session& session, std::string_view name, std::string_view what) {
  if (lang::Value* v = session.top().lookup(lang::intern(name))) return *v;
  lang::fail(kRunDefinitionMissing, {}, fmt::format("the run file defines no `{}`: {}", name, what),
             "see docs/training.md for what a run file defines");
}

lang::Value traced_batch(Session& session, const Loader& loader, int64_t batch, std::string_view prefix) {
  const auto& tracer = session.interp().tracer();
  std::vector<lang::Value> items;
  for (const FieldInfo& field : loader.fields()) {
    graph::Shape shape{batch};
    shape.insert(shape.end(), field.shape.begin(), field.shape.end());
    graph::NodeId node = tracer->builder().input(std::string(prefix) + field.name, shape, field.dtype);
    items.push_back(lang::make_keyword(field.name));
    items.push_back(lang::make_tensor(tracer, node));
  }
  return lang::list(std::move(items));
}

lang::Value apply_model(Session& session, const lang::Value& model, const lang::Value& prepared,
                        std::string_view prepared_by) {
  const lang::Value* inputs = plist_find(prepared, "inputs");
  if (!inputs) {
    lang::fail(kFieldMissing, {},
               fmt::format("{} gives no `:inputs`: {}",
                           prepared_by.empty() ? "the batch (there is no `prepare`)" : prepared_by,
                           lang::printed_in_message(prepared)),
               "return a plist such as (list :inputs x :targets y)");
  }
  std::vector<lang::Value> args;
  if (lang::as_tensor(*inputs) || !inputs->is_list()) args.push_back(*inputs);
  else args = lang::list_items(*inputs);
  return call(session, model, args);
}

namespace {

// The role of each input of a step's graph, by its name.
std::vector<runtime::Binding> input_bindings(const graph::Graph& graph, const model::ParameterTable& params,
                                             const std::vector<StateTensor>& state) {
  std::vector<runtime::Binding> inputs;
  for (const graph::NamedNode& input : graph.inputs) {
    const std::string& name = input.name;
    if (params.find(name)) inputs.push_back({runtime::Role::parameter, name});
    else if (name == "step") inputs.push_back({runtime::Role::step, name});
    else if (name.starts_with(kDataPrefix) || name.starts_with(kGradPrefix))
      inputs.push_back({runtime::Role::data, name});
    else if (name.starts_with("rng.")) inputs.push_back({runtime::Role::random_key, name});
    else if (std::any_of(state.begin(), state.end(), [&](const StateTensor& s) { return s.name == name; }))
      inputs.push_back({runtime::Role::optimizer_state, name});
    else {
      lang::fail(model::kParameterWithoutRoot, {},
                 fmt::format("the step reads the parameter input `{}`, which has no root", name),
                 "bind the model with `defvar` at the top level, or build it inside the `defmodel` that uses it");
    }
  }
  return inputs;
}

// Appends the update's new parameters and state to a step's outputs and their bindings.
void append_updated(const GroupAssignment& groups, const UpdateGraph& update, std::vector<graph::NodeId>& outputs,
                    std::vector<runtime::Binding>& bindings) {
  for (size_t i = 0; i < groups.params.size(); ++i) {
    outputs.push_back(update.new_params[i]);
    bindings.push_back({runtime::Role::parameter, groups.params[i].param->path});
  }
  for (const auto& s : update.state) {
    outputs.push_back(s.updated);
    bindings.push_back({runtime::Role::optimizer_state, s.tensor.name});
  }
}

// The update of a split step: (parameters, state, summed gradients, step) -> (new
// parameters, new state, lr, grad-norm).
StepGraph::Update split_update(graph::Builder& b, const GroupAssignment& groups, const UpdateGraph& update,
                               const model::ParameterTable& params, const std::vector<StateTensor>& state) {
  StepGraph::Update out;
  std::vector<graph::NodeId> outputs;
  append_updated(groups, update, outputs, out.outputs);
  outputs.push_back(b.cast(update.lr, graph::DType::f32));
  out.outputs.push_back({runtime::Role::metric, "lr"});
  if (update.grad_norm) {
    outputs.push_back(b.cast(*update.grad_norm, graph::DType::f32));
    out.outputs.push_back({runtime::Role::metric, "grad-norm"});
  }
  out.graph = graph::extract(b.graph(), outputs);
  for (size_t i = 0; i < out.outputs.size(); ++i) out.graph.outputs[i].name = out.outputs[i].name;
  out.inputs = input_bindings(out.graph, params, state);
  return out;
}

}  // namespace

StepGraph trace_step(Session& session, const Loader& loader, const StepSettings& settings) {
  auto& interp = session.interp();
  const auto& tracer = interp.tracer();
  graph::Builder& b = tracer->builder();
  const RunSettings& run = session.settings();
  const OptimizerSpec* optimizer = run.optimizer();
  if (!optimizer) {
    lang::fail(kRunSettingMissing, run.span, "`defrun` has no `:optimizer`, which a run needs",
               "add one, e.g. :optimizer (adamw :lr 3e-4)");
  }
  lang::Value model = required_definition(session, "model", "the model the run trains");
  lang::Value loss_fn = required_definition(session, "loss", "(defun loss (prediction prepared) ...), a scalar");
  lang::Value* prepare = session.top().lookup(lang::intern("prepare"));

  lang::Value batch = traced_batch(session, loader, settings.batch, kDataPrefix);

  StepRecord& record = session.step_record();
  record = StepRecord{};
  record.recording = true;
  lang::Value prepared = prepare ? call(session, *prepare, {batch}) : batch;
  lang::Value prediction = apply_model(session, model, prepared, prepare ? "`prepare`" : "");
  lang::Value loss_value = call(session, loss_fn, {prediction, prepared});
  record.recording = false;
  const auto* loss = lang::as_tensor(loss_value);
  if (!loss || !loss->info().shape.empty() || !graph::is_float(loss->info().dtype)) {
    // A tensor is shown where it was made, so the form to reduce is underlined.
    lang::Span made = loss ? tracer->span_of(tracer->graph().node(loss->node).origin) : lang::Span{};
    lang::fail(kNotAScalar, made,
               fmt::format("`loss` must give a floating-point scalar tensor, not {}",
                           loss ? fmt::format("{}{}", graph::dtype_name(loss->info().dtype),
                                              graph::shape_str(loss->info().shape))
                                : lang::printed_in_message(loss_value)),
               "reduce it with (mean ...) and keep it a float");
  }

  session.resolve();
  const model::ParameterTable& params = session.params();
  graph::Graph& trace = tracer->graph();
  model::store_frozen_parameters(params, trace);
  GroupAssignment groups = assign_groups(params, *optimizer);
  for (const auto& warning : groups.warnings) interp.warn(warning);
  std::vector<graph::NodeId> values;
  for (const ParamGroup& p : groups.params) values.push_back(p.param->decl->node);
  std::vector<graph::NodeId> grads;
  try {
    grads = graph::gradients(b, loss->node, values);
  } catch (const graph::GraphError& e) {
    lang::fail(kNotAScalar, {}, fmt::format("the loss cannot be differentiated: {}", e.what()));
  }
  UpdateSettings update_settings{.optimizer = optimizer,
                                 .schedule = run.schedule(),
                                 .total_steps = settings.total_steps,
                                 .grad_clip = run.number("grad-clip"),
                                 .ema = run.number("ema")};
  StepGraph step;
  std::vector<graph::NodeId> outputs;
  auto logged = [&](runtime::Role role, const std::string& name, graph::NodeId node) {
    outputs.push_back(b.cast(node, graph::DType::f32));
    step.outputs.push_back({role, name});
  };
  std::vector<ParamNodes> param_nodes;
  for (size_t i = 0; i < values.size(); ++i) param_nodes.push_back({values[i], grads[i]});
  if (settings.split) {
    // This graph returns a micro-batch's gradients; the update reads the summed ones.
    for (size_t i = 0; i < values.size(); ++i) {
      const std::string name = std::string(kGradPrefix) + groups.params[i].param->path;
      logged(runtime::Role::value, name, grads[i]);
      param_nodes[i].grad = b.input(name, trace.node(values[i]).shape, graph::DType::f32);
    }
  }
  const UpdateGraph update = build_update(b, groups, param_nodes, update_settings);
  for (const auto& state : update.state) step.state.push_back(state.tensor);
  if (!settings.split) append_updated(groups, update, outputs, step.outputs);
  outputs.push_back(loss->node);
  step.outputs.push_back({runtime::Role::metric, "loss"});
  if (!settings.split) {
    logged(runtime::Role::metric, "lr", update.lr);
    if (update.grad_norm) logged(runtime::Role::metric, "grad-norm", *update.grad_norm);
  }
  // The log's line names the step, and the values every step logs, itself.
  auto refuse_taken = [&](const StepRecord::Named& named) {
    if (named.name == "step" || named.name == "loss" || named.name == "lr" ||
        (named.name == "grad-norm" && update.grad_norm)) {
      lang::fail(kNotAScalar, named.span, fmt::format("every step logs `:{}` itself", named.name),
                 "give the metric a name of its own");
    }
  };
  for (const auto& m : record.metrics) {
    refuse_taken(m);
    logged(runtime::Role::metric, m.name, m.node);
  }
  for (const auto& c : record.counters) {
    refuse_taken(c);
    logged(runtime::Role::counter, c.name, c.node);
    step.counters.push_back(c.name);
  }
  for (const auto& g : record.guards) {
    // Named apart from the metrics (whose names are keywords, without spaces), and from
    // each other: two guards may give one message.
    std::string name = "guard: " + g.name;
    for (int n = 2; step.guards.contains(name); ++n) name = fmt::format("guard: {} ({})", g.name, n);
    outputs.push_back(g.node);
    step.outputs.push_back({runtime::Role::guard, name});
    step.guards.emplace(name, g);
  }
  if (settings.split) step.update = split_update(b, groups, update, params, step.state);

  step.graph = graph::extract(trace, outputs);
  for (size_t i = 0; i < step.outputs.size(); ++i) step.graph.outputs[i].name = step.outputs[i].name;
  step.inputs = input_bindings(step.graph, params, step.state);
  return step;
}

}  // namespace sx::train
