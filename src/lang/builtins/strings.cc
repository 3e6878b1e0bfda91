// String, symbol and keyword builtins. Strings are UTF-8; every index and length a user
// sees counts code points, never bytes. Case mapping is ASCII only. A builtin that builds
// a string has it admitted first (admit_string): steps charged, the memory limit checked.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <charconv>

#include "graph/memory.h"
#include "lang/builtins/builtins.h"
#include "lang/printer.h"
#include "lang/tracer.h"

namespace sx::lang {
namespace {

bool is_continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

size_t code_points(std::string_view text) {
  size_t n = 0;
  for (char c : text) n += !is_continuation(c);
  return n;
}

// The byte offset of code point `index` (the size at or past the end).
size_t byte_offset(std::string_view text, size_t index) {
  size_t cp = 0;
  for (size_t b = 0; b < text.size(); ++b) {
    if (is_continuation(text[b])) continue;
    if (cp++ == index) return b;
  }
  return text.size();
}

// Before `a`'s function builds a string of `bytes`: charges the step budget one step per
// KiB, so that --max-steps bounds the work of doubling a string as well as the calls that
// double it, then refuses the string past the memory limit.
void admit_string(const Args& a, double bytes) {
  constexpr double kBytesPerStep = 1024;
  a.interp.charge(static_cast<uint64_t>(std::min(bytes, 0x1p62) / kBytesPerStep), a.call);
  graph::check_memory(bytes, [&] { return fmt::format("`{}`: the string it builds", a.function); });
}

// The `display` forms of `values` with `separator` between them. A string is measured,
// not copied, before the limit is checked: doubling a string is refused before the copy.
std::string joined_display(const Args& a, const std::vector<Value>& values, std::string_view separator) {
  std::vector<std::string> shown;  // the display form of each value that is not a string
  double bytes = static_cast<double>(separator.size()) * static_cast<double>(values.empty() ? 0 : values.size() - 1);
  for (const Value& v : values) {
    bytes += static_cast<double>(v.is(Type::String) ? string_of(v).size() : shown.emplace_back(display(v)).size());
  }
  admit_string(a, bytes);
  std::string out;
  out.reserve(static_cast<size_t>(bytes));
  size_t next = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) out += separator;
    out += values[i].is(Type::String) ? string_of(values[i]) : shown[next++];
  }
  return out;
}

// (str x...): the `display` forms of the values, concatenated; tensors show their elements.
Value concat_display(Args& a) { return make_string(joined_display(a, materialized_args(a, 0), "")); }

// Whether a spec (what follows the `:` of `{:.3f}`) asks for a float presentation.
bool float_spec(std::string_view spec) {
  return spec.find('.') != std::string_view::npos ||
         (!spec.empty() && std::string_view("eEfFgG").find(spec.back()) != std::string_view::npos);
}

// Whether a spec only places the text: [[fill]align][width].
bool alignment_only(std::string_view spec) {
  auto is_align = [](char c) { return c == '<' || c == '>' || c == '^'; };
  size_t i = spec.size() >= 2 && is_align(spec[1]) ? 2 : !spec.empty() && is_align(spec[0]) ? 1 : 0;
  for (; i < spec.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(spec[i]))) return false;
  }
  return true;
}

// A number formatted by an fmt spec: an integer under a float spec as a float; a float
// under a spec that only places it keeps its shortest text (`shortest`), with a `.`, and
// goes to the right as numbers do.
std::string format_number(std::string_view spec, bool integer, int64_t i, double d, const std::string& shortest) {
  if (integer && !float_spec(spec)) return fmt::format(fmt::runtime(fmt::format("{{:{}}}", spec)), i);
  if (!integer && alignment_only(spec)) {
    bool aligned = spec.find_first_of("<>^") != std::string_view::npos;
    return fmt::format(fmt::runtime(fmt::format("{{:{}{}}}", aligned ? "" : ">", spec)), shortest);
  }
  return fmt::format(fmt::runtime(fmt::format("{{:{}}}", spec)), integer ? static_cast<double>(i) : d);
}

// The most a spec can make of one value: its largest number, a width or a precision
// (`{:>1000000000}` pads to it), which fmt would write out before the memory limit saw it.
double spec_reach(std::string_view spec) {
  double widest = 0, number = 0;
  for (char c : spec) {
    number = c >= '0' && c <= '9' ? number * 10 + (c - '0') : 0;
    widest = std::max(widest, number);
  }
  return widest;
}

// One placeholder's text: the value as `display` shows it or, with a spec, formatted by it
// as fmt (and Python) read it: `.3f`, `>8`, `e`, `,`... A tensor with a spec formats each
// element by it; a scalar tensor reads as its number.
std::string format_value(const Args& a, size_t index, const Value& v, std::string_view spec) {
  if (spec.empty()) return display(v);
  admit_string(a, spec_reach(spec));
  try {
    if (v.is(Type::Int)) return format_number(spec, true, v.as_int(), 0, {});
    if (v.is(Type::Float)) return format_number(spec, false, 0, v.as_float(), format_float(v.as_float()));
    const TensorValue* t = as_tensor(v);
    if (t && t->info().value) {
      const graph::Tensor& value = *t->info().value;
      auto element = [&](const graph::Tensor& tensor, int64_t i) {
        switch (tensor.dtype()) {
          case graph::DType::boolean:
            return fmt::format(fmt::runtime(fmt::format("{{:{}}}", spec)), tensor.value(i) != 0 ? "true" : "false");
          case graph::DType::i64: return format_number(spec, true, tensor.data<int64_t>()[i], 0, {});
          case graph::DType::i32:
          case graph::DType::u16:
          case graph::DType::u8: return format_number(spec, true, static_cast<int64_t>(tensor.value(i)), 0, {});
          default: return format_number(spec, false, 0, tensor.value(i), element_text(tensor, i));
        }
      };
      if (value.shape().empty()) return element(value, 0);
      return format_tensor(value, tensor_print_limit(), element);
    }
    return fmt::format(fmt::runtime(fmt::format("{{:{}}}", spec)), display(v));
  } catch (const fmt::format_error& e) {
    fail("E-EVAL-004", a.span(index + 1),
         fmt::format("`format`: the spec `{{:{}}}` does not fit {} `{}`: {}", shown_in_message(spec), type_label(v),
                     printed_in_message(v), e.what()),
         "a spec is what Python's format takes: {:.3f} for 3 decimals, {:>8} to right-align, {:e} for exponents");
  }
}

// (format "x = {} and {:.3f}" a b): each `{}` takes the next value's `display` form, each
// `{:SPEC}` the value formatted by SPEC; `{{` and `}}` are literal braces.
Value format_string(Args& a) {
  const std::string& pattern = a.string(0);
  struct Hole {
    size_t at;  // where it goes in `out`
    std::string spec;
  };
  std::string out;
  std::vector<Hole> holes;
  for (size_t i = 0; i < pattern.size(); ++i) {
    char c = pattern[i];
    if ((c == '{' || c == '}') && i + 1 < pattern.size() && pattern[i + 1] == c) {
      out += c;
      ++i;
      continue;
    }
    if (c == '{') {
      size_t close = pattern.find('}', i + 1);
      std::string_view inside =
          close == std::string::npos ? std::string_view() : std::string_view(pattern).substr(i + 1, close - i - 1);
      bool placeholder = close != std::string::npos && inside.find('{') == std::string_view::npos &&
                         (inside.empty() || inside[0] == ':');
      if (placeholder) {
        holes.push_back({out.size(), std::string(inside.empty() ? inside : inside.substr(1))});
        i = close;
        continue;
      }
    }
    if (c == '{' || c == '}') {
      fail("E-EVAL-004", a.span(0),
           fmt::format("the format string has a lone `{}` at code point {}", c,
                       code_points(std::string_view(pattern).substr(0, i))),
           "`{}` and `{:spec}` are placeholders; write `{{` or `}}` for a literal brace");
    }
    out += c;
  }
  size_t placeholders = holes.size();
  size_t values = a.size() - 1;
  if (placeholders != values) {
    fail("E-EVAL-004", a.call,
         fmt::format("the format string has {} placeholder{} but {} value{} {} given", placeholders,
                     placeholders == 1 ? "" : "s", values, values == 1 ? "" : "s", values == 1 ? "was" : "were"),
         "each `{}` takes one value, in order");
  }
  std::vector<Value> shown = materialized_args(a, 1);
  std::vector<std::string> filled;
  double bytes = static_cast<double>(out.size());
  for (size_t k = 0; k < holes.size(); ++k) {
    bytes += static_cast<double>(filled.emplace_back(format_value(a, k, shown[k], holes[k].spec)).size());
  }
  admit_string(a, bytes);
  std::string result;
  result.reserve(static_cast<size_t>(bytes));
  size_t from = 0;
  for (size_t k = 0; k < holes.size(); ++k) {
    result.append(out, from, holes[k].at - from);
    result += filled[k];
    from = holes[k].at;
  }
  result.append(out, from);
  return make_string(std::move(result));
}

// `raw` with each byte that does not start a well-formed UTF-8 sequence replaced by U+FFFD.
std::string valid_utf8(std::string_view raw) {
  std::string out;
  for (size_t i = 0; i < raw.size();) {
    auto lead = static_cast<unsigned char>(raw[i]);
    size_t length = lead < 0x80                   ? 1
                    : lead >= 0xc2 && lead < 0xe0 ? 2
                    : lead >= 0xe0 && lead < 0xf0 ? 3
                    : lead >= 0xf0 && lead < 0xf5 ? 4
                                                  : 0;
    bool whole = length > 0 && i + length <= raw.size();
    for (size_t k = 1; whole && k < length; ++k) whole = is_continuation(raw[i + k]);
    // Overlong three- and four-byte forms, surrogates, and code points past U+10FFFF.
    if (whole && length >= 3) {
      auto second = static_cast<unsigned char>(raw[i + 1]);
      whole = !(lead == 0xe0 && second < 0xa0) && !(lead == 0xed && second >= 0xa0) &&
              !(lead == 0xf0 && second < 0x90) && !(lead == 0xf4 && second >= 0x90);
    }
    if (!whole) {
      out += "\xEF\xBF\xBD";
      ++i;
      continue;
    }
    out.append(raw.substr(i, length));
    i += length;
  }
  return out;
}

// (string-bytes s): the UTF-8 bytes of s, what text-windows reads as tokens.
Value string_bytes(Args& a) {
  a.interp.charge(a.string(0).size(), a.call);
  check_items_memory(a, a.string(0).size());
  std::vector<Value> out;
  for (char c : a.string(0)) out.push_back(Value::integer(static_cast<unsigned char>(c)));
  return list(std::move(out));
}

// (bytes-string bytes): the string of a sequence of byte values; bytes that are not
// valid UTF-8 become U+FFFD, so the result is always a string the printer shows.
Value bytes_string(Args& a) {
  std::string raw;
  const Value& given = a[0];
  std::vector<Value> items = given.is(Type::Vector) ? given.as<Vector>()->items : list_items(a.list(0));
  for (const Value& item : items) {
    if (!item.is(Type::Int) || item.as_int() < 0 || item.as_int() > 255)
      a.type_error(0, "a sequence of bytes (0 to 255)");
    raw.push_back(static_cast<char>(item.as_int()));
  }
  admit_string(a, static_cast<double>(raw.size()));
  return make_string(valid_utf8(raw));
}

Value string_length(Args& a) { return Value::integer(static_cast<int64_t>(code_points(a.string(0)))); }

// (substring s start [end]): code points start..end-1.
Value substring(Args& a) {
  const std::string& text = a.string(0);
  size_t length = code_points(text);
  int64_t start = a.integer(1);
  int64_t end = a.size() > 2 ? a.integer(2) : static_cast<int64_t>(length);
  for (auto [i, index] : {std::pair{size_t{1}, start}, std::pair{size_t{2}, end}}) {
    if (index < 0 || static_cast<size_t>(index) > length) {
      fail("E-EVAL-015", a.span(i),
           fmt::format("index {} is out of range for `substring` of a string of length {}", index, length),
           fmt::format("indices count code points, from 0 to {}", length));
    }
  }
  if (start > end) {
    fail("E-EVAL-015", a.span(2), fmt::format("`substring` ends at {}, before its start {}", end, start),
         "the end index is exclusive and at least the start");
  }
  size_t from = byte_offset(text, static_cast<size_t>(start)), to = byte_offset(text, static_cast<size_t>(end));
  admit_string(a, static_cast<double>(to - from));
  return make_string(text.substr(from, to - from));
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

// (split s [sep]): the pieces between occurrences of sep; without sep, the words between
// runs of whitespace; with "" the code points.
Value split_string(Args& a) {
  const std::string& text = a.string(0);
  std::vector<Value> pieces;
  if (a.size() == 1) {
    size_t i = 0;
    while (i < text.size()) {
      while (i < text.size() && is_space(text[i])) ++i;
      size_t start = i;
      while (i < text.size() && !is_space(text[i])) ++i;
      if (i > start) pieces.push_back(make_string(text.substr(start, i - start)));
    }
  } else if (a.string(1).empty()) {
    for (size_t i = 0; i < text.size();) {
      size_t start = i++;
      while (i < text.size() && is_continuation(text[i])) ++i;
      pieces.push_back(make_string(text.substr(start, i - start)));
    }
  } else {
    const std::string& sep = a.string(1);
    size_t start = 0;
    for (size_t at; (at = text.find(sep, start)) != std::string::npos; start = at + sep.size()) {
      pieces.push_back(make_string(text.substr(start, at - start)));
    }
    pieces.push_back(make_string(text.substr(start)));
  }
  a.interp.charge(pieces.size(), a.call);
  return list(std::move(pieces));
}

// (join seq [sep]): the `display` forms of the items with sep between them.
Value join_strings(Args& a) {
  std::vector<Value> items;
  if (a[0].is_list()) items = list_items(a[0]);
  else if (a[0].is(Type::Vector)) items = a[0].as<Vector>()->items;
  else a.type_error(0, "a list or a vector");
  return make_string(joined_display(a, items, a.size() > 1 ? a.string(1) : ""));
}

Value change_case(Args& a, int (*f)(int)) {
  admit_string(a, static_cast<double>(a.string(0).size()));
  std::string text = a.string(0);
  for (char& c : text) {
    if (static_cast<unsigned char>(c) < 0x80) c = static_cast<char>(f(static_cast<unsigned char>(c)));
  }
  return make_string(std::move(text));
}

Value starts_with(Args& a) { return Value::boolean(a.string(0).starts_with(a.string(1))); }
Value ends_with(Args& a) { return Value::boolean(a.string(0).ends_with(a.string(1))); }

// (replace s old new): every occurrence of old replaced by new.
Value replace_all(Args& a) {
  const std::string& text = a.string(0);
  const std::string& old = a.string(1);
  const std::string& replacement = a.string(2);
  if (old.empty()) a.type_error(1, "a non-empty string");
  double occurrences = 0;
  for (size_t at = text.find(old); at != std::string::npos; at = text.find(old, at + old.size())) ++occurrences;
  admit_string(a, static_cast<double>(text.size()) +
                      occurrences * (static_cast<double>(replacement.size()) - static_cast<double>(old.size())));
  std::string out;
  size_t start = 0;
  for (size_t at; (at = text.find(old, start)) != std::string::npos; start = at + old.size()) {
    out.append(text, start, at - start);
    out += replacement;
  }
  out.append(text, start);
  return make_string(std::move(out));
}

Value trim(Args& a) {
  const std::string& text = a.string(0);
  size_t start = 0, end = text.size();
  while (start < end && is_space(text[start])) ++start;
  while (end > start && is_space(text[end - 1])) --end;
  admit_string(a, static_cast<double>(end - start));
  return make_string(text.substr(start, end - start));
}

// (name :k), (name 'sym), (name "s"): the name as a string, without the `:`.
Value name_of(Args& a) {
  if (a[0].is(Type::Keyword) || a[0].is(Type::Symbol)) return make_string(a[0].as<Symbol>()->name);
  if (a[0].is(Type::String)) return a[0];
  a.type_error(0, "a keyword, a symbol or a string");
}

// A name for `symbol` or `keyword`: not empty, and nothing the reader would split it at.
const std::string& checked_name(const Args& a) {
  const std::string& name = a.string(0);
  bool ok = !name.empty();
  for (char c : name) ok = ok && !is_space(c) && c != '(' && c != ')' && c != '[' && c != ']' && c != '"';
  if (!ok) a.type_error(0, "a non-empty string without spaces or brackets");
  return name;
}

Value to_symbol(Args& a) { return make_symbol(checked_name(a)); }

Value to_keyword(Args& a) {
  std::string_view name = checked_name(a);
  if (name.starts_with(':')) name.remove_prefix(1);
  if (name.empty() || name.find(':') != std::string_view::npos) a.type_error(0, "a keyword name");
  return make_keyword(name);
}

// (parse-number "12"), (parse-number "-1.5e3"): the number the reader would read.
Value parse_number(Args& a) {
  const std::string& text = a.string(0);
  auto junk = [&] {
    fail("E-EVAL-004", a.span(0), fmt::format("`parse-number` cannot read {} as a number", printed_in_message(a[0])),
         "numbers are written as the reader reads them: 12, -3, 1.5, 3e-4");
  };
  std::string_view body = text;
  if (body.starts_with('+')) body.remove_prefix(1);
  size_t digit = body.starts_with('-') ? 1 : 0;
  if (digit < body.size() && body[digit] == '.') ++digit;
  if (digit >= body.size() || !std::isdigit(static_cast<unsigned char>(body[digit]))) junk();
  const char* first = body.data();
  const char* last = body.data() + body.size();
  if (body.find_first_of(".eE") == std::string_view::npos) {
    int64_t value = 0;
    auto [ptr, ec] = std::from_chars(first, last, value);
    if (ec == std::errc::result_out_of_range) {
      fail("E-EVAL-009", a.span(0), fmt::format("the integer {} does not fit in 64 bits", printed_in_message(a[0])),
           "integers are 64-bit; parse it as a float by writing it with a `.`");
    }
    if (ec != std::errc() || ptr != last) junk();
    return Value::integer(value);
  }
  double value = 0;
  auto [ptr, ec] = std::from_chars(first, last, value, std::chars_format::general);
  if (ec != std::errc() || ptr != last) junk();
  return Value::number(value);
}

// (gensym ["prefix"]): a fresh symbol that is never interned, so no name read from source,
// and no other gensym, is the same symbol, whatever it prints as.
Value gensym(Args& a) {
  static std::atomic<uint64_t> counter = 0;
  std::string prefix = a.size() > 0 ? a.string(0) : "g";
  return Value(new Symbol(Type::Symbol, fmt::format("{}__{}", prefix, ++counter)));
}

Value is_gensym(Args& a) {
  const Symbol* symbol = as_symbol(a[0]);
  return Value::boolean(symbol && intern(symbol->name) != symbol);
}

}  // namespace

void install_string_builtins(Interpreter& in) {
  install_rows(in, "Strings, symbols and keywords",
               {
                   {"str", concat_display, "(&rest values)",
                    "The values as `print` shows them, joined into one string; a tensor shows its elements.",
                    "(str \"layer-\" 3 :k)\n;; => \"layer-3:k\""},
                   {"format", format_string, "(pattern &rest values)",
                    "pattern with each {} replaced by the next value; {:.3f} and other fmt specs format numbers.",
                    "(format \"{} of {} is {:.2f}\" 1 3 (/ 1.0 3))\n;; => \"1 of 3 is 0.33\""},
                   {"string-bytes", string_bytes, "(s)", "The UTF-8 bytes of a string, as integers.",
                    "(string-bytes \"hé\")\n;; => (104 195 169)"},
                   {"bytes-string", bytes_string, "(bytes)",
                    "The string of a sequence of byte values; invalid UTF-8 becomes U+FFFD.",
                    "(bytes-string (list 104 105))\n;; => \"hi\""},
                   {"string-length", string_length, "(s)", "The characters (code points) of a string.",
                    "(string-length \"héllo\")\n;; => 5"},
                   {"substring", substring, "(s start &optional end)", "Characters start to end-1.",
                    "(substring \"hello\" 1 3)\n;; => \"el\""},
                   {"split", split_string, "(s &optional sep)",
                    "The pieces between occurrences of sep; without it, the words; with \"\", the characters.",
                    "(split \"a,b,,c\" \",\")\n;; => (\"a\" \"b\" \"\" \"c\")"},
                   {"join", join_strings, "(seq &optional sep)", "The items as `str` shows them, with sep between.",
                    "(join [1 2 3] \", \")\n;; => \"1, 2, 3\""},
                   {"upcase", [](Args& a) { return change_case(a, std::toupper); }, "(s)",
                    "The string in capitals (ASCII letters only).", "(upcase \"relu\")\n;; => \"RELU\""},
                   {"downcase", [](Args& a) { return change_case(a, std::tolower); }, "(s)",
                    "The string in small letters (ASCII letters only).", "(downcase \"ReLU\")\n;; => \"relu\""},
                   {"starts-with?", starts_with, "(s prefix)", "Whether s begins with prefix.",
                    "(starts-with? \"layer-3\" \"layer\")\n;; => true"},
                   {"ends-with?", ends_with, "(s suffix)", "Whether s ends with suffix.",
                    "(ends-with? \"run.sx\" \".sx\")\n;; => true"},
                   {"replace", replace_all, "(s old new)", "s with every occurrence of old replaced by new.",
                    "(replace \"a-b-c\" \"-\" \".\")\n;; => \"a.b.c\""},
                   {"trim", trim, "(s)", "s without whitespace at either end.", "(trim \"  x \")\n;; => \"x\""},
                   {"name", name_of, "(x)", "The name of a keyword or symbol as a string, without the colon.",
                    "(name :dtype)\n;; => \"dtype\""},
                   {"symbol", to_symbol, "(s)", "The symbol named s.", "(symbol \"relu\")\n;; => relu"},
                   {"keyword", to_keyword, "(s)", "The keyword named s (a leading colon is allowed).",
                    "(keyword \"f32\")\n;; => :f32"},
                   {"parse-number", parse_number, "(s)", "The number the reader would read from s.",
                    "(parse-number \"-1.5e3\")\n;; => -1500.0"},
                   {"gensym", gensym, "(&optional prefix)",
                    "A fresh symbol, never equal to any other: for names a macro's template binds.",
                    "(symbol? (gensym \"tmp\"))\n;; => true"},
                   {"gensym?", is_gensym, "(x)", "Whether x is a symbol made by `gensym`.",
                    "(list (gensym? (gensym)) (gensym? 'x))\n;; => (true false)"},
               });
}

}  // namespace sx::lang
