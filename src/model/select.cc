// (select :tag :name), (select :path "model.blocks.*.norm.*"), (select :not S),
// (select :all S ...), (select :any S ...).
#include "model/select.h"

#include <fmt/format.h>

#include <algorithm>

#include "lang/builtins/builtins.h"
#include "lang/printer.h"

namespace sx::model {

bool path_matches(std::string_view pattern, std::string_view path) {
  if (pattern.empty()) return path.empty();
  if (pattern.starts_with("**")) {
    for (size_t i = 0; i <= path.size(); ++i) {
      if (path_matches(pattern.substr(2), path.substr(i))) return true;
    }
    return false;
  }
  if (pattern[0] == '*') {
    for (size_t i = 0; i <= path.size(); ++i) {
      if (path_matches(pattern.substr(1), path.substr(i))) return true;
      if (i < path.size() && path[i] == '.') break;
    }
    return false;
  }
  return !path.empty() && pattern[0] == path[0] && path_matches(pattern.substr(1), path.substr(1));
}

std::string Selector::print() const {
  switch (kind) {
    case Kind::Tag: return fmt::format("(select :tag :{})", text);
    case Kind::Path: return fmt::format("(select :path \"{}\")", text);
    default: break;
  }
  std::string out = kind == Kind::Not ? "(select :not" : kind == Kind::All ? "(select :all" : "(select :any";
  for (const auto& s : operands) out += " " + lang::print(s);
  return out + ")";
}

bool Selector::matches(const Parameter& param) const {
  if (!param.decl->trainable) return false;
  auto sub = [&](const lang::Value& v) { return as_selector(v)->matches(param); };
  switch (kind) {
    case Kind::Tag: {
      const auto& tags = param.decl->tags;
      return std::find(tags.begin(), tags.end(), text) != tags.end();
    }
    case Kind::Path: return path_matches(text, param.path);
    case Kind::Not: return !sub(operands[0]);
    case Kind::All: return std::all_of(operands.begin(), operands.end(), sub);
    case Kind::Any: return std::any_of(operands.begin(), operands.end(), sub);
  }
  return false;
}

namespace {

lang::Value select(lang::Args& a) {
  std::string how = a.keyword(0)->name;
  auto selectors = [&](size_t from) {
    std::vector<lang::Value> out;
    for (size_t i = from; i < a.size(); ++i) {
      if (!as_selector(a[i])) a.type_error(i, "a selector");
      out.push_back(a[i]);
    }
    return out;
  };
  auto expect_count = [&](size_t n) {
    if (a.size() != n) {
      lang::fail("E-EVAL-003", a.call,
                 fmt::format("(select :{} ...) takes {} argument{} after :{}", how, n - 1, n == 2 ? "" : "s", how));
    }
  };
  if (how == "tag") {
    expect_count(2);
    if (!a[1].is(lang::Type::Keyword) && !a[1].is(lang::Type::Symbol) && !a[1].is(lang::Type::String)) {
      a.type_error(1, "a tag name");
    }
    std::string tag = a[1].is(lang::Type::String) ? lang::string_of(a[1]) : a[1].as<lang::Symbol>()->name;
    return lang::Value(new Selector(Selector::Kind::Tag, tag, {}));
  }
  if (how == "path") {
    expect_count(2);
    return lang::Value(new Selector(Selector::Kind::Path, a.string(1), {}));
  }
  if (how == "not") {
    expect_count(2);
    return lang::Value(new Selector(Selector::Kind::Not, "", selectors(1)));
  }
  if (how == "all" || how == "any") {
    if (a.size() < 2)
      lang::fail("E-EVAL-003", a.call, fmt::format("(select :{} ...) takes one or more selectors", how));
    return lang::Value(new Selector(how == "all" ? Selector::Kind::All : Selector::Kind::Any, "", selectors(1)));
  }
  lang::fail("E-EVAL-006", a.span(0), fmt::format("`select` has no `:{}`", lang::shown_in_message(how)),
             "use :tag, :path, :not, :all or :any");
}

}  // namespace

void install_select(lang::Interpreter& interp) {
  lang::install_rows(interp, "Selecting parameters",
                     {
                         {"select", select, "(how &rest args)",
                          "A selector of parameters: (select :tag :norm), (select :path \"model.*.b\"), "
                          "(select :not s), (select :all s...), (select :any s...).",
                          "(select :not (select :tag :no-decay))\n;; => (select :not (select :tag :no-decay))"},
                     });
}

}  // namespace sx::model
