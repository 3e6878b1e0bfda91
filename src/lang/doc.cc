// `doc` and `help`: a function's or special form's signature, documentation and example,
// as the REPL shows them, and docs/builtins.md, generated from the same rows.
#include "lang/doc.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>

#include "lang/codes.h"
#include "lang/printer.h"
#include "lang/tracer.h"

namespace sx::lang {
namespace {

// What `(doc NAME)` gives: text that prints as itself (not as a string with quotes), so
// the REPL and `sexpgpu eval` show the documentation as it is.
class Documentation final : public Opaque {
 public:
  explicit Documentation(std::string text) : text_(std::move(text)) {}
  std::string type_label() const override { return "documentation"; }
  std::string print() const override { return text_; }

 private:
  std::string text_;
};

// Each line of `text` after `indent`.
std::string indented(std::string_view text, std::string_view indent) {
  std::string out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    // A docstring's continuation lines keep the indentation of the source: drop it.
    size_t first = line.find_first_not_of(' ');
    if (start > 0) line = first == std::string_view::npos ? std::string_view() : line.substr(first);
    out += std::string(indent) + std::string(line) + "\n";
    start = end + 1;
  }
  return out;
}

// "(map f seq &rest seqs)" from the name and "(f seq &rest seqs)".
std::string call_form(std::string_view name, std::string_view lambda_list) {
  if (lambda_list.empty()) return fmt::format("({} ...)", name);
  if (lambda_list == "()") return fmt::format("({})", name);
  return fmt::format("({} {}", name, lambda_list.substr(1));
}

// A source location as a person finds the file: a library file from its library directory.
std::string where(Interpreter& in, Span span) {
  if (!span.known()) return {};
  std::string location = span.location();
  for (const auto& dir : in.options().library_dirs) {
    std::string prefix = (std::filesystem::path(dir) / "").string();
    if (location.starts_with(prefix)) return location.substr(prefix.size());
  }
  return location;
}

std::string render(std::string_view signature, std::string_view kind, std::string_view summary,
                   std::string_view example) {
  std::string out = std::string(signature) + "\n" + indented(kind, "  ");
  if (!summary.empty()) out += indented(summary, "  ");
  if (!example.empty()) out += "  Example:\n" + indented(example, "    ");
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

std::string shortened(std::string text, size_t limit = 200) {
  if (text.size() <= limit) return text;
  size_t cut = limit;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return text.substr(0, cut) + "...";
}

std::string describe_value(Interpreter& in, std::string_view name, const Value& value) {
  if (value.is(Type::Function) || value.is(Type::Macro)) {
    const auto* fn = value.as<Function>();
    std::string shown_name = name.empty() ? fn->name : std::string(name);
    std::string signature = call_form(shown_name, fn->lambda_list());
    if (const auto* builtin = dynamic_cast<const Builtin*>(fn)) {
      return render(signature, fmt::format("A builtin function ({}).", builtin->doc.family), builtin->doc.summary,
                    builtin->doc.example);
    }
    const auto* closure = dynamic_cast<const Closure*>(fn);
    std::string kind = value.is(Type::Macro) ? "A macro" : "A function";
    if (const auto* native = dynamic_cast<const NativeClosure*>(fn)) {
      const auto* constructor = native->documented_by.is(Type::Function)
                                    ? dynamic_cast<const Closure*>(native->documented_by.as<Function>())
                                    : nullptr;
      if (!constructor) {
        kind = native->doc.family.empty() ? "A function." : fmt::format("A builtin function ({}).", native->doc.family);
        return render(signature, kind, native->doc.summary, native->doc.example);
      }
      closure = constructor;
      kind = "A model constructor (defmodel)";
    }
    std::string at = where(in, closure->span);
    kind += at.empty() ? "." : fmt::format(", defined at {}.", at);
    std::string summary = closure->documentation();
    if (summary.empty()) summary = "No documentation: a string as the first of several body forms documents it.";
    return render(signature, kind, summary, {});
  }
  std::string kind = value.is(Type::Opaque) ? value.as<Opaque>()->type_label() : std::string(type_name(value.type()));
  std::string printed = shortened(print(value));
  if (name.empty()) return fmt::format("{}: {}", kind, printed);
  return fmt::format("`{}` is {}: {}", name, kind, printed);
}

// Where a name the program has not defined is defined in the standard library, if it is:
// the module and the value.
std::optional<std::pair<std::string, Value>> find_in_library(Interpreter& in, const Symbol* name, Span span, Env& env) {
  std::vector<std::string> modules;
  for (const auto& dir : in.options().library_dirs) {
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(dir) / "sexpgpu", ec)) {
      if (entry.path().extension() == ".sx") modules.push_back("sexpgpu/" + entry.path().stem().string());
    }
    if (!modules.empty()) break;
  }
  std::sort(modules.begin(), modules.end());
  for (const auto& module : modules) {
    try {
      Ref<Env> loaded = in.require_module(module, span, env);
      // A name a module imports is documented by the module that defines it.
      if (Value* value = loaded->lookup_local(name); value && !loaded->imported(name)) {
        return std::pair{module, *value};
      }
    } catch (const Error&) {
      // A library module that does not load is no place to find documentation.
    }
  }
  return std::nullopt;
}

std::string describe_name(Interpreter& in, const Symbol* name, Span span, Env& env) {
  if (Value* value = env.lookup(name)) return describe_value(in, name->name, *value);
  if (const BuiltinDoc* doc = in.special_form_doc(name)) {
    std::string signature = doc->params.empty() ? fmt::format("({} ...)", name->name) : doc->params;
    std::string summary =
        doc->summary.empty() ? "docs/language.md and docs/models.md describe the special forms." : doc->summary;
    return render(signature, "A special form: its arguments are not evaluated first.", summary, doc->example);
  }
  if (auto found = find_in_library(in, name, span, env)) {
    std::string text = describe_value(in, name->name, found->second);
    return text + fmt::format("\n  (require \"{}\") to use it.", found->first);
  }
  // Unbound: the evaluator's own error, with its suggestion of a similar name.
  in.eval(Value(name), span, env);
  return {};
}

Value doc_form(Interpreter& in, const Value& form, Span span, Env& env) {
  std::vector<std::pair<Value, Span>> args;
  for (Cons* c = next(form.as<Cons>()); c; c = next(c))
    args.emplace_back(c->car, c->car_span.known() ? c->car_span : span);
  std::string what = as_symbol(form.as<Cons>()->car) ? as_symbol(form.as<Cons>()->car)->name : "doc";
  if (args.empty()) return Value(new Documentation(general_help(in)));
  if (args.size() > 1) {
    fail(kMalformedForm, span, fmt::format("malformed `{}`", what),
         fmt::format("write it as ({} NAME): (doc map), or ({}) for an overview", what, what));
  }
  auto [arg, arg_span] = args[0];
  if (const Symbol* name = as_symbol(arg)) return Value(new Documentation(describe_name(in, name, arg_span, env)));
  Value value = in.eval(arg, arg_span, env);
  if (value.is(Type::Symbol)) return Value(new Documentation(describe_name(in, value.as<Symbol>(), arg_span, env)));
  if (value.is(Type::String) && !string_of(value).empty()) {
    return Value(new Documentation(describe_name(in, intern(string_of(value)), arg_span, env)));
  }
  return Value(new Documentation(describe_value(in, {}, value)));
}

// The families of builtins in the order they were installed, each with its builtins.
struct Family {
  std::string name;
  std::vector<std::pair<std::string, const Function*>> members;
};

std::vector<Family> families(Interpreter& in) {
  std::vector<Family> out;
  for (const auto& [symbol, value] : in.builtins().bindings()) {
    if (!value.is(Type::Function)) continue;
    const auto* fn = value.as<Function>();
    std::string family = "Other";
    if (const auto* b = dynamic_cast<const Builtin*>(fn)) family = b->doc.family;
    else if (const auto* n = dynamic_cast<const NativeClosure*>(fn)) family = n->doc.family;
    if (family.empty()) family = "Other";
    auto it = std::find_if(out.begin(), out.end(), [&](const Family& f) { return f.name == family; });
    if (it == out.end()) it = out.insert(out.end(), Family{family, {}});
    it->members.emplace_back(symbol->name, fn);
  }
  return out;
}

const BuiltinDoc* doc_of(const Function* fn) {
  if (const auto* b = dynamic_cast<const Builtin*>(fn)) return &b->doc;
  if (const auto* n = dynamic_cast<const NativeClosure*>(fn)) return &n->doc;
  return nullptr;
}

// "Numbers" -> "numbers", "Values: equality, types" -> "values-equality-types": the anchor
// GitHub gives a heading.
std::string anchor(std::string_view heading) {
  std::string out;
  for (char c : heading) {
    if (std::isalnum(static_cast<unsigned char>(c)))
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    else if (c == ' ' || c == '-') out += '-';
  }
  return out;
}

}  // namespace

std::string general_help(Interpreter& in) {
  std::string out =
      "Type an expression and press Enter: its value is printed. A form may span lines.\n"
      "\n"
      "  (doc NAME)           what NAME is: its arguments, what it does, an example: (doc map)\n"
      "  (help)               this overview\n"
      "  TAB                  completes the name before the cursor (in the REPL)\n"
      "  (quit) (exit) Ctrl-D leave the REPL\n"
      "\n"
      "Every builtin with an example: docs/builtins.md. The language: docs/language.md; tensors:\n"
      "docs/tensors.md; models: docs/models.md; the command line: docs/cli.md. An error code\n"
      "explained: sexpgpu explain-error E-EVAL-001. The standard library: (require \"sexpgpu/nn\").\n";
  for (const auto& family : families(in)) {
    out += "\n" + family.name + ":\n";
    std::string line = " ";
    for (const auto& [name, fn] : family.members) {
      if (line.size() + 1 + name.size() > 88) {
        out += line + "\n";
        line = " ";
      }
      line += " " + name;
    }
    out += line + "\n";
  }
  std::string forms = " ";
  out += "\nSpecial forms:\n";
  for (const Symbol* name : in.special_form_names()) {
    if (forms.size() + 1 + name->name.size() > 88) {
      out += forms + "\n";
      forms = " ";
    }
    forms += " " + name->name;
  }
  out += forms;
  return out;
}

std::string documentation_of(Interpreter& in, const std::string& name, Env& env) {
  return describe_name(in, intern(name), {}, env);
}

std::vector<std::string> undocumented_builtins(Interpreter& in) {
  std::vector<std::string> missing;
  for (const auto& family : families(in)) {
    for (const auto& [name, fn] : family.members) {
      const BuiltinDoc* doc = doc_of(fn);
      if (!doc || doc->params.empty() || doc->summary.empty() || doc->example.empty() || doc->family.empty()) {
        missing.push_back(name);
      }
    }
  }
  return missing;
}

std::string builtins_markdown(Interpreter& in) {
  std::vector<Family> all = families(in);
  std::string out =
      "# Builtins\n"
      "\n"
      "<!-- Generated from the builtins' own rows by `sexpgpu doc --markdown`; do not edit.\n"
      "     The test docs.builtins fails when this page differs from what the program prints;\n"
      "     CONTRIBUTING.md says how to regenerate it. -->\n"
      "\n"
      "Every function and special form SexpGPU defines before a file starts, by family: how it is\n"
      "called (its lambda list), what it does, and an example with the value it prints (the\n"
      "docs test runs every example). `(doc NAME)` shows the same in the REPL, and `(help)` lists\n"
      "the names. The standard library (`sexpgpu/ops`, `sexpgpu/nn`) is written in SexpGPU\n"
      "Lisp and is described with [tensors](tensors.md) and [models](models.md).\n"
      "\n";
  for (const auto& family : all) out += fmt::format("- [{}](#{})\n", family.name, anchor(family.name));
  out += "- [Constants](#constants)\n- [Special forms](#special-forms)\n";
  for (const auto& family : all) {
    out += fmt::format("\n## {}\n", family.name);
    for (const auto& [name, fn] : family.members) {
      const BuiltinDoc* doc = doc_of(fn);
      std::string params = doc ? doc->params : std::string();
      out += fmt::format("\n### `{}`\n\n`{}`\n", name, call_form(name, params));
      if (doc && !doc->summary.empty()) out += "\n" + doc->summary + "\n";
      if (doc && !doc->example.empty()) out += "\n```lisp\n" + doc->example + "\n```\n";
    }
  }
  out += "\n## Constants\n\n| name | value |\n| --- | --- |\n";
  for (const auto& [symbol, value] : in.builtins().bindings()) {
    if (!value.is(Type::Function)) out += fmt::format("| `{}` | `{}` |\n", symbol->name, print(value));
  }
  out +=
      "\n## Special forms\n"
      "\n"
      "Their arguments are not evaluated before the form sees them; [the language](language.md)\n"
      "describes them in full.\n";
  std::vector<std::string> undocumented;
  for (const Symbol* name : in.special_form_names()) {
    const BuiltinDoc* doc = in.special_form_doc(name);
    if (!doc || doc->params.empty()) {
      undocumented.push_back(fmt::format("`{}`", name->name));
      continue;
    }
    out += fmt::format("\n### `{}`\n\n`{}`\n\n{}\n", name->name, doc->params, doc->summary);
    if (!doc->example.empty()) out += "\n```lisp\n" + doc->example + "\n```\n";
  }
  if (!undocumented.empty()) {
    std::string names;
    for (size_t i = 0; i < undocumented.size(); ++i) names += (i ? ", " : "") + undocumented[i];
    out += fmt::format("\nAlso {}: see [models](models.md) and the run file's page.\n", names);
  }
  return out;
}

void install_doc_forms(Interpreter& in) {
  BuiltinDoc doc{"(doc NAME)",
                 "What NAME is: a function's lambda list, its documentation and an example; (doc) is (help).",
                 "(doc first)", "Special forms"};
  in.define_special_form("doc", doc_form, doc);
  in.define_special_form(
      "help", doc_form,
      BuiltinDoc{"(help [NAME])", "An overview of getting help and of every builtin; (help NAME) is (doc NAME).",
                 "(help first)", "Special forms"});
}

}  // namespace sx::lang
