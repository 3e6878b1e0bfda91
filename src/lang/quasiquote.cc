// Quasiquote: `(a ,b ,@c) builds a form from a template. Inserted forms keep the span
// they had at the macro call, so errors inside an expansion point at the user's code.
#include <fmt/format.h>

#include "lang/interp.h"
#include "lang/printer.h"

namespace sx::lang {
namespace {

// `(name x)` when `form` is exactly that, else nullptr.
const Cons* tagged(const Value& form, std::string_view name) {
  const Cons* c = as_cons(form);
  if (!c) return nullptr;
  const Symbol* head = as_symbol(c->car);
  if (!head || head->name != name) return nullptr;
  const Cons* arg = next(c);
  return arg && !next(arg) ? arg : nullptr;
}

// The span a value had among the macro call's arguments, when it is one of them.
Span span_of_inserted(Interpreter& in, const Value& value, const Span& fallback) {
  if (const auto* expansion = in.expansion()) {
    for (const auto& [arg, span] : expansion->args) {
      bool same = value.is_object() ? value.object() == arg.object() : equal(value, arg);
      if (same) return span;
    }
  }
  return fallback;
}

}  // namespace

Value eval_quasiquote(Interpreter& in, const Value& tmpl, const Span& span, Env& env, int depth) {
  if (const Cons* arg = tagged(tmpl, "unquote")) {
    Span where = arg->car_span.known() ? arg->car_span : span;
    if (depth == 1) return in.eval(arg->car, where, env);
    return list_with_spans({make_symbol("unquote"), eval_quasiquote(in, arg->car, where, env, depth - 1)},
                           {span, where});
  }
  if (const Cons* arg = tagged(tmpl, "quasiquote")) {
    Span where = arg->car_span.known() ? arg->car_span : span;
    return list_with_spans({make_symbol("quasiquote"), eval_quasiquote(in, arg->car, where, env, depth + 1)},
                           {span, where});
  }
  bool is_vector = tmpl.is(Type::Vector);
  if (!is_vector && !tmpl.is(Type::Cons)) return tmpl;

  std::vector<Value> items;
  std::vector<Span> spans;
  auto add = [&](const Value& element, const Span& where) {
    const Cons* splice = tagged(element, "unquote-splicing");
    if (!splice || depth != 1) {
      Value built = eval_quasiquote(in, element, where, env, depth);
      bool inserted = tagged(element, "unquote") && depth == 1;
      spans.push_back(inserted ? span_of_inserted(in, built, where) : where);
      items.push_back(std::move(built));
      return;
    }
    Span splice_span = splice->car_span.known() ? splice->car_span : where;
    Value spliced = in.eval(splice->car, splice_span, env);
    // Each spliced item is a step, as each item a list builtin builds: a macro that
    // doubles a list by splicing it twice is bounded by --max-steps.
    if (spliced.is(Type::Vector)) {
      in.charge(spliced.as<Vector>()->items.size(), splice_span);
      for (const auto& item : spliced.as<Vector>()->items) items.push_back(item), spans.push_back(splice_span);
    } else if (spliced.is_list()) {
      for (Cons* c = as_cons(spliced); c; c = next(c)) {
        in.charge(1, splice_span);
        items.push_back(c->car);
        spans.push_back(span_of_inserted(in, c->car, c->car_span.known() ? c->car_span : splice_span));
      }
    } else {
      fail("E-EVAL-004", splice_span,
           fmt::format("`,@` splices a list or vector, not {} `{}`", type_name(spliced.type()),
                       printed_in_message(spliced)));
    }
  };
  if (is_vector) {
    const auto* vector = tmpl.as<Vector>();
    for (size_t i = 0; i < vector->items.size(); ++i)
      add(vector->items[i], vector->span_of(i).known() ? vector->span_of(i) : span);
    return Value(new Vector(std::move(items), std::move(spans)));
  }
  for (Cons* c = as_cons(tmpl); c; c = next(c)) add(c->car, c->car_span.known() ? c->car_span : span);
  return list_with_spans(std::move(items), spans);
}

}  // namespace sx::lang
