// Finding the path sites of a source (paths.h).
#include "bundle/paths.h"

#include <algorithm>
#include <array>

#include "lang/printer.h"

namespace sx::bundle {
namespace {

using lang::Cons;
using lang::Span;
using lang::Type;
using lang::Value;

// The forms whose first argument is the path they read.
constexpr std::array<std::string_view, 6> kPathFirst = {"text-windows", "token-windows", "records",
                                                        "jsonl",        "tokenizer",     "hf-model"};
// The forms whose parameter list follows their name, and lambda's, which follows it at once:
// a parameter named as a form (`(defun encode (tokenizer text) ...)`) is not a call.
constexpr std::array<std::string_view, 3> kNamedWithParameters = {"defun", "defmacro", "defmodel"};

const std::string* head_name(const Cons* list) {
  const lang::Symbol* head = lang::as_symbol(list->car);
  return head ? &head->name : nullptr;
}

class Scanner {
 public:
  std::vector<PathSite> sites;

  void scan(const Value& form, Span span) {
    const Cons* list = lang::as_cons(form);
    if (!list) {
      if (form.is(Type::Vector)) {
        const auto& vector = *form.as<lang::Vector>();
        for (size_t i = 0; i < vector.items.size(); ++i) scan(vector.items[i], vector.span_of(i));
      }
      return;
    }
    const std::string* head = head_name(list);
    if (head && *head == "quote") return;  // data, not a call
    if (head && (*head == "let" || *head == "let*")) return scan_let(list);
    const Cons* parameters = nullptr;
    if (head && *head == "lambda") parameters = lang::next(list);
    else if (head && contains(kNamedWithParameters, *head) && lang::next(list))
      parameters = lang::next(lang::next(list));
    if (head && *head == "defparam") scan_defparam(list);
    else if (head && *head == "with-loaded") scan_with_loaded(list, span);
    else if (head && contains(kPathFirst, *head)) scan_path_first(list, *head, span);
    for (const Cons* c = list; c; c = lang::next(c)) {
      if (c != parameters) scan(c->car, c->car_span);
    }
  }

 private:
  template <size_t N>
  static bool contains(const std::array<std::string_view, N>& names, const std::string& name) {
    return std::find(names.begin(), names.end(), name) != names.end();
  }

  void site(std::string form, const Value& value, Span span, PathKind kind) {
    std::optional<std::string> literal;
    if (value.is(Type::String)) literal = lang::string_of(value);
    sites.push_back({std::move(form), span, std::move(literal), kind});
  }

  // A binding list's entries are not calls: `(let ((records (f))) ...)` names a variable.
  void scan_let(const Cons* list) {
    const Cons* bindings = lang::next(list);
    if (!bindings) return;
    for (const Cons* b = lang::as_cons(bindings->car); b; b = lang::next(b)) {
      const Cons* binding = lang::as_cons(b->car);
      const Cons* value = binding ? lang::next(binding) : nullptr;
      for (; value; value = lang::next(value)) scan(value->car, value->car_span);
    }
    for (const Cons* c = lang::next(bindings); c; c = lang::next(c)) scan(c->car, c->car_span);
  }

  void scan_defparam(const Cons* list) {
    for (const Cons* c = lang::next(list); c; c = lang::next(c)) {
      const lang::Symbol* key = c->car.is(Type::Keyword) ? c->car.as<lang::Symbol>() : nullptr;
      const Cons* value = lang::next(c);
      if (!key || key->name != "load" || !value) continue;
      if (value->car.is(Type::Vector) && !value->car.as<lang::Vector>()->items.empty()) {
        const auto& vector = *value->car.as<lang::Vector>();
        site("defparam :load", vector.items[0], vector.span_of(0), PathKind::Tensors);
      } else {
        site("defparam :load", value->car, value->car_span, PathKind::Tensors);
      }
    }
  }

  void scan_with_loaded(const Cons* list, Span span) {
    const Cons* header = lang::next(list);
    if (!header) return;
    const Cons* items = lang::as_cons(header->car);
    if (items) site("with-loaded", items->car, items->car_span, PathKind::Tensors);
    else site("with-loaded", header->car, header->car_span.known() ? header->car_span : span, PathKind::Tensors);
  }

  void scan_path_first(const Cons* list, const std::string& name, Span span) {
    PathKind kind = name == "hf-model" ? PathKind::ModelFolder : PathKind::File;
    const Cons* path = lang::next(list);
    if (path) site(name, path->car, path->car_span, kind);
    else site(name, Value(), span, kind);
  }
};

}  // namespace

std::vector<PathSite> path_sites(const lang::SourceFile& file, const lang::ReaderLimits& limits) {
  Scanner scanner;
  for (const lang::Form& form : lang::read_forms(file, limits)) scanner.scan(form.value, form.span);
  std::sort(scanner.sites.begin(), scanner.sites.end(),
            [](const PathSite& a, const PathSite& b) { return a.span.offset < b.span.offset; });
  return scanner.sites;
}

std::string apply_edits(std::string_view text, std::vector<Edit> edits) {
  std::sort(edits.begin(), edits.end(), [](const Edit& a, const Edit& b) { return a.offset < b.offset; });
  std::string out;
  size_t at = 0;
  for (const Edit& edit : edits) {
    out.append(text.substr(at, edit.offset - at));
    out += edit.text;
    at = edit.offset + edit.length;
  }
  out.append(text.substr(std::min(at, text.size())));
  return out;
}

std::string string_literal(const std::string& path) { return lang::print(lang::make_string(path)); }

}  // namespace sx::bundle
