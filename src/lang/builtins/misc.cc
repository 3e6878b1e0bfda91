// Builtins that belong to no family: equality, type predicates, errors, printing.
#include <fmt/format.h>

#include <cstdio>
#include <regex>

#include "lang/builtins/builtins.h"
#include "lang/printer.h"

namespace sx::lang {
namespace {

// The message argument `at`, then each value after it as `print` shows it, each
// shortened as a diagnostic shows the user's text.
std::string error_message(Args& a, size_t at) {
  std::string message = shown_in_message(a.string(at));
  for (size_t i = at + 1; i < a.size(); ++i) message += " " + printed_in_message(a[i]);
  return message;
}

// (error "message" values...)
Value raise_error(Args& a) { fail("E-EVAL-010", a.call, error_message(a, 0)); }

// (coded-error code message &rest values): as `error`, with a code of the caller's, for
// library code (sexpgpu/hf) whose errors have codes and explain rows of their own.
Value raise_coded_error(Args& a) {
  static const std::regex kCode("[EW]-[A-Z]+-[0-9]{3}");
  const std::string& code = a.string(0);
  if (!std::regex_match(code, kCode)) {
    fail("E-EVAL-004", a.span(0),
         "`coded-error` takes a code such as \"E-HF-001\", not `" + shown_in_message(code) + "`");
  }
  fail(code, a.call, error_message(a, 1));
}

// (print x...): the values' `display` forms on one line; tensors show their elements.
Value print_values(Args& a) {
  std::string line;
  std::vector<Value> shown = materialized_args(a, 0);
  for (size_t i = 0; i < shown.size(); ++i) line += (i ? " " : "") + display(shown[i]);
  line += '\n';
  std::fwrite(line.data(), 1, line.size(), stdout);
  return a.size() ? a[a.size() - 1] : Value();
}

// (type-of x): a keyword naming the type. Opaque values name themselves: "a tensor" is :tensor.
Value type_of(Args& a) {
  switch (a[0].type()) {
    case Type::Nil: return make_keyword("nil");
    case Type::Bool: return make_keyword("bool");
    case Type::Int: return make_keyword("int");
    case Type::Float: return make_keyword("float");
    case Type::String: return make_keyword("string");
    case Type::Symbol: return make_keyword("symbol");
    case Type::Keyword: return make_keyword("keyword");
    case Type::Cons: return make_keyword("list");
    case Type::Vector: return make_keyword("vector");
    case Type::Function: return make_keyword("function");
    case Type::Macro: return make_keyword("macro");
    case Type::Opaque: {
      std::string label = a[0].as<Opaque>()->type_label();
      for (std::string_view article : {"a ", "an "}) {
        if (label.starts_with(article)) label.erase(0, article.size());
      }
      for (char& c : label) c = c == ' ' ? '-' : c;
      return make_keyword(label.empty() ? "opaque" : label);
    }
    case Type::Env: break;
  }
  return make_keyword("environment");
}

}  // namespace

void install_misc_builtins(Interpreter& in) {
  install_rows(
      in, "Values: equality, types, printing, errors",
      {
          {"equal", [](Args& a) { return Value::boolean(equal(a[0], a[1])); }, "(a b)",
           "Whether a and b have the same type and contents; (equal 1 1.0) is false.",
           "(equal (list 1 [2 \"x\"]) (list 1 [2 \"x\"]))\n;; => true"},
          {"not", [](Args& a) { return Value::boolean(!a[0].truthy()); }, "(x)",
           "true when x is false or nil, else false.", "(list (not nil) (not 0))\n;; => (true false)"},
          {"identity", [](Args& a) { return a[0]; }, "(x)", "x itself.", "(identity 5)\n;; => 5"},
          {"type-of", type_of, "(x)", "A keyword naming x's type: :int, :float, :list, :tensor, :model, ...",
           "(list (type-of 1) (type-of 2.0) (type-of \"s\") (type-of [1]))\n;; => (:int :float :string :vector)"},
          {"nil?", [](Args& a) { return Value::boolean(a[0].is_nil()); }, "(x)", "Whether x is nil (the empty list).",
           "(nil? (list))\n;; => true"},
          {"bool?", [](Args& a) { return Value::boolean(a[0].is(Type::Bool)); }, "(x)", "Whether x is true or false.",
           "(bool? false)\n;; => true"},
          {"int?", [](Args& a) { return Value::boolean(a[0].is(Type::Int)); }, "(x)", "Whether x is an integer.",
           "(list (int? 1) (int? 1.0))\n;; => (true false)"},
          {"float?", [](Args& a) { return Value::boolean(a[0].is(Type::Float)); }, "(x)", "Whether x is a float.",
           "(float? 1.0)\n;; => true"},
          {"number?", [](Args& a) { return Value::boolean(a[0].is_number()); }, "(x)",
           "Whether x is an integer or a float (not a tensor).", "(number? 3)\n;; => true"},
          {"string?", [](Args& a) { return Value::boolean(a[0].is(Type::String)); }, "(x)", "Whether x is a string.",
           "(string? \"s\")\n;; => true"},
          {"symbol?", [](Args& a) { return Value::boolean(a[0].is(Type::Symbol)); }, "(x)", "Whether x is a symbol.",
           "(symbol? 'x)\n;; => true"},
          {"keyword?", [](Args& a) { return Value::boolean(a[0].is(Type::Keyword)); }, "(x)", "Whether x is a keyword.",
           "(keyword? :k)\n;; => true"},
          {"list?", [](Args& a) { return Value::boolean(a[0].is_list()); }, "(x)", "Whether x is a list (nil is one).",
           "(list (list? nil) (list? [1]))\n;; => (true false)"},
          {"vector?", [](Args& a) { return Value::boolean(a[0].is(Type::Vector)); }, "(x)", "Whether x is a vector.",
           "(vector? [1])\n;; => true"},
          {"function?", [](Args& a) { return Value::boolean(a[0].is(Type::Function)); }, "(x)",
           "Whether x is a function (a builtin, a lambda or a defun).", "(function? map)\n;; => true"},
          {"error", raise_error, "(message &rest values)",
           "Stops with error E-EVAL-010: the message, then the values as `print` shows them.",
           "(error \"the learning rate must be positive, got\" -0.1)\n;; error[E-EVAL-010]"},
          {"coded-error", raise_coded_error, "(code message &rest values)",
           "Stops with the diagnostic `code` (E-AREA-NNN): the message, then the values as `print` shows them; for "
           "library code whose errors have their own codes.",
           "(coded-error \"E-HF-001\" \"no builder for model_type\" \"t5\")\n;; error[E-HF-001]"},
          {"print", print_values, "(&rest values)",
           "Prints the values on one line, strings without quotes and tensors with their elements; returns the last.",
           "(print \"loss\" 0.25)\n;; => 0.25"},
      });
}

}  // namespace sx::lang
