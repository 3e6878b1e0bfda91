// metric, counter, guard and field.
#include "train/step_forms.h"

#include <fmt/format.h>

#include "lang/builtins/builtins.h"
#include "lang/printer.h"
#include "lang/tracer.h"
#include "train/codes.h"

namespace sx::train {
namespace {

using lang::Args;
using lang::Value;

// The scalar tensor argument `i`, as a node of the trace (numbers become constants).
graph::NodeId scalar_node(Args& a, size_t i) {
  const auto& tracer = a.interp.tracer();
  if (const auto* t = lang::as_tensor(a[i])) {
    if (!t->info().shape.empty()) {
      lang::fail(
          kNotAScalar, a.span(i),
          fmt::format("`{}` takes a scalar, not a tensor of shape {}", a.function, graph::shape_str(t->info().shape)),
          "reduce it first, e.g. with (mean x)");
    }
    return t->node;
  }
  if (a[i].is(lang::Type::Int) || a[i].is(lang::Type::Float)) {
    return tracer->builder().constant(graph::Tensor::scalar(graph::DType::f32, a.number(i)));
  }
  a.type_error(i, "a scalar tensor or a number");
}

Value logged(Args& a, const std::shared_ptr<StepRecord>& record, bool counter) {
  const lang::Symbol* name = a.keyword(0);
  graph::NodeId node = scalar_node(a, 1);
  if (record->recording) {
    // Metrics and counters share the log's line (trace_step refuses the names of the
    // values every step logs itself).
    for (const auto* list : {&record->metrics, &record->counters}) {
      for (const auto& named : *list) {
        if (named.name == name->name) {
          lang::fail(kNotAScalar, a.span(0),
                     fmt::format("the step logs `:{}` twice", lang::shown_in_message(name->name)),
                     "give each metric its own name");
        }
      }
    }
    (counter ? record->counters : record->metrics).push_back({name->name, node, a.call});
  }
  return a[1];
}

Value guard(Args& a, const std::shared_ptr<StepRecord>& record) {
  const std::string& message = a.string(1);
  if (const auto* t = lang::as_tensor(a[0])) {
    if (!t->info().shape.empty() || t->info().dtype != graph::DType::boolean) {
      a.type_error(0, "a bool scalar tensor (a comparison) or a boolean");
    }
    if (record->recording) record->guards.push_back({message, t->node, a.call});
    return Value();
  }
  if (!a[0].is(lang::Type::Bool)) a.type_error(0, "a bool scalar tensor (a comparison) or a boolean");
  if (!a[0].as_bool()) lang::fail(kRunStopped, a.call, fmt::format("guard: {}", lang::shown_in_message(message)));
  return Value();
}

Value field(Args& a) {
  const lang::Symbol* name = a.keyword(1);
  if (const Value* v = plist_find(a[0], name->name)) return *v;
  std::string fields;
  if (a[0].is_list()) {
    std::vector<Value> items = lang::list_items(a[0]);
    for (size_t i = 0; i + 1 < items.size(); i += 2)
      fields += (fields.empty() ? "" : " ") + lang::printed_in_message(items[i]);
  }
  lang::fail(kFieldMissing, a.span(1), fmt::format("the batch has no field `:{}`", lang::shown_in_message(name->name)),
             fields.empty() ? "a batch is a plist of the loader's fields" : "its fields are " + fields);
}

}  // namespace

const Value* plist_find(const Value& plist, std::string_view key) {
  if (!plist.is(lang::Type::Cons)) return nullptr;
  for (lang::Cons* c = lang::as_cons(plist); c && lang::next(c); c = lang::next(lang::next(c))) {
    if (c->car.is(lang::Type::Keyword) && c->car.as<lang::Symbol>()->name == key) return &lang::next(c)->car;
  }
  return nullptr;
}

std::shared_ptr<StepRecord> install_step_forms(lang::Interpreter& interp) {
  auto record = std::make_shared<StepRecord>();
  // The record is what a plain builtin could not hold.
  auto define = [&](std::string_view name, lang::NativeClosure::Body body, std::string_view params,
                    std::string_view summary, std::string_view example) {
    interp.define_native(name, std::move(body),
                         lang::BuiltinDoc{std::string(params), std::string(summary), std::string(example), "Training"});
  };
  define(
      "metric", [record](Args& a) { return logged(a, record, false); }, "(name x)",
      "Logs the scalar x under :name at every step of a run (metrics.jsonl, the log); gives x back.",
      "(metric :accuracy 0.5)\n;; => 0.5");
  define(
      "counter", [record](Args& a) { return logged(a, record, true); }, "(name n)",
      "Adds the scalar n to the run's total under :name at every step (tokens seen, say); gives n back.",
      "(counter :tokens 128)\n;; => 128");
  define(
      "guard", [record](Args& a) { return guard(a, record); }, "(condition message)",
      "Stops a run with the message and the step when the condition (a bool scalar) is false.",
      "(guard (< 1.0 2.0) \"the loss is finite\")\n;; => nil");
  define("field", field, "(batch name)", "The field :name of a loader's batch (E-RUN-006 when it has none).",
         "(field (list :ids (tensor [1 2])) :ids)\n;; => (tensor [1 2] :dtype :i32)");
  return record;
}

}  // namespace sx::train
