// The families of builtin functions. A builtin is one row: name, function, and its
// documentation: the lambda list, one line saying what it does, and an example with the
// value it gives. The lambda list is also its signature: every call's arity and keywords
// are checked against it before the function runs (match_arguments), and the function
// reads its keywords with Args::keywords. `(doc NAME)` shows the row and docs/builtins.md
// is generated from the rows (`sexpgpu doc --markdown`); the lang tests check that every
// row is documented.
#pragma once

#include "lang/interp.h"

namespace sx::lang {

struct BuiltinRow {
  std::string_view name;
  BuiltinFn fn;
  std::string_view params;   // the lambda list, "(x &key axis keepdims)": its arity and keywords
  std::string_view summary;  // one line
  std::string_view example;  // "(+ 1 2)\n;; => 3": an expression, then the value it prints
};

// Defines each row's builtin, listed in docs/builtins.md under `family`.
inline void install_rows(Interpreter& interp, std::string_view family, std::initializer_list<BuiltinRow> rows) {
  for (const auto& row : rows) {
    interp.define_builtin(
        row.name, row.fn,
        BuiltinDoc{std::string(row.params), std::string(row.summary), std::string(row.example), std::string(family)});
  }
}

// "a tensor", "an integer": what a value is, for messages.
inline std::string type_label(const Value& v) {
  return v.is(Type::Opaque) ? v.as<Opaque>()->type_label() : std::string(type_name(v.type()));
}

// Refuses (E-MEM-001) a list or vector of n items that `a`'s function would build past
// the memory limit; called before they are built (lists.cc).
void check_items_memory(const Args& a, size_t n);

// The arguments from `first` on, each with its traced tensors run where the command has
// a device (Interpreter::materialize), so that showing them shows their elements.
inline std::vector<Value> materialized_args(Args& a, size_t first) {
  std::vector<Value> values(a.values.begin() + static_cast<std::ptrdiff_t>(first), a.values.end());
  Value shown = a.interp.materialized(list(values));
  return list_items(shown);
}

// E-EVAL-009: an integer operation `op` whose exact result leaves 64 bits (numbers.cc).
[[noreturn]] void integer_overflow(const Args& a, std::string_view op);

void install_number_builtins(Interpreter& interp);     // numbers.cc: arithmetic, comparison, rounding
void install_math_builtins(Interpreter& interp);       // math.cc: elementwise math, numbers and tensors alike
void install_list_builtins(Interpreter& interp);       // lists.cc: lists, vectors, plists, higher-order
void install_string_builtins(Interpreter& interp);     // strings.cc: str, format, symbols, keywords
void install_misc_builtins(Interpreter& interp);       // misc.cc: equal, type predicates, print, error
void install_tensor_builtins(Interpreter& interp);     // tensors.cc: tensor constructors and operations
void install_composite_builtins(Interpreter& interp);  // composites.cc: %softmax ... %attention
void install_grad_builtins(Interpreter& interp);       // grad.cc: grad, value-and-grad

}  // namespace sx::lang
