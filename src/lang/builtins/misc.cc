// Builtins that belong to no family: equality, type predicates, errors, printing.
#include <fmt/format.h>

#include <cstdio>

#include "lang/builtins/builtins.h"
#include "lang/printer.h"

namespace sx::lang {
namespace {

// (error "message" values...): the message, then each value as `print` shows it.
Value raise_error(Args& a) {
  std::string message = a.string(0);
  for (size_t i = 1; i < a.size(); ++i) message += " " + print(a[i]);
  fail("E-EVAL-010", a.call, message);
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
  install_rows(in, {
                       {"equal", 2, 2, [](Args& a) { return Value::boolean(equal(a[0], a[1])); }},
                       {"not", 1, 1, [](Args& a) { return Value::boolean(!a[0].truthy()); }},
                       {"identity", 1, 1, [](Args& a) { return a[0]; }},
                       {"type-of", 1, 1, type_of},
                       {"nil?", 1, 1, [](Args& a) { return Value::boolean(a[0].is_nil()); }},
                       {"bool?", 1, 1, [](Args& a) { return Value::boolean(a[0].is(Type::Bool)); }},
                       {"int?", 1, 1, [](Args& a) { return Value::boolean(a[0].is(Type::Int)); }},
                       {"float?", 1, 1, [](Args& a) { return Value::boolean(a[0].is(Type::Float)); }},
                       {"number?", 1, 1, [](Args& a) { return Value::boolean(a[0].is_number()); }},
                       {"string?", 1, 1, [](Args& a) { return Value::boolean(a[0].is(Type::String)); }},
                       {"symbol?", 1, 1, [](Args& a) { return Value::boolean(a[0].is(Type::Symbol)); }},
                       {"keyword?", 1, 1, [](Args& a) { return Value::boolean(a[0].is(Type::Keyword)); }},
                       {"list?", 1, 1, [](Args& a) { return Value::boolean(a[0].is_list()); }},
                       {"vector?", 1, 1, [](Args& a) { return Value::boolean(a[0].is(Type::Vector)); }},
                       {"function?", 1, 1, [](Args& a) { return Value::boolean(a[0].is(Type::Function)); }},
                       {"error", 1, Builtin::kVariadic, raise_error},
                       {"print", 0, Builtin::kVariadic, print_values},
                   });
}

}  // namespace sx::lang
