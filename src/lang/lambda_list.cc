// Lambda lists: parsing `(a &optional (b 1) &rest r &key (k 2))` and binding a call's
// arguments to them.
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "lang/codes.h"
#include "lang/interp.h"
#include "lang/printer.h"

namespace sx::lang {
namespace {

enum class Section { Required, Optional, Rest, Key };

[[noreturn]] void bad(const Span& span, std::string message, std::string help = {}) {
  fail("E-EVAL-005", span, std::move(message),
       help.empty() ? "a lambda list is: names, then &optional, then &rest name, then &key" : std::move(help));
}

}  // namespace

std::string LambdaList::describe() const {
  std::vector<std::string> parts;
  // Shown in messages: every name shortened, as a message shows the user's names.
  for (const auto* name : required) parts.push_back(shown_in_message(name->name));
  auto with_default = [](const Param& p) {
    std::string name = shown_in_message(p.name->name);
    return p.default_form.is_nil() ? name : fmt::format("({} {})", name, printed_in_message(p.default_form));
  };
  if (!optional.empty()) parts.push_back("&optional");
  for (const auto& p : optional) parts.push_back(with_default(p));
  if (rest) parts.push_back("&rest " + shown_in_message(rest->name));
  if (has_keys) parts.push_back("&key");
  for (const auto& p : keys) parts.push_back(with_default(p));
  std::string out = "(";
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? " " : "") + parts[i];
  return out + ")";
}

std::shared_ptr<const LambdaList> parse_lambda_list(const Value& form, const Span& span) {
  if (!form.is_list())
    bad(span, fmt::format("a lambda list must be a list of names, not `{}`", printed_in_message(form)));
  auto list = std::make_shared<LambdaList>();
  Section section = Section::Required;
  std::set<const Symbol*> seen;
  bool rest_named = true;
  for (Cons* c = as_cons(form); c; c = next(c)) {
    Span where = c->car_span.known() ? c->car_span : span;
    const Symbol* symbol = as_symbol(c->car);
    if (symbol && !symbol->name.empty() && symbol->name[0] == '&') {
      Section wanted;
      if (symbol->name == "&optional") wanted = Section::Optional;
      else if (symbol->name == "&rest") wanted = Section::Rest;
      else if (symbol->name == "&key") wanted = Section::Key;
      else bad(where, fmt::format("unknown lambda-list marker `{}`", shown_in_message(symbol->name)));
      if (wanted <= section)
        bad(where, fmt::format("`{}` is out of order or repeated", shown_in_message(symbol->name)));
      if (!rest_named) bad(where, "`&rest` must be followed by a name");
      section = wanted;
      if (section == Section::Rest) rest_named = false;
      if (section == Section::Key) list->has_keys = true;
      continue;
    }
    LambdaList::Param param;
    if (symbol) {
      param.name = symbol;
    } else if (Cons* pair = as_cons(c->car);
               pair && (section == Section::Optional || section == Section::Key) && as_symbol(pair->car)) {
      param.name = as_symbol(pair->car);
      if (Cons* value = next(pair)) {
        if (next(value))
          bad(where, fmt::format("a default is `({} value)`, with one value", shown_in_message(param.name->name)));
        param.default_form = value->car;
        param.default_span = value->car_span.known() ? value->car_span : where;
      }
    } else {
      bad(where, fmt::format("a parameter must be a name{}, not `{}`",
                             section == Section::Optional || section == Section::Key ? " or (name default)" : "",
                             printed_in_message(c->car)));
    }
    if (param.name->name == "nil" || param.name->name.empty()) bad(where, "a parameter needs a name");
    if (!seen.insert(param.name).second)
      bad(where, fmt::format("parameter `{}` is named twice", shown_in_message(param.name->name)));
    switch (section) {
      case Section::Required: list->required.push_back(param.name); break;
      case Section::Optional: list->optional.push_back(std::move(param)); break;
      case Section::Rest:
        if (rest_named) bad(where, "`&rest` takes one name");
        list->rest = param.name;
        rest_named = true;
        break;
      case Section::Key:
        param.keyword = intern_keyword(param.name->name);
        list->keys.push_back(std::move(param));
        break;
    }
  }
  if (!rest_named) bad(span, "`&rest` must be followed by a name");
  return list;
}

ArgumentMatch match_arguments(const LambdaList& params, std::string_view function, std::span<const Value> args,
                              std::span<const Span> spans, const Span& call, const std::function<std::string()>& note,
                              bool other_keys_allowed) {
  auto span_of = [&](size_t i) { return i < spans.size() && spans[i].known() ? spans[i] : call; };
  // Only an error shows the name, so only an error pays for shortening it.
  auto shown_function = [&] { return shown_in_message(function); };
  auto arity_error = [&](std::string message) {
    Diagnostic d;
    d.code = "E-EVAL-003";
    d.span = call;
    d.message = std::move(message);
    d.notes.push_back(note());
    throw Error(std::move(d));
  };
  size_t n = args.size();
  size_t required = params.required.size();
  size_t positional = required + params.optional.size();
  if (n < required) {
    arity_error(fmt::format("`{}` takes {}{} argument{}, given {}", shown_function(),
                            positional > required || params.rest || params.has_keys ? "at least " : "", required,
                            required == 1 ? "" : "s", n));
  }
  if (!params.rest && !params.has_keys && n > positional) {
    arity_error(fmt::format("`{}` takes {}{} argument{}, given {}", shown_function(),
                            positional > required ? "at most " : "", positional, positional == 1 ? "" : "s", n));
  }
  ArgumentMatch match;
  match.keywords_at = std::min(n, positional);
  if (!params.has_keys) {
    match.keywords_at = n;
    return match;
  }
  if (params.rest) {
    while (match.keywords_at < n && !args[match.keywords_at].is(Type::Keyword)) ++match.keywords_at;
  }
  auto known_keys = [&] {
    std::string names;
    for (const auto& p : params.keys)
      names += fmt::format("{}:{}", names.empty() ? "" : " ", shown_in_message(p.name->name));
    return names.empty() ? std::string("no keywords") : "the keywords " + names;
  };
  for (size_t i = match.keywords_at; i < n; i += 2) {
    if (!args[i].is(Type::Keyword)) {
      fail("E-EVAL-006", span_of(i),
           fmt::format("`{}` expected a keyword here, not `{}`", shown_function(), printed_in_message(args[i])),
           fmt::format("`{}` takes {} positional argument{}, then {}", shown_function(), positional,
                       positional == 1 ? "" : "s", known_keys()));
    }
    const auto* keyword = args[i].as<Symbol>();
    bool known =
        std::any_of(params.keys.begin(), params.keys.end(), [&](const auto& p) { return p.keyword == keyword; });
    if (!known && !other_keys_allowed) {
      fail("E-EVAL-006", span_of(i),
           fmt::format("`{}` takes no keyword `:{}`", shown_function(), shown_in_message(keyword->name)),
           fmt::format("`{}` takes {}", shown_function(), known_keys()));
    }
    if (i + 1 >= n) {
      fail(kKeywordWithoutValue, span_of(i), fmt::format("keyword `:{}` has no value", shown_in_message(keyword->name)),
           fmt::format("write `:{} value`", shown_in_message(keyword->name)));
    }
    if (known && !match.keywords.emplace(keyword->name, i + 1).second) {
      fail("E-EVAL-006", span_of(i), fmt::format("keyword `:{}` is given twice", shown_in_message(keyword->name)));
    }
  }
  return match;
}

void Interpreter::bind_arguments(const Closure& closure, std::span<Value> args, std::span<const Span> arg_spans,
                                 const Span& call, Env& frame) {
  const LambdaList& params = *closure.params;
  // With &rest and &key, the rest holds the keyword pairs too, and other keywords may be
  // among them (docs/language.md).
  auto where = [&] {
    return fmt::format("`{}` is defined at {} with the parameters {}", shown_in_message(closure.name),
                       closure.span.location(), params.describe());
  };
  ArgumentMatch match = match_arguments(params, closure.name, args, arg_spans, call, where, params.rest != nullptr);
  // A default form runs inside the call, so its errors show the call in their chain.
  auto eval_default = [&](const LambdaList::Param& p) {
    try {
      return eval(p.default_form, p.default_span, frame);
    } catch (Error& e) {
      e.diagnostic().calls.push_back({fmt::format("`{}`", shown_in_message(closure.name)), call});
      throw;
    }
  };
  size_t n = args.size();
  size_t i = 0;
  for (; i < params.required.size(); ++i) frame.define(params.required[i], args[i]);
  for (const auto& p : params.optional) {
    if (i < n) frame.define(p.name, args[i++]);
    else frame.define(p.name, eval_default(p));
  }
  if (params.rest) {
    std::vector<Value> rest(args.begin() + static_cast<ptrdiff_t>(std::min(i, n)), args.end());
    frame.define(params.rest, list(std::move(rest)));
  }
  for (const auto& p : params.keys) {
    auto given = match.keywords.find(p.name->name);
    frame.define(p.name, given != match.keywords.end() ? args[given->second] : eval_default(p));
  }
}

}  // namespace sx::lang
