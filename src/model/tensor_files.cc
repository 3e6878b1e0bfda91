// `save-tensors`: tensors written to a safetensors file, which `:load` and `with-loaded`
// read back. The tensors are run first where they are traced (in eval and the REPL).
// And the files a model builder reads besides weights: `read-json` (a config.json, an
// index), `tensor-names` (what a safetensors file or index holds) and `data-path` (a path
// as the file it is written in reads it), so that a builder written in Lisp, such as
// sexpgpu/hf, reads any location `:load` reads.
#include <fmt/format.h>

#include <filesystem>
#include <stdexcept>

#include "io/json_checked.h"
#include "io/location.h"
#include "io/safetensors.h"
#include "io/tensor_source.h"
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

constexpr const char* kBadJson = "E-JSON-001";
constexpr const char* kJsonTooLarge = "E-JSON-002";
constexpr size_t kMaxJsonBytes = 64ull << 20;
constexpr size_t kMaxJsonDepth = 64;

// JSON as Lisp: an object a plist keyed by keywords, an array a vector, null nil.
Value lisp_of(const nlohmann::json& json) {
  switch (json.type()) {
    case nlohmann::json::value_t::object: {
      std::vector<Value> items;
      for (const auto& [key, value] : json.items()) {
        items.push_back(lang::make_keyword(key));
        items.push_back(lisp_of(value));
      }
      return lang::list(std::move(items));
    }
    case nlohmann::json::value_t::array: {
      std::vector<Value> items;
      for (const auto& value : json) items.push_back(lisp_of(value));
      return lang::make_vector(std::move(items));
    }
    case nlohmann::json::value_t::string: return lang::make_string(json.get<std::string>());
    case nlohmann::json::value_t::boolean: return Value::boolean(json.get<bool>());
    case nlohmann::json::value_t::number_integer: return Value::integer(json.get<int64_t>());
    case nlohmann::json::value_t::number_unsigned: {
      uint64_t n = json.get<uint64_t>();
      return n > static_cast<uint64_t>(INT64_MAX) ? Value::number(static_cast<double>(n))
                                                  : Value::integer(static_cast<int64_t>(n));
    }
    case nlohmann::json::value_t::number_float: return Value::number(json.get<double>());
    default: return Value();
  }
}

// (read-json path &key missing)
Value read_json(Args& a) {
  const std::string location = resolve_data_path(a.string(0), a.span(0));
  std::string text;
  try {
    if (auto missing = a.keywords().find("missing");
        missing != a.keywords().end() && !io::location_exists(io::resolve_location(location)))
      return a[missing->second];
    text = io::read_small_location(io::resolve_location(location), kMaxJsonBytes, kJsonTooLarge);
  } catch (const io::LoadError& e) {
    lang::fail(e.code(), a.span(0), e.what(),
               a.string(0).starts_with("/") ? "" : "a relative path is relative to the file that calls read-json");
  }
  try {
    return lisp_of(io::parse_json_checked(text, location, kBadJson, kMaxJsonDepth).value);
  } catch (const io::LoadError& e) {
    lang::fail(e.code(), a.span(0), e.what());
  }
}

// (tensor-names file): the names a safetensors file or an .index.json holds, sorted.
Value tensor_names(Args& a) {
  const std::string location = resolve_data_path(a.string(0), a.span(0));
  std::vector<Value> names;
  try {
    for (const std::string& name : io::TensorSource::open(location)->tensor_names())
      names.push_back(lang::make_string(name));
  } catch (const io::LoadError& e) {
    lang::fail(e.code(), a.span(0), e.what());
  }
  return lang::make_vector(std::move(names));
}

// (data-path path): the path resolved against the folder of the file it is written in, and
// absolute, so that a file elsewhere that is handed it reads the same file.
Value data_path(Args& a) {
  std::string path = resolve_data_path(a.string(0), a.span(0));
  if (io::scheme_of(path).empty() && !path.starts_with("/"))
    path = std::filesystem::absolute(path).lexically_normal().string();
  if (path.size() > 1 && path.ends_with("/")) path.pop_back();
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
          {"read-json", read_json, "(path &key missing)",
           "A JSON file at any location :load reads, as Lisp: objects as plists keyed by keywords, arrays as vectors, "
           "null as nil; `missing` instead of E-LOAD-002 when given and the file does not exist.",
           "(getf (read-json \"model/config.json\" :missing (list :hidden_size 384)) :hidden_size)\n;; => 384"},
          {"tensor-names", tensor_names, "(file)",
           "The tensor names a safetensors file or a sharded checkpoint's .index.json holds, sorted, as a vector.",
           "(save-tensors \"w.safetensors\" (list :w (ones [2]) :b (zeros [3])))\n(tensor-names \"w.safetensors\")\n"
           ";; => [\"b\" \"w\"]"},
          {"data-path", data_path, "(path)",
           "The path as a :load written here reads it, made absolute: a relative one is resolved against this file's "
           "folder.",
           "(data-path \"/w/model.safetensors\")\n;; => \"/w/model.safetensors\""},
      });
}

}  // namespace sx::model
