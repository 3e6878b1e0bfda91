// defrun: keyword settings, checked against the keys docs/training.md lists, and the
// values of those the optimizer step reads.
#include "train/run_settings.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "graph/passes.h"
#include "lang/codes.h"
#include "lang/printer.h"
#include "train/codes.h"
#include "train/eval_pass.h"
#include "train/loaders.h"

namespace sx::train {
namespace {

constexpr std::array<std::string_view, 15> kKeys = {
    "data", "eval",      "batch",     "micro-batch",      "steps", "seed",      "optimizer", "schedule",
    "ema",  "precision", "grad-clip", "checkpoint-every", "keep",  "log-every", "after"};

std::string known_keys() {
  std::string out;
  for (auto key : kKeys) out += fmt::format("{}:{}", out.empty() ? "" : " ", key);
  return out;
}

// :optimizer, :schedule, :grad-clip and :ema are checked here, so a file that `check`
// accepts has settings the training loop can use. nil is none (no clipping, no EMA, the
// constant schedule), so a knob can turn one off.
void check_training_setting(const std::string& key, const lang::Value& value, lang::Span span) {
  if (value.is_nil()) return;
  auto refuse = [&](std::string_view what, std::string help) {
    lang::fail(kRunSettingInvalid, span,
               fmt::format("`:{}` is {}, not `{}`", key, what, lang::printed_in_message(value)), std::move(help));
  };
  if (key == "optimizer" && !as_optimizer(value)) {
    refuse("an optimizer", "write (adamw :lr 3e-4) or (sgd :lr 0.1 :momentum 0.9)");
  }
  if (key == "eval") {
    bool passes = as_eval_pass(value) != nullptr;
    if (value.is_list()) {
      passes = true;
      for (const lang::Value& item : lang::list_items(value)) passes = passes && as_eval_pass(item);
    }
    if (!passes)
      refuse("a pass or a list of passes", "write :eval (list (pass :name \"val\" :data LOADER :every 100))");
  }
  if (key == "after" && !value.is(lang::Type::Function)) {
    refuse("a function of no arguments, called with the trained parameters when the run ends",
           "write :after (lambda () (print (sample \"The\" 80)))");
  }
  if (key == "schedule" && !as_schedule(value)) {
    refuse("a learning-rate schedule", "write (constant), (warmup-cosine :warmup 100 :min-lr 1e-5) or (warmup-linear)");
  }
  if (key == "precision" && !(value.is(lang::Type::Keyword) &&
                              (value.as<lang::Symbol>()->name == "f32" || value.as<lang::Symbol>()->name == "bf16"))) {
    refuse("a precision", "write :precision :bf16 (matrix products on bf16 operands), or :f32");
  }
  bool number = value.is_number() && std::isfinite(value.as_double());
  if (key == "grad-clip" && !(number && value.as_double() > 0)) {
    refuse("a positive number",
           "the largest global norm of the gradients, as clip_grad_norm_'s max_norm: 1.0 is usual");
  }
  if (key == "ema" && !(number && value.as_double() >= 0 && value.as_double() < 1)) {
    refuse("a number in [0, 1)", "the decay of the average of the parameters: 0.999 is usual");
  }
}

}  // namespace

const OptimizerSpec* RunSettings::optimizer() const {
  const lang::Value* v = find("optimizer");
  return v ? as_optimizer(*v) : nullptr;
}

const ScheduleSpec* RunSettings::schedule() const {
  const lang::Value* v = find("schedule");
  return v ? as_schedule(*v) : nullptr;
}

std::optional<double> RunSettings::number(std::string_view key) const {
  const lang::Value* v = find(key);
  if (!v || !v->is_number()) return std::nullopt;
  return v->as_double();
}

std::string RunSettings::precision() const {
  const lang::Value* v = find("precision");
  return v && v->is(lang::Type::Keyword) ? v->as<lang::Symbol>()->name : "f32";
}

graph::Graph RunSettings::under_precision(graph::Graph graph, std::span<const std::string> kept_f32) const {
  return precision() == "bf16" ? graph::bf16_products(graph, kept_f32) : graph;
}

const lang::Value* RunSettings::find(std::string_view key) const {
  for (const auto& [name, value] : entries) {
    if (name == key) return &value;
  }
  return nullptr;
}

uint64_t RunSettings::seed() const {
  const lang::Value* seed = find("seed");
  return seed ? static_cast<uint64_t>(seed->as_int()) : 0;
}

std::shared_ptr<RunSettings> install_defrun(lang::Interpreter& interp) {
  install_optimizer_specs(interp);
  auto settings = std::make_shared<RunSettings>();
  interp.define_special_form(
      "defrun",
      [settings](lang::Interpreter& in, const lang::Value& form, lang::Span span, lang::Env& env) -> lang::Value {
        if (settings->defined) {
          lang::Diagnostic d;
          d.code = kSecondDefrun;
          d.span = span;
          d.message = "a second `defrun`";
          d.notes.push_back("the first is at " + settings->span.location());
          d.helps.push_back("a run file has one defrun; merge the two");
          throw lang::Error(std::move(d));
        }
        std::vector<std::pair<std::string, lang::Value>> entries;
        for (lang::Cons* c = lang::next(form.as<lang::Cons>()); c; c = lang::next(c)) {
          lang::Span key_span = c->car_span.known() ? c->car_span : span;
          if (!c->car.is(lang::Type::Keyword)) {
            lang::fail(kRunSettingInvalid, key_span,
                       fmt::format("`defrun` takes keyword settings, not `{}`", lang::printed_in_message(c->car)),
                       "the keys are " + known_keys());
          }
          std::string key = c->car.as<lang::Symbol>()->name;
          if (std::find(kKeys.begin(), kKeys.end(), key) == kKeys.end()) {
            lang::fail(kRunSettingInvalid, key_span,
                       fmt::format("`defrun` has no setting `:{}`", lang::shown_in_message(key)),
                       "the keys are " + known_keys());
          }
          lang::Cons* value_cell = lang::next(c);
          if (!value_cell)
            lang::fail(lang::kKeywordWithoutValue, key_span,
                       fmt::format("keyword `:{}` has no value", lang::shown_in_message(key)));
          lang::Span value_span = value_cell->car_span.known() ? value_cell->car_span : span;
          lang::Value value = in.eval(value_cell->car, value_span, env);
          if (key == "seed" && !(value.is(lang::Type::Int) && value.as_int() >= 0)) {
            lang::fail(kRunSettingInvalid, value_span,
                       fmt::format("`:seed` is a non-negative integer, not `{}`", lang::printed_in_message(value)));
          }
          check_training_setting(key, value, value_span);
          entries.emplace_back(key, std::move(value));
          c = value_cell;
        }
        settings->defined = true;
        settings->span = span;
        settings->entries = std::move(entries);
        return lang::Value();
      },
      lang::BuiltinDoc{
          "(defrun :key value ...)",
          "The run's settings: :data :eval :batch :micro-batch :steps :seed :optimizer :schedule :ema :precision "
          ":grad-clip :checkpoint-every :keep :log-every :after.",
          "(defrun :steps 100 :seed 7)", "Special forms"});
  // The loaders `:data` and `:eval` name come with defrun, so every command that evaluates
  // a run file has them.
  install_loaders(interp);
  install_eval_passes(interp);
  return settings;
}

}  // namespace sx::train
