// Documentation of what a program can call: `(doc NAME)` and `(help)` (special forms
// installed by install_doc_forms), and docs/builtins.md, generated from the builtins' own
// rows (builtins/builtins.h) by `sexpgpu doc --markdown`.
#pragma once

#include <string>
#include <vector>

#include "lang/interp.h"

namespace sx::lang {

// What `(help)` shows: how to get help, and every builtin's name by family.
std::string general_help(Interpreter& interp);
// What `(doc NAME)` shows of `name` as `env` sees it; throws E-EVAL-001 when it is unbound
// there and in the standard library.
std::string documentation_of(Interpreter& interp, const std::string& name, Env& env);
// docs/builtins.md: every builtin by family, its lambda list, summary and example, then
// the constants and the special forms.
std::string builtins_markdown(Interpreter& interp);
// The builtins whose row lacks a lambda list, a summary, an example or a family.
std::vector<std::string> undocumented_builtins(Interpreter& interp);

}  // namespace sx::lang
