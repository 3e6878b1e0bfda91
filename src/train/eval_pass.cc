// Evaluation passes: the `pass` constructor, and a pass traced and run.
#include "train/eval_pass.h"

#include <fmt/format.h>

#include <cstdio>

#include "graph/passes.h"
#include "io/checkpoint.h"
#include "lang/builtins/builtins.h"
#include "lang/printer.h"
#include "lang/tracer.h"
#include "model/model.h"
#include "train/codes.h"
#include "train/run_record.h"
#include "train/session.h"
#include "train/step.h"

namespace sx::train {
namespace {

using lang::Args;
using lang::Value;

Value make_pass(Args& a) {
  auto keys = a.keywords();
  auto spec = new EvalPassSpec();
  Value held(spec);
  spec->span = a.call;
  auto at = [&](std::string_view key) -> std::optional<size_t> {
    auto it = keys.find(std::string(key));
    return it == keys.end() ? std::nullopt : std::optional<size_t>(it->second);
  };
  if (!at("name") || !at("data")) {
    lang::fail(kRunSettingInvalid, a.call, "`pass` needs `:name` and `:data`",
               "e.g. (pass :name \"val\" :data (jsonl \"val.jsonl\" :fields [:x :y]) :every 100)");
  }
  spec->name = a.string(*at("name"));
  spec->data = a[*at("data")];
  if (!as_loader_spec(spec->data)) a.type_error(*at("data"), "a loader, such as (jsonl \"val.jsonl\" :fields [:x])");
  auto count = [&](std::string_view key, int64_t least, int64_t& out) {
    if (auto i = at(key)) {
      out = a.integer(*i);
      if (out < least) lang::fail(kRunSettingInvalid, a.span(*i), fmt::format("`:{}` must be {} or more", key, least));
    }
  };
  count("every", 0, spec->every);
  count("batches", 1, spec->batches);
  if (auto i = at("metrics")) {
    std::vector<Value> items = lang::list_items(a.list(*i));
    for (size_t k = 0; k < items.size(); k += 2) {
      if (!items[k].is(lang::Type::Keyword) || k + 1 >= items.size() || !items[k + 1].is(lang::Type::Function)) {
        lang::fail(kRunSettingInvalid, a.span(*i), "`:metrics` is a plist of names and functions",
                   "e.g. :metrics (list :accuracy accuracy), with (defun accuracy (prediction prepared) ...)");
      }
      spec->metrics.emplace_back(items[k].as<lang::Symbol>()->name, items[k + 1]);
    }
  }
  return held;
}

}  // namespace

const EvalPassSpec* as_eval_pass(const Value& v) {
  return v.is(lang::Type::Opaque) ? dynamic_cast<const EvalPassSpec*>(v.as<lang::Opaque>()) : nullptr;
}

std::string EvalPassSpec::print() const {
  return fmt::format("(pass :name {} :data {} :every {} :batches {})", lang::print(lang::make_string(name)),
                     lang::print(data), every, batches);
}

void install_eval_passes(lang::Interpreter& interp) {
  lang::install_rows(
      interp, "Training",
      {{"pass", make_pass, "(&key name data (every 0) (batches 10) metrics)",
        "An evaluation pass for defrun's :eval: the mean loss and metrics over `batches` batches of `data`, every "
        "`every` steps and at the end of a run.",
        "(save-tensors \"val.safetensors\" (list :x (ones [4 2])))\n"
        "(pass :name \"val\" :data (records \"val.safetensors\") :every 100)\n"
        ";; => (pass :name \"val\" :data (records \"val.safetensors\") :every 100 :batches 10)"}});
}

std::vector<const EvalPassSpec*> eval_passes(const RunSettings& run) {
  const Value* v = run.find("eval");
  if (!v || v->is_nil()) return {};
  if (const auto* one = as_eval_pass(*v)) return {one};
  std::vector<const EvalPassSpec*> out;
  for (const Value& item : lang::list_items(*v)) out.push_back(as_eval_pass(item));
  return out;
}

EvalPass::EvalPass(Session& session, const EvalPassSpec& spec, int64_t batch, device::Device& device)
    : spec_(spec), loader_(open_loader(*as_loader_spec(spec.data))), batch_(batch), tracer_(session.interp().tracer()) {
  const auto& tracer = session.interp().tracer();
  lang::Value model = required_definition(session, "model", "the model a pass evaluates");
  lang::Value loss_fn = required_definition(session, "loss", "(defun loss (prediction prepared) ...), a scalar");
  lang::Value* prepare = session.top().lookup(lang::intern("eval-prepare"));
  std::string prepared_by = "`eval-prepare`";
  if (!prepare) {
    prepare = session.top().lookup(lang::intern("prepare"));
    prepared_by = prepare ? "`prepare`" : "";
  }
  lang::Value batch_value = traced_batch(session, *loader_, batch, prefix());
  lang::Value prepared = prepare ? call(session, *prepare, {batch_value}) : batch_value;
  lang::Value prediction = apply_model(session, model, prepared, prepared_by);
  std::vector<graph::NodeId> outputs;
  auto scalar = [&](const std::string& name, const lang::Value& v) {
    const auto* t = lang::as_tensor(v);
    if (!t || !t->info().shape.empty() || !graph::is_float(t->info().dtype)) {
      lang::fail(
          kNotAScalar, spec.span,
          fmt::format("the pass `{}`: `{}` must give a floating-point scalar, not {}",
                      lang::shown_in_message(spec.name), lang::shown_in_message(name), lang::printed_in_message(v)));
    }
    outputs.push_back(tracer->builder().cast(t->node, graph::DType::f64));
    names_.push_back(name);
  };
  scalar("loss", call(session, loss_fn, {prediction, prepared}));
  for (const auto& [name, fn] : spec.metrics) scalar(name, call(session, fn, {prediction, prepared}));
  graph::Graph g = session.under_precision(graph::extract(tracer->graph(), outputs));
  std::vector<runtime::Binding> inputs, results;
  for (const auto& input : g.inputs) {
    if (input.name.starts_with(prefix())) inputs.push_back({runtime::Role::data, input.name});
    else if (session.params().find(input.name)) inputs.push_back({runtime::Role::parameter, input.name});
    else {
      lang::fail(kNotAScalar, spec.span,
                 fmt::format("the pass `{}` reads `{}`, which is neither data nor a parameter (random numbers in an "
                             "evaluation are not supported)",
                             lang::shown_in_message(spec.name), lang::shown_in_message(input.name)));
    }
  }
  for (const auto& name : names_) results.push_back({runtime::Role::metric, name});
  try {
    program_ = std::make_unique<runtime::Program>(device, std::move(g), std::move(inputs), std::move(results));
  } catch (const graph::IndexOutOfRange& e) {
    fail_index_out_of_range(*tracer_, e, fmt::format("the pass `{}`: ", spec.name));
  }
  feed_ = std::make_unique<StepFeed>(device, *program_, session.seed(), prefix());
}

std::vector<std::pair<std::string, double>> EvalPass::run(runtime::Store& store, uint64_t seed) {
  std::vector<double> sums(names_.size(), 0.0);
  for (int64_t b = 0; b < spec_.batches; ++b) {
    const Batch batch = loader_->batch(seed, b, batch_);
    std::span<const double> numbers;  // the loss and each metric, in the order of names_
    try {
      program_->run(store, feed_->fill(batch, b));
      numbers = program_->read_numbers();
    } catch (const graph::IndexOutOfRange& e) {
      fail_index_out_of_range(*tracer_, e, fmt::format("the pass `{}`, batch {}: ", spec_.name, b), prefix());
    }
    for (size_t k = 0; k < names_.size(); ++k) sums[k] += numbers[k];
  }
  std::vector<std::pair<std::string, double>> out;
  for (size_t k = 0; k < names_.size(); ++k) out.emplace_back(names_[k], sums[k] / static_cast<double>(spec_.batches));
  return out;
}

void evaluate_checkpoint(const EvaluateOptions& options, lang::InterpreterOptions interpreter, device::Device& device,
                         std::optional<Session>& made) {
  RunRecord record = read_run_record(options.checkpoint);
  Session& session = made.emplace(SessionOptions{std::move(interpreter), record.choices()});
  load_as_recorded(session, record, options.file, "evaluate");
  refuse_other_parameters(record, session, options.file, "evaluate");
  std::vector<const EvalPassSpec*> passes = eval_passes(session.settings());
  if (passes.empty()) {
    lang::fail(kRunSettingMissing, session.settings().span, "`defrun` has no `:eval` passes to run",
               "add :eval (list (pass :name \"val\" :data LOADER))");
  }
  const io::Checkpoint& checkpoint = record.checkpoint;
  bool averages = !options.trained && record.files->has("ema.safetensors");
  runtime::Store store(device);
  std::vector<WantedParameter> wanted;
  for (const auto& p : session.params().params)
    wanted.push_back({&p, session.interp().tracer()->graph().node(p.decl->node).dtype});
  for (auto& [path, value] : read_checkpoint_values(record, session.params(), wanted, averages))
    store.put(path, std::move(value));
  int64_t batch = 0;
  if (const Value* b = session.settings().find("batch"); b && b->is(lang::Type::Int)) batch = b->as_int();
  if (batch < 1)
    lang::fail(kRunSettingMissing, session.settings().span, "`defrun` has no `:batch`, which a pass needs");
  std::printf("%s, %s\n", checkpoint.written.c_str(), averages ? "the :ema averages" : "the trained parameters");
  for (const EvalPassSpec* spec : passes) {
    EvalPass pass(session, *spec, batch, device);
    std::string line;
    for (const auto& [name, value] : pass.run(store, session.seed())) line += fmt::format("  {} {:.6g}", name, value);
    std::printf("%s:%s\n", spec->name.c_str(), line.c_str());
  }
}

}  // namespace sx::train
