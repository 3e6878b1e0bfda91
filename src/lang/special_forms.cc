// The special forms of the core language. Each checks its own shape and reports
// E-EVAL-011 with the form it expected.
#include <fmt/format.h>

#include "lang/codes.h"
#include "lang/interp.h"
#include "lang/printer.h"
#include "lang/tracer.h"

namespace sx::lang {
namespace {

struct Part {
  Value value;
  Span span;
};

// The elements of a form, each with its span (the form's own span where unknown).
std::vector<Part> parts_of(const Value& form, const Span& span) {
  std::vector<Part> parts;
  for (Cons* c = as_cons(form); c; c = next(c)) parts.push_back({c->car, c->car_span.known() ? c->car_span : span});
  return parts;
}

[[noreturn]] void malformed(const Span& span, std::string_view name, std::string_view expected) {
  fail(kMalformedForm, span, fmt::format("malformed `{}`", name), fmt::format("write it as {}", expected));
}

void expect_count(const std::vector<Part>& p, const Span& span, size_t min, size_t max, std::string_view expected) {
  if (p.size() - 1 < min || p.size() - 1 > max) malformed(span, p[0].value.as<Symbol>()->name, expected);
}

Value eval_body(Interpreter& in, const std::vector<Part>& p, size_t from, Env& env) {
  Value result;
  for (size_t i = from; i < p.size(); ++i) result = in.eval(p[i].value, p[i].span, env);
  return result;
}

// Special-form names cannot be bound: `(defun if ...)` would silently do nothing.
const Symbol* definable_name(Interpreter& in, const Part& part, std::string_view form, std::string_view expected) {
  const Symbol* name = as_symbol(part.value);
  if (!name) malformed(part.span, form, expected);
  if (in.is_special_form(name)) {
    fail("E-EVAL-016", part.span, fmt::format("`{}` is a special form and cannot be defined or bound", name->name),
         "choose another name");
  }
  return name;
}

Value quote(Interpreter&, const Value& form, const Span& span, Env&) {
  auto p = parts_of(form, span);
  expect_count(p, span, 1, 1, "(quote form)");
  return p[1].value;
}

// Whether `v`, the value of a test at `span`, is true. A bool tensor (a comparison) is
// no truth value: its elements are not known while it is traced, and a branch on them
// would be taken once, at tracing (as JAX refuses to branch on a traced value). Any
// other tensor is a value like any other, true (so `(if weight ...)` asks whether an
// optional argument was given).
bool truth(const Value& v, const Span& span) {
  if (const auto* t = as_tensor(v); t && t->info().dtype == graph::DType::boolean) {
    fail("E-EVAL-019", span,
         fmt::format("a bool tensor ({}{}) is not a truth value", graph::dtype_name(t->info().dtype),
                     graph::shape_str(t->info().shape)),
         "choose elementwise with (where condition a b), or read a scalar's value with (item x)");
  }
  return v.truthy();
}

Value if_form(Interpreter& in, const Value& form, const Span& span, Env& env) {
  auto p = parts_of(form, span);
  expect_count(p, span, 2, 3, "(if test then [else])");
  if (truth(in.eval(p[1].value, p[1].span, env), p[1].span)) return in.eval(p[2].value, p[2].span, env);
  return p.size() == 4 ? in.eval(p[3].value, p[3].span, env) : Value();
}

Value when_form(Interpreter& in, const Value& form, const Span& span, Env& env) {
  auto p = parts_of(form, span);
  expect_count(p, span, 1, SIZE_MAX, "(when test body...)");
  return truth(in.eval(p[1].value, p[1].span, env), p[1].span) ? eval_body(in, p, 2, env) : Value();
}

Value unless_form(Interpreter& in, const Value& form, const Span& span, Env& env) {
  auto p = parts_of(form, span);
  expect_count(p, span, 1, SIZE_MAX, "(unless test body...)");
  return truth(in.eval(p[1].value, p[1].span, env), p[1].span) ? Value() : eval_body(in, p, 2, env);
}

Value cond_form(Interpreter& in, const Value& form, const Span& span, Env& env) {
  auto p = parts_of(form, span);
  for (size_t i = 1; i < p.size(); ++i) {
    if (!p[i].value.is(Type::Cons)) malformed(p[i].span, "cond", "(cond (test body...) ...)");
    auto clause = parts_of(p[i].value, p[i].span);
    Value test = in.eval(clause[0].value, clause[0].span, env);
    if (truth(test, clause[0].span)) return clause.size() == 1 ? test : eval_body(in, clause, 1, env);
  }
  return Value();
}

Value and_form(Interpreter& in, const Value& form, const Span& span, Env& env) {
  auto p = parts_of(form, span);
  Value result = Value::boolean(true);
  for (size_t i = 1; i < p.size(); ++i) {
    result = in.eval(p[i].value, p[i].span, env);
    if (i + 1 < p.size() && !truth(result, p[i].span)) return result;
  }
  return result;
}

Value or_form(Interpreter& in, const Value& form, const Span& span, Env& env) {
  auto p = parts_of(form, span);
  Value result;
  for (size_t i = 1; i < p.size(); ++i) {
    result = in.eval(p[i].value, p[i].span, env);
    if (i + 1 < p.size() && truth(result, p[i].span)) return result;
  }
  return result;
}

Value progn(Interpreter& in, const Value& form, const Span& span, Env& env) {
  return eval_body(in, parts_of(form, span), 1, env);
}

// let and let*: parallel and sequential binding.
Value let_form(Interpreter& in, const Value& form, const Span& span, Env& env, bool sequential) {
  auto p = parts_of(form, span);
  std::string_view name = sequential ? "let*" : "let";
  std::string expected = fmt::format("({} ((name value) ...) body...)", name);
  if (p.size() < 2 || !p[1].value.is_list()) malformed(span, name, expected);
  Ref<Env> frame = in.new_frame(Ref<Env>(&env));
  for (const auto& binding : parts_of(p[1].value, p[1].span)) {
    const Symbol* target;
    Value value;
    if (binding.value.is(Type::Symbol)) {
      target = definable_name(in, binding, name, expected);
    } else {
      auto pair = parts_of(binding.value, binding.span);
      if (!binding.value.is(Type::Cons) || pair.size() > 2) {
        fail(kMalformedForm, binding.span,
             fmt::format("malformed `{}`: a binding is `name` or `(name value)`, not `{}`", name,
                         printed_in_message(binding.value)),
             fmt::format("write it as {}", expected));
      }
      target = definable_name(in, pair[0], name, expected);
      if (pair.size() == 2) value = in.eval(pair[1].value, pair[1].span, sequential ? *frame : env);
    }
    if (!sequential && frame->lookup_local(target)) {
      fail(kMalformedForm, binding.span,
           fmt::format("`{}` is bound twice in this `let`", shown_in_message(target->name)),
           "use `let*` to bind a name again from its earlier value");
    }
    if (in.on_let_binding) in.on_let_binding(target, value);
    frame->define(target, std::move(value));
  }
  return eval_body(in, p, 2, *frame);
}

Value make_closure(Interpreter& in, Type type, std::string name, const std::vector<Part>& p, size_t params_at,
                   const Span& span, Env& env) {
  auto params = parse_lambda_list(p[params_at].value, p[params_at].span);
  for (const Part& param : parts_of(p[params_at].value, p[params_at].span)) {
    const Cons* pair = as_cons(param.value);
    const Symbol* param_name = pair ? as_symbol(pair->car) : as_symbol(param.value);
    if (param_name && in.is_special_form(param_name)) definable_name(in, {Value(param_name), param.span}, "lambda", "");
  }
  size_t body_at = params_at + 1;
  // A leading string followed by more body is a documentation string; `(doc NAME)` shows it.
  Value doc;
  if (body_at + 1 < p.size() && p[body_at].value.is(Type::String)) doc = p[body_at++].value;
  std::vector<Value> body;
  std::vector<Span> spans;
  for (size_t i = body_at; i < p.size(); ++i) body.push_back(p[i].value), spans.push_back(p[i].span);
  return Value(new Closure(type, std::move(name), std::move(params), list_with_spans(std::move(body), spans),
                           Ref<Env>(&env), span, std::move(doc)));
}

Value lambda(Interpreter& in, const Value& form, const Span& span, Env& env) {
  auto p = parts_of(form, span);
  if (p.size() < 2) malformed(span, "lambda", "(lambda (params...) body...)");
  return make_closure(in, Type::Function, "lambda", p, 1, span, env);
}

// Whether a binding would stay what it is: the same object, or an equal plain value. A
// module required directly and through another brings the same definition twice.
bool same_definition(const Value& existing, const Value& value) {
  return existing.is_object() ? existing.object() == value.object() : equal(existing, value);
}

}  // namespace

void define_top_level(Interpreter& in, const Symbol* name, Value value, const Span& span, Env& env) {
  Env& module = env.module();
  if (in.options().warn_redefinition) {
    Diagnostic d;
    d.span = span;
    Value* existing = module.lookup_local(name);
    if (existing && !same_definition(*existing, value)) {
      d.code = "W-EVAL-002";
      d.message = fmt::format("`{}` is already defined; this definition replaces it", shown_in_message(name->name));
      in.warn(std::move(d));
    } else if (!existing && in.builtins().lookup_local(name)) {
      d.code = "W-EVAL-001";
      d.message = fmt::format("`{}` shadows the builtin of the same name in this file", shown_in_message(name->name));
      d.helps.push_back("rename it unless replacing the builtin is meant");
      in.warn(std::move(d));
    }
  }
  module.define(name, std::move(value));
  module.set_origin(name, {"", span});
}

namespace {

Value defvar(Interpreter& in, const Value& form, const Span& span, Env& env) {
  auto p = parts_of(form, span);
  expect_count(p, span, 2, 3, "(defvar name value [\"doc\"])");
  const Symbol* name = definable_name(in, p[1], "defvar", "(defvar name value)");
  if (p.size() == 4 && !p[3].value.is(Type::String)) malformed(p[3].span, "defvar", "(defvar name value \"doc\")");
  Value value = in.eval(p[2].value, p[2].span, env);
  define_top_level(in, name, std::move(value), p[1].span, env);
  return Value(name);
}

Value defun_or_macro(Interpreter& in, const Value& form, const Span& span, Env& env, Type type) {
  auto p = parts_of(form, span);
  std::string_view what = type == Type::Macro ? "defmacro" : "defun";
  std::string expected = fmt::format("({} name (params...) body...)", what);
  if (p.size() < 3) malformed(span, what, expected);
  const Symbol* name = definable_name(in, p[1], what, expected);
  Value fn = make_closure(in, type, name->name, p, 2, span, env);
  define_top_level(in, name, std::move(fn), p[1].span, env);
  return Value(name);
}

Value quasiquote(Interpreter& in, const Value& form, const Span& span, Env& env) {
  auto p = parts_of(form, span);
  expect_count(p, span, 1, 1, "`form");
  return eval_quasiquote(in, p[1].value, p[1].span, env, 1);
}

Value unquote_outside(Interpreter&, const Value& form, const Span& span, Env&) {
  fail(kMalformedForm, span,
       fmt::format("`{}` outside a quasiquote", form.as<Cons>()->car.as<Symbol>()->name == "unquote" ? "," : ",@"),
       "`,` and `,@` only mean something inside a backquoted template");
}

// A require imports names and never replaces one: a name the file already has, by an
// earlier require or its own definition, bound to something else, is E-EVAL-018, so one
// name means one thing in a file. Checked before anything is imported.
struct Import {
  const Symbol* name;
  Value value;
  Span span;  // the module's name in the require, or the name in its :only list
};

void check_replaces_nothing(const std::string& module_name, const std::vector<Import>& imports, Env& env) {
  Env& top = env.module();
  std::vector<const Import*> clashes;
  for (const auto& import : imports) {
    Value* existing = top.lookup_local(import.name);
    if (existing && !same_definition(*existing, import.value)) clashes.push_back(&import);
  }
  if (clashes.empty()) return;
  const Import& first = *clashes[0];
  const std::string name = shown_in_message(first.name->name);
  const Env::Origin* origin = top.origin(first.name);
  const bool was_imported = origin && !origin->module.empty();
  Diagnostic d;
  d.code = "E-EVAL-018";
  d.span = first.span;
  if (was_imported) {
    d.message = fmt::format("`{}` from \"{}\" would replace `{}` from \"{}\"", name, shown_in_message(module_name),
                            name, shown_in_message(origin->module));
    if (origin->span.known()) {
      d.notes.push_back(
          fmt::format("\"{}\" was required at {}", shown_in_message(origin->module), origin->span.location()));
    }
  } else {
    d.message = fmt::format("`{}` from \"{}\" would replace the `{}` defined in this file", name,
                            shown_in_message(module_name), name);
    if (origin && origin->span.known()) {
      d.notes.push_back(fmt::format("`{}` is defined at {}", name, origin->span.location()));
    }
  }
  if (clashes.size() > 1) {
    std::string others;
    constexpr size_t kShown = 8;
    for (size_t i = 1; i < clashes.size() && i <= kShown; ++i) {
      others += fmt::format("{}`{}`", i > 1 ? ", " : "", shown_in_message(clashes[i]->name->name));
    }
    if (clashes.size() - 1 > kShown) others += fmt::format(" and {} more", clashes.size() - 1 - kShown);
    d.notes.push_back(fmt::format("\"{}\" would also replace {}", shown_in_message(module_name), others));
  }
  d.helps.push_back(was_imported ? fmt::format("one name means one thing: require one of the two, or take what you "
                                               "use of one with :only, leaving `{}` out",
                                               name)
                                 : fmt::format("rename this file's `{}`, or take what you use of \"{}\" with :only, "
                                               "leaving `{}` out",
                                               name, shown_in_message(module_name), name));
  throw Error(std::move(d));
}

Value require_form(Interpreter& in, const Value& form, const Span& span, Env& env) {
  auto p = parts_of(form, span);
  std::string expected = "(require \"module\" [:only (names...)])";
  if (p.size() != 2 && p.size() != 4) malformed(span, "require", expected);
  Value name = in.eval(p[1].value, p[1].span, env);
  if (!name.is(Type::String)) malformed(p[1].span, "require", expected);
  std::vector<Part> only;
  bool filtered = p.size() == 4;
  if (filtered) {
    if (!p[2].value.is(Type::Keyword) || p[2].value.as<Symbol>()->name != "only" || !p[3].value.is_list()) {
      malformed(p[2].span, "require", expected);
    }
    only = parts_of(p[3].value, p[3].span);
  }
  const std::string& module_name = string_of(name);
  Ref<Env> module = in.require_module(module_name, p[1].span, env);
  std::vector<Import> imports;
  if (!filtered) {
    for (const auto& [symbol, value] : module->bindings()) imports.push_back({symbol, value, p[1].span});
  }
  for (const auto& wanted : only) {
    const Symbol* symbol = as_symbol(wanted.value);
    if (!symbol) malformed(wanted.span, "require", expected);
    Value* value = module->lookup_local(symbol);
    if (!value) {
      fail("E-EVAL-012", wanted.span,
           fmt::format("module \"{}\" does not define `{}`", shown_in_message(module_name),
                       shown_in_message(symbol->name)));
    }
    imports.push_back({symbol, *value, wanted.span});
  }
  check_replaces_nothing(module_name, imports, env);
  for (const auto& import : imports) {
    define_top_level(in, import.name, import.value, import.span, env);
    env.module().set_origin(import.name, {module_name, p[1].span});
  }
  return Value();
}

// The forms later parts of SexpGPU define; reserved here so no program can take the names.
constexpr std::string_view kReserved[] = {"defmodel", "defparam", "defknob",    "defvariant",
                                          "defrun",   "named",    "with-loaded"};

}  // namespace

void install_special_forms(Interpreter& in) {
  // Each with what `(doc NAME)` shows: the form, one line, an example.
  auto doc = [](std::string_view form, std::string_view summary, std::string_view example = {}) {
    return BuiltinDoc{std::string(form), std::string(summary), std::string(example), "Special forms"};
  };
  in.define_special_form(
      "quote", quote,
      doc("(quote form)", "The form itself, unevaluated; 'x is (quote x).", "'(a (b c) [d])\n;; => (a (b c) [d])"));
  in.define_special_form("if", if_form,
                         doc("(if test then [else])", "then when test is true, else else (nil without one).",
                             "(if (> 2 1) :yes :no)\n;; => :yes"));
  in.define_special_form(
      "when", when_form,
      doc("(when test body...)", "The body's last value when test is true, else nil.", "(when true 1 2)\n;; => 2"));
  in.define_special_form("unless", unless_form,
                         doc("(unless test body...)", "The body's last value when test is false, else nil.",
                             "(unless false :done)\n;; => :done"));
  in.define_special_form("cond", cond_form,
                         doc("(cond (test body...) ...)", "The body of the first clause whose test is true.",
                             "(cond ((< 5 0) :negative) (true :positive))\n;; => :positive"));
  in.define_special_form(
      "and", and_form,
      doc("(and form...)", "The first false value, else the last value; (and) is true.", "(and 1 2 3)\n;; => 3"));
  in.define_special_form(
      "or", or_form,
      doc("(or form...)", "The first true value, else the last; (or) is nil.", "(or nil 0.02)\n;; => 0.02"));
  in.define_special_form(
      "progn", progn,
      doc("(progn body...)", "Evaluates each form in turn and gives the last value.", "(progn 1 2)\n;; => 2"));
  in.define_special_form(
      "let", [](Interpreter& i, const Value& f, const Span& s, Env& e) { return let_form(i, f, s, e, false); },
      doc("(let ((name value) ...) body...)", "The body with the names bound, all at once.",
          "(let ((x 1) (y 2)) (+ x y))\n;; => 3"));
  in.define_special_form(
      "let*", [](Interpreter& i, const Value& f, const Span& s, Env& e) { return let_form(i, f, s, e, true); },
      doc("(let* ((name value) ...) body...)", "As `let`, but each value sees the names bound before it.",
          "(let* ((x 1) (y (+ x 1))) y)\n;; => 2"));
  in.define_special_form(
      "lambda", lambda,
      doc("(lambda (params...) body...)", "A function of the parameters (a lambda list), closing over its scope.",
          "((lambda (x &key (by 2)) (* x by)) 5)\n;; => 10"));
  in.define_special_form("defvar", defvar,
                         doc("(defvar name value [\"doc\"])", "Defines name at the top level; gives the name.",
                             "(defvar hidden 128 \"width of the hidden layer\")\n;; => hidden"));
  in.define_special_form(
      "defun",
      [](Interpreter& i, const Value& f, const Span& s, Env& e) { return defun_or_macro(i, f, s, e, Type::Function); },
      doc("(defun name (params...) [\"doc\"] body...)",
          "Defines a function at the top level; a string first in a longer body documents it.",
          "(defun double (x) \"Twice x.\" (* 2 x))\n(double 4)\n;; => 8"));
  in.define_special_form(
      "defmacro",
      [](Interpreter& i, const Value& f, const Span& s, Env& e) { return defun_or_macro(i, f, s, e, Type::Macro); },
      doc("(defmacro name (params...) [\"doc\"] body...)",
          "Defines a macro: a function from the unevaluated argument forms to the form evaluated "
          "instead.",
          "(defmacro twice (form) `(list ,form ,form))\n(twice (+ 1 1))\n;; => (2 2)"));
  in.define_special_form("quasiquote", quasiquote,
                         doc("`form", "A template: form quoted, except what ,x and ,@xs insert.",
                             "(let ((n 3)) `(a ,n ,@(list 4 5)))\n;; => (a 3 4 5)"));
  in.define_special_form("unquote", unquote_outside, doc(",form", "Inside a quasiquote, the value of form."));
  in.define_special_form("unquote-splicing", unquote_outside,
                         doc(",@form", "Inside a quasiquote, the items of form's value, spliced in."));
  in.define_special_form("require", require_form,
                         doc("(require \"module\" [:only (names...)])",
                             "Loads a module (\"sexpgpu/nn\", or a path relative to this file) and imports its names.",
                             "(require \"sexpgpu/ops\" :only (relu))\n(relu -1)\n;; => 0"));
  for (auto name : kReserved) {
    in.define_special_form(name, [name](Interpreter&, const Value&, const Span& span, Env&) -> Value {
      fail("E-EVAL-016", span, fmt::format("`{}` is reserved and not available in this version of SexpGPU", name),
           "models, parameters and runs come with their own parts of SexpGPU");
    });
  }
  install_doc_forms(in);
}

}  // namespace sx::lang
