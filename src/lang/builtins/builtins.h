// The families of builtin functions. A builtin is one row: name, arity, function.
#pragma once

#include "lang/interp.h"

namespace sx::lang {

struct BuiltinRow {
  std::string_view name;
  int min_args;
  int max_args;  // Builtin::kVariadic for any number
  BuiltinFn fn;
};

inline void install_rows(Interpreter& interp, std::initializer_list<BuiltinRow> rows) {
  for (const auto& row : rows) interp.define_builtin(row.name, row.min_args, row.max_args, row.fn);
}

void install_number_builtins(Interpreter& interp);  // numbers.cc: arithmetic, comparison, math
void install_list_builtins(Interpreter& interp);    // lists.cc: lists, vectors, plists, higher-order
void install_string_builtins(Interpreter& interp);  // strings.cc: str, format, symbols, keywords
void install_misc_builtins(Interpreter& interp);    // misc.cc: equal, type predicates, print, error
void install_tensor_builtins(Interpreter& interp);  // tensors.cc: tensor constructors and operations
void install_grad_builtins(Interpreter& interp);    // grad.cc: grad, value-and-grad

}  // namespace sx::lang
