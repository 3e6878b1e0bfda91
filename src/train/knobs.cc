// defknob and defvariant.
#include "train/knobs.h"

#include <fmt/format.h>

#include "lang/codes.h"
#include "lang/printer.h"
#include "lang/reader.h"
#include "train/codes.h"

namespace sx::train {
namespace {

using lang::Cons;
using lang::Span;
using lang::Value;

Span span_of(const Cons* c, Span fallback) { return c && c->car_span.known() ? c->car_span : fallback; }

// A --knob value is one form, read and evaluated: 3, 0.5, :adamw, "text", [2 3].
Value knob_value(lang::Interpreter& in, const std::string& name, const std::string& text) {
  const auto& file = in.sources().add(fmt::format("--knob {}", name), text);
  auto forms = lang::read_forms(file);
  if (forms.size() != 1) {
    lang::fail(kUnknownKnob, {},
               fmt::format("--knob {}={} is not one value", lang::shown_in_message(name), lang::shown_in_message(text)),
               "write one number, string, keyword or vector, e.g. --knob lr=3e-4");
  }
  return in.eval(forms[0].value, forms[0].span, in.builtins());
}

Value defvariant(KnobState& state, lang::Interpreter& in, const Value& form, Span span, lang::Env& env) {
  const Cons* head = form.as<Cons>();
  const Cons* name_cell = lang::next(head);
  if (!name_cell || !name_cell->car.is(lang::Type::Symbol)) {
    lang::fail(lang::kMalformedForm, span, "malformed `defvariant`", "write it as (defvariant name :knob value ...)");
  }
  std::string name = name_cell->car.as<lang::Symbol>()->name;
  if (state.variants.count(name)) return Value();  // evaluated ahead of the file by collect_variants
  std::map<std::string, Value> values;
  for (const Cons* c = lang::next(name_cell); c; c = lang::next(c)) {
    const Cons* value = lang::next(c);
    if (!c->car.is(lang::Type::Keyword) || !value) {
      lang::fail(lang::kMalformedForm, span_of(c, span), "malformed `defvariant`",
                 "write it as (defvariant name :knob value ...)");
    }
    values[c->car.as<lang::Symbol>()->name] = in.eval(value->car, span_of(value, span), env);
    c = value;
  }
  state.variants[name] = std::move(values);
  return Value();
}

Value defknob(KnobState& state, lang::Interpreter& in, const Value& form, Span span, lang::Env& env) {
  const Cons* name_cell = lang::next(form.as<Cons>());
  const Cons* default_cell = name_cell ? lang::next(name_cell) : nullptr;
  const Cons* doc_cell = default_cell ? lang::next(default_cell) : nullptr;
  if (!default_cell || !name_cell->car.is(lang::Type::Symbol) || (doc_cell && !doc_cell->car.is(lang::Type::String)) ||
      (doc_cell && lang::next(doc_cell))) {
    lang::fail(lang::kMalformedForm, span, "malformed `defknob`",
               "write it as (defknob name default \"what it sets\")");
  }
  const auto* symbol = name_cell->car.as<lang::Symbol>();
  Knob knob{symbol->name, in.eval(default_cell->car, span_of(default_cell, span), env),
            doc_cell ? lang::string_of(doc_cell->car) : "", "default"};
  if (!state.choices.variant.empty()) {
    const auto& chosen = state.variants[state.choices.variant];
    if (auto it = chosen.find(knob.name); it != chosen.end()) {
      knob.value = it->second;
      knob.source = "variant " + state.choices.variant;
    }
  }
  if (auto it = state.choices.knobs.find(knob.name); it != state.choices.knobs.end()) {
    knob.value = knob_value(in, knob.name, it->second);
    knob.source = "--knob";
  }
  lang::define_top_level(in, symbol, knob.value, span_of(name_cell, span), env);
  state.knobs.push_back(std::move(knob));
  return Value(symbol);
}

}  // namespace

std::shared_ptr<KnobState> install_knobs(lang::Interpreter& interp, KnobChoices choices) {
  auto state = std::make_shared<KnobState>();
  state->choices = std::move(choices);
  auto doc = [](std::string_view form, std::string_view summary, std::string_view example) {
    return lang::BuiltinDoc{std::string(form), std::string(summary), std::string(example), "Special forms"};
  };
  interp.define_special_form(
      "defknob",
      [state](lang::Interpreter& in, const Value& f, Span s, lang::Env& e) { return defknob(*state, in, f, s, e); },
      doc("(defknob name default [\"doc\"])",
          "Defines name at the top level as a knob: default, unless `--knob name=VALUE` or the `--variant` chosen "
          "sets it; gives the name.",
          "(defknob width 128 \"width of the hidden layer\")\nwidth\n;; => 128"));
  interp.define_special_form(
      "defvariant",
      [state](lang::Interpreter& in, const Value& f, Span s, lang::Env& e) { return defvariant(*state, in, f, s, e); },
      doc("(defvariant name :knob value ...)",
          "Names a set of knob values; `--variant name` gives them to the file's defknobs, before `--knob`.",
          "(defvariant small :width 64)\n(defknob width 128 \"width of the hidden layer\")\nwidth\n;; => 128"));
  return state;
}

void collect_variants(lang::Interpreter& interp, KnobState& state, const std::string& file) {
  if (state.choices.variant.empty()) return;
  const auto& source = lang::load_source_file(interp.sources(), file, interp.options().reader_limits);
  lang::Ref<lang::Env> scratch = interp.new_top_level(file);
  for (const auto& form : lang::read_forms(source, interp.options().reader_limits)) {
    const Cons* c = lang::as_cons(form.value);
    const lang::Symbol* head = c ? lang::as_symbol(c->car) : nullptr;
    if (head && head->name == "defvariant") defvariant(state, interp, form.value, form.span, *scratch);
  }
  if (!state.variants.count(state.choices.variant)) {
    std::string names;
    for (const auto& [name, values] : state.variants)
      names += (names.empty() ? "" : ", ") + lang::shown_in_message(name);
    lang::fail(kUnknownVariant, {},
               fmt::format("{} has no variant `{}`", lang::shown_in_message(file),
                           lang::shown_in_message(state.choices.variant)),
               names.empty() ? "the file defines no variants" : "its variants are: " + names);
  }
}

void check_choices_used(const KnobState& state) {
  for (const auto& [name, text] : state.choices.knobs) {
    bool found = false;
    for (const auto& knob : state.knobs) found = found || knob.name == name;
    if (!found) {
      std::string names;
      for (const auto& knob : state.knobs) names += (names.empty() ? "" : ", ") + lang::shown_in_message(knob.name);
      const std::string shown = lang::shown_in_message(name);
      lang::fail(kUnknownKnob, {}, fmt::format("--knob {}: the file defines no knob `{}`", shown, shown),
                 names.empty() ? "the file defines no knobs" : "its knobs are: " + names);
    }
  }
}

void check_no_choices(const KnobState& state) {
  constexpr const char* kHelp =
      "knobs and variants are a run file's defknob and defvariant forms: give the file (eval --file FILE.sx, or "
      "repl FILE.sx)";
  if (!state.choices.knobs.empty()) {
    const std::string name = lang::shown_in_message(state.choices.knobs.begin()->first);
    lang::fail(kUnknownKnob, {}, fmt::format("--knob {}: no file is evaluated, so there is no knob `{}`", name, name),
               kHelp);
  }
  if (!state.choices.variant.empty()) {
    const std::string name = lang::shown_in_message(state.choices.variant);
    lang::fail(kUnknownVariant, {},
               fmt::format("--variant {}: no file is evaluated, so there is no variant `{}`", name, name), kHelp);
  }
}

}  // namespace sx::train
