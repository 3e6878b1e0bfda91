// `save-tensors`: tensors written to a safetensors file, which `:load` and `with-loaded`
// read back. The tensors are run first where they are traced (in eval and the REPL).
#include <fmt/format.h>

#include <stdexcept>

#include "io/safetensors.h"
#include "lang/builtins/builtins.h"
#include "lang/printer.h"
#include "lang/tracer.h"
#include "model/model.h"

namespace sx::model {
namespace {

using lang::Args;
using lang::Type;
using lang::Value;

// (save-tensors "out.safetensors" (list :name tensor ...)): the path written.
Value save_tensors(Args& a) {
  const std::string& written = a.string(0);
  std::vector<Value> items = lang::list_items(a.list(1));
  if (items.size() % 2 != 0) {
    lang::fail(
        "E-EVAL-004", a.span(1),
        fmt::format("`save-tensors` takes a plist of names and tensors, but this one has {} items", items.size()),
        "write (list :name tensor :other tensor ...)");
  }
  std::vector<Value> values;
  for (size_t i = 1; i < items.size(); i += 2) values.push_back(items[i]);
  values = lang::list_items(a.interp.materialized(lang::list(values)));
  std::vector<std::pair<std::string, graph::Tensor>> tensors;
  for (size_t i = 0; i < values.size(); ++i) {
    const Value& key = items[2 * i];
    std::string name;
    if (key.is(Type::Keyword) || key.is(Type::Symbol)) name = key.as<lang::Symbol>()->name;
    else if (key.is(Type::String)) name = lang::string_of(key);
    else {
      lang::fail("E-EVAL-004", a.span(1),
                 fmt::format("`save-tensors`: a tensor's name is a keyword or a string, not `{}`",
                             lang::printed_in_message(key)));
    }
    const lang::TensorValue* t = lang::as_tensor(values[i]);
    if (!t) {
      lang::fail("E-EVAL-004", a.span(1),
                 fmt::format("`save-tensors`: `{}` is {} `{}`, not a tensor", lang::shown_in_message(name),
                             lang::type_label(values[i]), lang::printed_in_message(values[i])));
    }
    if (!t->info().value) {
      lang::fail("E-EVAL-004", a.span(1),
                 fmt::format("`save-tensors`: the tensor `{}` is computed, but nothing runs here",
                             lang::shown_in_message(name)),
                 "save-tensors runs tensors in `sexpgpu eval` and the REPL; `check` runs nothing");
    }
    tensors.emplace_back(name, *t->info().value);
  }
  std::string path = resolve_data_path(written, a.span(0));
  try {
    io::write_safetensors(path, tensors);
  } catch (const io::LoadError& e) {
    lang::fail(e.code(), a.span(0), e.what());
  } catch (const std::invalid_argument& e) {
    lang::fail("E-EVAL-004", a.span(1), fmt::format("`save-tensors`: {}", e.what()));
  }
  return lang::make_string(path);
}

}  // namespace

void install_tensor_files(lang::Interpreter& interp) {
  lang::install_rows(
      interp, "Files",
      {
          {"save-tensors", save_tensors, "(path tensors)",
           "Writes a plist of names and tensors as a safetensors file (atomically); :load reads it back.",
           "(save-tensors \"weights.safetensors\" (list :w (ones [2 3]) :b (zeros [3])))\n"
           ";; => \"weights.safetensors\""},
      });
}

}  // namespace sx::model
