// Builtins that belong to no family: equality, errors, printing.
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

Value print_values(Args& a) {
  std::string line;
  for (size_t i = 0; i < a.size(); ++i) line += (i ? " " : "") + display(a[i]);
  std::fputs((line + "\n").c_str(), stdout);
  return a.size() ? a[a.size() - 1] : Value();
}

}  // namespace

void install_misc_builtins(Interpreter& in) {
  install_rows(in, {
      {"equal", 2, 2, [](Args& a) { return Value::boolean(equal(a[0], a[1])); }},
      {"error", 1, Builtin::kVariadic, raise_error},
      {"print", 0, Builtin::kVariadic, print_values},
  });
}

}  // namespace sx::lang
