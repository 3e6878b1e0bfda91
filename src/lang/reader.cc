// The reader. Recursive descent with a depth limit; every size limit is checked before
// the work it bounds, so hostile input fails fast with an E-READ code.
#include "lang/reader.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>

namespace sx::lang {
namespace {

bool is_delimiter(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '(' || c == ')' || c == '[' || c == ']' ||
         c == '"' || c == ';' || c == '\'' || c == '`' || c == ',';
}

// Characters that may appear in a symbol; any non-ASCII code point may too.
bool is_symbol_char(char c) {
  auto u = static_cast<unsigned char>(c);
  if (u >= 0x80) return true;
  if (std::isalnum(u)) return true;
  return std::strchr("!$%&*+-./<=>?@^_~|:", c) != nullptr && c != '\0';
}

// Length of the valid UTF-8 sequence at `s[i]`, or 0 when it is invalid.
size_t utf8_sequence_length(std::string_view s, size_t i) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  unsigned char c = b(0);
  if (c < 0x80) return 1;
  size_t n;
  uint32_t cp;
  if ((c & 0xE0) == 0xC0) n = 2, cp = c & 0x1F;
  else if ((c & 0xF0) == 0xE0) n = 3, cp = c & 0x0F;
  else if ((c & 0xF8) == 0xF0) n = 4, cp = c & 0x07;
  else return 0;
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((b(k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(k) & 0x3F);
  }
  // Overlong forms, surrogates and values past U+10FFFF are invalid.
  static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) return 0;
  return n;
}

class Reader {
 public:
  Reader(const SourceFile& file, const ReaderLimits& limits)
      : file_(file), text_(file.text()), limits_(limits), pos_(file.start()) {}

  std::vector<Form> read_all() {
    check_limits();
    check_utf8();
    std::vector<Form> forms;
    while (skip_space(), pos_ < text_.size()) forms.push_back(read_form());
    return forms;
  }

 private:
  Span span(size_t start, size_t end) const {
    return Span{&file_, static_cast<uint32_t>(start), static_cast<uint32_t>(end - start)};
  }

  void check_limits() {
    if (text_.size() > limits_.max_file_bytes) {
      fail("E-READ-009", {},
           fmt::format("{} is {} bytes; source files are limited to {} bytes", shown_in_message(file_.path()),
                       text_.size(), limits_.max_file_bytes));
    }
    size_t line_start = file_.start();
    for (size_t i = line_start; i <= text_.size(); ++i) {
      if (i == text_.size() || text_[i] == '\n') {
        if (i - line_start > limits_.max_line_bytes) {
          fail("E-READ-009", span(line_start, line_start + 1),
               fmt::format("line {} is {} bytes long; lines are limited to {} bytes", file_.line_of(line_start),
                           i - line_start, limits_.max_line_bytes));
        }
        line_start = i + 1;
      }
    }
  }

  void check_utf8() {
    for (size_t i = 0; i < text_.size();) {
      size_t n = utf8_sequence_length(text_, i);
      if (n == 0) {
        fail("E-READ-008", span(i, i + 1),
             fmt::format("invalid UTF-8 in {}: byte 0x{:02X} at offset {}", shown_in_message(file_.path()),
                         static_cast<unsigned char>(text_[i]), i));
      }
      i += n;
    }
  }

  void skip_space() {
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c == ';') {
        while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
      } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f') {
        ++pos_;
      } else {
        return;
      }
    }
  }

  Form read_form() {
    size_t start = pos_;
    char c = text_[pos_];
    switch (c) {
      case '(': return read_sequence(')');
      case '[': return read_sequence(']');
      case ')':
      case ']':
        fail("E-READ-003", span(pos_, pos_ + 1), fmt::format("unexpected `{}` with nothing open", c),
             "remove it, or add the opener it was meant to close");
      case '"': return read_string();
      case '\'': return read_prefixed("quote", 1);
      case '`': return read_prefixed("quasiquote", 1);
      case ',':
        if (pos_ + 1 < text_.size() && text_[pos_ + 1] == '@') return read_prefixed("unquote-splicing", 2);
        return read_prefixed("unquote", 1);
      default: break;
    }
    while (pos_ < text_.size() && !is_delimiter(text_[pos_])) ++pos_;
    return read_atom(start, pos_);
  }

  Form read_prefixed(const char* name, size_t width) {
    size_t start = pos_;
    pos_ += width;
    skip_space();
    if (pos_ >= text_.size() || text_[pos_] == ')' || text_[pos_] == ']') {
      fail("E-READ-011", span(start, start + width),
           fmt::format("`{}` must be followed by a form", text_.substr(start, width)));
    }
    if (++depth_ > limits_.max_depth) too_deep(start);
    Form inner = read_form();
    --depth_;
    Span whole = span(start, pos_);
    return Form{list_with_spans({make_symbol(name), inner.value}, {span(start, start + width), inner.span}), whole};
  }

  [[noreturn]] void too_deep(size_t at) {
    fail("E-READ-007", span(at, at + 1), fmt::format("forms nest more than {} levels deep", limits_.max_depth));
  }

  Form read_sequence(char closer) {
    size_t start = pos_++;
    if (++depth_ > limits_.max_depth) too_deep(start);
    std::vector<Value> items;
    std::vector<Span> spans;
    for (;;) {
      skip_space();
      if (pos_ >= text_.size()) {
        fail("E-READ-001", span(start, start + 1), fmt::format("this `{}` is never closed", text_[start]),
             fmt::format("add a `{}` where the {} ends", closer, closer == ')' ? "list" : "vector"));
      }
      char c = text_[pos_];
      if (c == ')' || c == ']') {
        if (c != closer) {
          Diagnostic d;
          d.code = "E-READ-003";
          d.span = span(pos_, pos_ + 1);
          d.message = fmt::format("`{}` closes the `{}` at {}", c, text_[start], span(start, start + 1).location());
          d.helps.push_back(fmt::format("close it with `{}`", closer));
          throw Error(std::move(d));
        }
        ++pos_;
        break;
      }
      Form item = read_form();
      items.push_back(std::move(item.value));
      spans.push_back(item.span);
    }
    --depth_;
    Span whole = span(start, pos_);
    if (closer == ']') return Form{Value(new Vector(std::move(items), std::move(spans))), whole};
    return Form{list_with_spans(std::move(items), spans), whole};
  }

  Form read_string() {
    size_t start = pos_++;
    std::string out;
    while (pos_ < text_.size() && text_[pos_] != '"') {
      char c = text_[pos_];
      if (c != '\\') {
        out += c;
        ++pos_;
        continue;
      }
      size_t escape = pos_;
      if (pos_ + 1 >= text_.size()) break;
      char e = text_[pos_ + 1];
      pos_ += 2;
      switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case '0': out += '\0'; break;
        case '\\': out += '\\'; break;
        case '"': out += '"'; break;
        case 'u': read_unicode_escape(escape, out); break;
        default: {
          size_t len = utf8_sequence_length(text_, escape + 1);
          fail("E-READ-005", span(escape, escape + 1 + std::max<size_t>(len, 1)),
               fmt::format("unknown escape `\\{}` in a string", text_.substr(escape + 1, std::max<size_t>(len, 1))),
               "the escapes are \\n \\t \\r \\0 \\\\ \\\" and \\u{hex}; write \\\\ for a backslash");
        }
      }
    }
    if (pos_ >= text_.size()) {
      fail("E-READ-002", span(start, start + 1), "this string is never closed", "add the closing `\"`");
    }
    ++pos_;
    return Form{make_string(std::move(out)), span(start, pos_)};
  }

  void read_unicode_escape(size_t escape, std::string& out) {
    auto bad = [&](size_t end) {
      fail("E-READ-005", span(escape, end), "a `\\u` escape is written `\\u{hex}`, a code point up to 10FFFF");
    };
    if (pos_ >= text_.size() || text_[pos_] != '{') bad(pos_);
    size_t digits = ++pos_;
    while (pos_ < text_.size() && std::isxdigit(static_cast<unsigned char>(text_[pos_])) && pos_ - digits < 6) ++pos_;
    if (pos_ == digits || pos_ >= text_.size() || text_[pos_] != '}') bad(std::min(pos_ + 1, text_.size()));
    uint32_t cp = 0;
    std::from_chars(text_.data() + digits, text_.data() + pos_, cp, 16);
    ++pos_;
    if (cp >= 0xD800 && cp <= 0xDFFF) {
      fail("E-READ-005", span(escape, pos_),
           fmt::format("`{}` is a surrogate, not a character: D800 to DFFF are reserved for UTF-16 pairs",
                       text_.substr(escape, pos_ - escape)),
           "a character past FFFF is one escape of its code point, as in \\u{1F600}, not two UTF-16 surrogates");
    }
    if (cp > 0x10FFFF) bad(pos_);
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  static bool looks_numeric(std::string_view t) {
    size_t i = (t[0] == '+' || t[0] == '-') ? 1 : 0;
    if (i < t.size() && std::isdigit(static_cast<unsigned char>(t[i]))) return true;
    return i + 1 < t.size() && t[i] == '.' && std::isdigit(static_cast<unsigned char>(t[i + 1]));
  }

  Form read_atom(size_t start, size_t end) {
    std::string_view token = text_.substr(start, end - start);
    Span where = span(start, end);
    for (size_t i = 0; i < token.size(); ++i) {
      if (!is_symbol_char(token[i])) {
        size_t len = std::max<size_t>(utf8_sequence_length(token, i), 1);
        fail("E-READ-006", span(start + i, start + i + len),
             fmt::format("unexpected character `{}`", printable(token.substr(i, len))));
      }
    }
    if (looks_numeric(token)) return Form{read_number(token, where), where};
    if (auto special = non_finite(token)) return Form{Value::number(*special), where};
    if (token[0] == ':') {
      if (token.size() == 1 || token.substr(1).find(':') != std::string_view::npos) {
        fail("E-READ-006", where, fmt::format("`{}` is not a keyword", shown_in_message(token)),
             "a keyword is `:` followed by a name, as in `:dtype`");
      }
      return Form{make_keyword(token.substr(1)), where};
    }
    if (token == "nil") return Form{Value::nil(), where};
    if (token == "true") return Form{Value::boolean(true), where};
    if (token == "false") return Form{Value::boolean(false), where};
    return Form{make_symbol(token), where};
  }

  static std::string printable(std::string_view c) {
    if (c.size() == 1 && static_cast<unsigned char>(c[0]) < 0x20) {
      return fmt::format("\\u{{{:X}}}", static_cast<unsigned>(c[0]));
    }
    return std::string(c);
  }

  // The infinities and NaN as the printer writes them (Scheme's spellings).
  static std::optional<double> non_finite(std::string_view token) {
    if (token == "+inf.0") return std::numeric_limits<double>::infinity();
    if (token == "-inf.0") return -std::numeric_limits<double>::infinity();
    if (token == "+nan.0") return std::numeric_limits<double>::quiet_NaN();
    return std::nullopt;
  }

  static Value read_number(std::string_view token, Span where) {
    std::string_view body = token[0] == '+' ? token.substr(1) : token;
    bool is_float = body.find_first_of(".eE") != std::string_view::npos;
    const char* first = body.data();
    const char* last = body.data() + body.size();
    if (!is_float) {
      int64_t value = 0;
      auto [ptr, ec] = std::from_chars(first, last, value);
      if (ec == std::errc::result_out_of_range) {
        fail("E-READ-004", where, fmt::format("integer `{}` does not fit in 64 bits", shown_in_message(token)),
             "write it as a float, e.g. `1e20`");
      }
      if (ec != std::errc() || ptr != last)
        fail("E-READ-004", where, fmt::format("`{}` is not a number", shown_in_message(token)));
      return Value::integer(value);
    }
    double value = 0;
    auto [ptr, ec] = std::from_chars(first, last, value, std::chars_format::general);
    if (ec == std::errc::result_out_of_range) {
      fail("E-READ-004", where, fmt::format("float `{}` is out of range", shown_in_message(token)));
    }
    if (ec != std::errc() || ptr != last)
      fail("E-READ-004", where, fmt::format("`{}` is not a number", shown_in_message(token)));
    return Value::number(value);
  }

  const SourceFile& file_;
  std::string_view text_;
  const ReaderLimits& limits_;
  size_t pos_;
  size_t depth_ = 0;
};

}  // namespace

std::vector<Form> read_forms(const SourceFile& file, const ReaderLimits& limits) {
  return Reader(file, limits).read_all();
}

const SourceFile& load_source_file(SourceMap& sources, const std::string& path, const ReaderLimits& limits) {
  const std::string shown = shown_in_message(path);
  struct stat info {};
  if (stat(path.c_str(), &info) != 0) {
    fail("E-READ-010", {}, fmt::format("cannot read {}: {}", shown, std::strerror(errno)));
  }
  if (S_ISDIR(info.st_mode)) fail("E-READ-010", {}, fmt::format("cannot read {}: it is a directory", shown));
  if (!S_ISREG(info.st_mode)) fail("E-READ-010", {}, fmt::format("cannot read {}: it is not a regular file", shown));
  if (static_cast<size_t>(info.st_size) > limits.max_file_bytes) {
    fail("E-READ-009", {},
         fmt::format("{} is {} bytes; source files are limited to {} bytes", shown, static_cast<size_t>(info.st_size),
                     limits.max_file_bytes));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("E-READ-010", {}, fmt::format("cannot read {}: {}", shown, std::strerror(errno)));
  std::ostringstream text;
  text << in.rdbuf();
  return sources.add(path, std::move(text).str());
}

bool is_incomplete_input(const Error& error, std::string_view text) {
  const Diagnostic& d = error.diagnostic();
  if (d.code == "E-READ-001" || d.code == "E-READ-002") return true;
  if (d.code != "E-READ-011") return false;
  // A quote at the very end waits for its form; one before a closer is just wrong.
  std::string_view rest = text.substr(std::min<size_t>(d.span.offset + d.span.length, text.size()));
  return rest.find_first_not_of(" \t\r\n") == std::string_view::npos;
}

}  // namespace sx::lang
