// Helpers for language tests: evaluate text, expect a printed value or an error code.
#pragma once

#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "lang/interp.h"
#include "lang/printer.h"

namespace sx::lang::testing {

inline InterpreterOptions test_options() {
  InterpreterOptions options;
  options.library_dirs = {SEXPGPU_LIB_DIR};
  return options;
}

// Evaluates `text` in a fresh top level and returns the last value printed readably.
inline std::string eval_print(const std::string& text) {
  Interpreter interp(test_options());
  Ref<Env> env = interp.new_top_level();
  return print(interp.eval_text(text, "<test>", *env));
}

// The diagnostic evaluating `text` in a fresh top level raises, if any.
inline std::optional<Diagnostic> eval_error(const std::string& text, InterpreterOptions options = test_options()) {
  Interpreter interp(options);
  Ref<Env> env = interp.new_top_level();
  try {
    interp.eval_text(text, "<test>", *env);
  } catch (const Error& e) {
    return e.diagnostic();
  }
  return std::nullopt;
}

// The code of the error evaluating `text` raises, or "" when it raises none.
inline std::string error_code(const std::string& text) {
  auto d = eval_error(text);
  return d ? d->code : "";
}

}  // namespace sx::lang::testing
