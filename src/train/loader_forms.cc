// The loaders' constructors in the language: (text-windows PATH :window N),
// (token-windows PATH :window N :dtype :u16), (records PATH), (jsonl PATH :fields [:x :y]
// :tokenize (:field :text :with TK :length N)).
// Each checks its arguments and that its file exists, and returns a LoaderSpec value;
// the run opens it (open_loader) when it starts.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>

#include "io/location.h"
#include "io/safetensors.h"
#include "lang/builtins/builtins.h"
#include "lang/printer.h"
#include "lang/tracer.h"
#include "model/tokenizer_value.h"
#include "train/loaders.h"

namespace sx::train {
namespace {

using lang::Args;
using lang::Type;
using lang::Value;

// The largest :window: a record of window+1 tokens stays far from any overflow.
constexpr int64_t kMaxWindow = int64_t{1} << 30;

// Where a loader's file is: a relative path is relative to the folder of the file that
// names it (as :load's is), file:// locations are local paths, s3:// and o41:// ones are
// resolved (an o41:// location under a local root is a local path, under an s3:// root an
// s3:// URL, which the loader downloads when the run opens it), other schemes are refused.
std::string resolve_path(const std::string& written, lang::Span span) {
  std::string scheme = io::scheme_of(written);
  if (scheme == "file") {
    try {
      return io::local_path(written);
    } catch (const io::LoadError& e) {
      lang::fail(kLoaderFile, span, e.what(), "write file:///absolute/path, or the path itself");
    }
  }
  if (io::is_storage_scheme(scheme)) {
    try {
      return io::resolve_location(written).url();
    } catch (const io::LoadError& e) {
      lang::fail(e.code(), span, e.what());
    }
  }
  if (!scheme.empty()) {
    lang::fail(kLoaderFile, span,
               fmt::format("{}: {}:// is not read; loaders read paths and file://, s3:// and o41:// locations",
                           lang::shown_in_message(written), lang::shown_in_message(scheme)),
               "copy the data next to the run file and name it by its path");
  }
  if (written.starts_with("/") || !span.known()) return written;
  std::filesystem::path dir = std::filesystem::path(span.file->path()).parent_path();
  return (dir / written).lexically_normal().string();
}

// A spec of `kind` for the path argument, resolved.
LoaderSpec spec_for(Args& a, LoaderKind kind) {
  LoaderSpec spec;
  spec.kind = kind;
  spec.written = a.string(0);
  spec.path = resolve_path(spec.written, a.span(0));
  spec.span = a.call;
  return spec;
}

// The loader's value, once its file is checked (after its other arguments): an error
// points at the path.
Value loader_value(Args& a, LoaderSpec spec) {
  spec.span = a.span(0);
  check_loader_file(spec);
  spec.span = a.call;
  return Value(new LoaderValue(std::move(spec)));
}

int64_t window_of(Args& a, const std::map<std::string, size_t>& keys) {
  auto it = keys.find("window");
  if (it == keys.end()) {
    lang::fail(kLoaderArguments, a.call, fmt::format("`{}` needs `:window N`, the tokens a record reads", a.function),
               "a record is N+1 tokens: N inputs, and the targets one token later");
  }
  int64_t window = a.integer(it->second);
  if (window < 1 || window > kMaxWindow) {
    lang::fail(kLoaderArguments, a.span(it->second),
               fmt::format("`:window` is a whole number from 1 to {}, not {}", kMaxWindow, window));
  }
  return window;
}

Value text_windows(Args& a) {
  auto keys = a.keywords();
  LoaderSpec spec = spec_for(a, LoaderKind::TextWindows);
  spec.window = window_of(a, keys);
  return loader_value(a, std::move(spec));
}

Value token_windows(Args& a) {
  auto keys = a.keywords();
  LoaderSpec spec = spec_for(a, LoaderKind::TokenWindows);
  spec.window = window_of(a, keys);
  if (auto it = keys.find("dtype"); it != keys.end()) {
    const Value& given = a[it->second];
    std::string name = given.is(Type::Keyword) ? given.as<lang::Symbol>()->name : "";
    if (name == "u16") spec.format = TokenFormat::u16;
    else if (name == "u32") spec.format = TokenFormat::u32;
    else if (name == "i32") spec.format = TokenFormat::i32;
    else {
      lang::fail(
          kLoaderArguments, a.span(it->second),
          fmt::format("`:dtype` of token-windows is :u16, :u32 or :i32, not `{}`", lang::printed_in_message(given)),
          "the tokens' type as the file stores them, little-endian");
    }
  }
  return loader_value(a, std::move(spec));
}

Value records(Args& a) { return loader_value(a, spec_for(a, LoaderKind::Records)); }

// A field's name: a keyword or a string.
std::string field_name(Args& a, size_t at, const Value& item, std::string_view option) {
  if (item.is(Type::Keyword)) return item.as<lang::Symbol>()->name;
  if (item.is(Type::String)) return lang::string_of(item);
  lang::fail(kLoaderArguments, a.span(at),
             fmt::format("`{}` holds keywords (or strings), not {} `{}`", option, lang::type_label(item),
                         lang::printed_in_message(item)));
}

// One `:tokenize` plist: [:field :text :with TK :length N :special true].
TokenizedField tokenized_field(Args& a, size_t at, const std::vector<Value>& items) {
  const char* form = "write :tokenize [:field :text :with tk :length 128], tk a (tokenizer \"tokenizer.json\")";
  if (items.empty() || items.size() % 2 != 0) {
    lang::fail(
        kLoaderArguments, a.span(at),
        fmt::format("`:tokenize` is a plist of :field, :with and :length, not `{}`", lang::printed_in_message(a[at])),
        form);
  }
  TokenizedField field;
  bool has_with = false;
  for (size_t i = 0; i < items.size(); i += 2) {
    std::string key = items[i].is(Type::Keyword) ? items[i].as<lang::Symbol>()->name : "";
    const Value& value = items[i + 1];
    if (key == "field") {
      field.field = field_name(a, at, value, ":tokenize :field");
    } else if (key == "with") {
      const model::TokenizerValue* tk = model::as_tokenizer(value);
      if (!tk) {
        lang::fail(kLoaderArguments, a.span(at),
                   fmt::format("`:tokenize :with` is a tokenizer, not {} `{}`", lang::type_label(value),
                               lang::printed_in_message(value)),
                   form);
      }
      field.tokenizer = tk->tokenizer;
      field.tokenizer_written = tk->written;
      field.tokenizer_location = tk->location;
      has_with = true;
    } else if (key == "length") {
      field.length = value.is(Type::Int) ? value.as_int() : 0;
      if (field.length < 1 || field.length > kMaxWindow) {
        lang::fail(kLoaderArguments, a.span(at),
                   fmt::format("`:tokenize :length` is a whole number from 1 to {}, not `{}`", kMaxWindow,
                               lang::printed_in_message(value)));
      }
    } else if (key == "special") {
      field.special = !(value.is(Type::Nil) || (value.is(Type::Bool) && !value.as_bool()));
    } else {
      lang::fail(kLoaderArguments, a.span(at),
                 fmt::format("`:tokenize` takes :field, :with, :length and :special, not `{}`",
                             lang::printed_in_message(items[i])),
                 form);
    }
  }
  if (field.field.empty() || !has_with || field.length == 0) {
    lang::fail(kLoaderArguments, a.span(at), "`:tokenize` needs :field, :with and :length", form);
  }
  return field;
}

Value jsonl(Args& a) {
  auto keys = a.keywords();
  LoaderSpec spec = spec_for(a, LoaderKind::Jsonl);
  if (auto it = keys.find("tokenize"); it != keys.end()) {
    // One plist (a vector or a list whose first item is a keyword), or a vector or list of them.
    auto items_of = [](const Value& v) {
      return v.is(Type::Vector) ? v.as<lang::Vector>()->items
             : v.is_list()      ? lang::list_items(v)
                                : std::vector<Value>{};
    };
    std::vector<Value> given = items_of(a[it->second]);
    std::vector<std::vector<Value>> plists;
    if (!given.empty() && given[0].is(Type::Keyword)) plists.push_back(given);
    else
      for (const Value& v : given) plists.push_back(items_of(v));
    if (plists.empty()) plists.emplace_back();
    for (const auto& plist : plists) spec.tokenize.push_back(tokenized_field(a, it->second, plist));
  }
  auto it = keys.find("fields");
  if (it == keys.end() && spec.tokenize.empty()) {
    lang::fail(kLoaderArguments, a.call, "`jsonl` needs `:fields [:key ...]`, the keys each line gives",
               "write (jsonl \"data.jsonl\" :fields [:x :y])");
  }
  std::vector<Value> items;
  if (it != keys.end()) {
    const Value& given = a[it->second];
    if (given.is(Type::Vector)) items = given.as<lang::Vector>()->items;
    else if (given.is_list()) items = lang::list_items(given);
    else a.type_error(it->second, "a vector of keywords");
    if (items.empty() && spec.tokenize.empty()) {
      lang::fail(kLoaderArguments, a.span(it->second), "`:fields` names one key or more");
    }
  }
  for (const Value& item : items) {
    std::string name = field_name(a, it->second, item, ":fields");
    if (std::find(spec.fields.begin(), spec.fields.end(), name) != spec.fields.end()) {
      lang::fail(kLoaderArguments, a.span(it->second),
                 fmt::format("`:fields` names `{}` twice", lang::shown_in_message(name)));
    }
    spec.fields.push_back(std::move(name));
  }
  std::vector<std::string> names = spec.fields;
  for (const TokenizedField& t : spec.tokenize) {
    for (const std::string& name : {t.field, t.field + "-mask"}) {
      if (std::find(names.begin(), names.end(), name) != names.end()) {
        lang::fail(kLoaderArguments, a.call,
                   fmt::format("the loader names the field `{}` twice", lang::shown_in_message(name)),
                   "a field read through a tokenizer gives the fields NAME and NAME-mask; :fields lists the others");
      }
      names.push_back(name);
    }
  }
  return loader_value(a, std::move(spec));
}

// (take-batch LOADER &key step batch seed): the batch a run of that seed reads at that
// step, as a plist of its fields.
Value take_batch(Args& a) {
  const LoaderSpec* spec = as_loader_spec(a[0]);
  if (!spec) a.type_error(0, "a loader, such as (jsonl \"test.jsonl\" :fields [:x])");
  auto keys = a.keywords();
  auto count = [&](std::string_view key, int64_t fallback, int64_t least) {
    auto it = keys.find(std::string(key));
    if (it == keys.end()) return fallback;
    int64_t n = a.integer(it->second);
    if (n < least) {
      lang::fail(kLoaderArguments, a.span(it->second), fmt::format("`:{}` must be {} or more, not {}", key, least, n));
    }
    return n;
  };
  int64_t step = count("step", 0, 0), batch = count("batch", 1, 1), seed = count("seed", 0, 0);
  Batch taken = open_loader(*spec)->batch(static_cast<uint64_t>(seed), step, batch);
  const auto& tracer = a.interp.tracer();
  std::vector<Value> items;
  for (auto& [name, tensor] : taken.fields) {
    items.push_back(lang::make_keyword(name));
    items.push_back(lang::make_tensor(tracer, tracer->builder().constant(std::move(tensor))));
  }
  return lang::list(std::move(items));
}

// A field name as the call shows it: a keyword when it reads back as one, else a string.
std::string shown_field(const std::string& name) {
  bool plain = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0]));
  for (char c : name) plain = plain && (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_');
  return plain ? ":" + name : lang::print(lang::make_string(name));
}

}  // namespace

std::string LoaderSpec::print() const {
  std::string out = fmt::format("({} {}", loader_kind_name(kind), lang::print(lang::make_string(written)));
  switch (kind) {
    case LoaderKind::TextWindows: out += fmt::format(" :window {}", window); break;
    case LoaderKind::TokenWindows:
      out += fmt::format(" :dtype :{} :window {}", token_format_name(format), window);
      break;
    case LoaderKind::Records: break;
    case LoaderKind::Jsonl: {
      std::string names;
      for (const auto& f : fields) names += (names.empty() ? "" : " ") + shown_field(f);
      if (!fields.empty()) out += " :fields [" + names + "]";
      std::string plists;
      for (const auto& t : tokenize) {
        plists += fmt::format("{}[:field {} :with (tokenizer {}) :length {}{}]", plists.empty() ? "" : " ",
                              shown_field(t.field), lang::print(lang::make_string(t.tokenizer_written)), t.length,
                              t.special ? "" : " :special false");
      }
      if (tokenize.size() == 1) out += " :tokenize " + plists;
      if (tokenize.size() > 1) out += " :tokenize [" + plists + "]";
      break;
    }
  }
  return out + ")";
}

void install_loaders(lang::Interpreter& interp) {
  lang::install_rows(
      interp, "Loaders",
      {
          {"text-windows", text_windows, "(path &key window)",
           "Random windows of a text file's bytes: records of one field :ids, i32 [window+1] (inputs, and targets "
           "one later).",
           "(text-windows \"input.txt\" :window 64)  ; here input.txt does not exist\n;; error[E-RUN-021]"},
          {"token-windows", token_windows, "(path &key dtype window)",
           "Random windows of a file of little-endian tokens (:dtype :u16, :u32 or :i32): field :ids, i32 "
           "[window+1].",
           "(token-windows \"train.bin\" :dtype :u16 :window 256)  ; here train.bin does not exist\n"
           ";; error[E-RUN-021]"},
          {"records", records, "(path)",
           "The rows of a safetensors file's tensors, which share their first axis: a field per tensor, shuffled "
           "each epoch.",
           "(save-tensors \"rows.safetensors\" (list :x (ones [4 2]) :y (iota 4)))\n(records \"rows.safetensors\")\n"
           ";; => (records \"rows.safetensors\")"},
          {"jsonl", jsonl, "(path &key fields tokenize)",
           "The lines of a JSON-lines file: a field per key, a number or fixed-shape array (i32 if all integers, "
           "else f32); :tokenize reads text.",
           "(jsonl \"train.jsonl\" :fields [:x :y])  ; here train.jsonl does not exist\n;; error[E-RUN-021]"},
          {"take-batch", take_batch, "(loader &key (step 0) (batch 1) (seed 0))",
           "The batch a run with that seed reads at that step: a plist of the loader's fields, each with a leading "
           "batch axis.",
           "(save-tensors \"rows.safetensors\" (list :x (iota 4)))\n"
           "(shape (getf (take-batch (records \"rows.safetensors\") :batch 3) :x))\n;; => [3]"},
      });
}

}  // namespace sx::train
