// Rendering diagnostics as text.
#include "lang/diagnostic.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

namespace sx::lang {
namespace {

// Lines longer than this are shown as a window around the span.
constexpr size_t kMaxShownLine = 160;

struct Style {
  bool on;
  std::string paint(std::string_view code, std::string_view text) const {
    if (!on) return std::string(text);
    return fmt::format("\x1b[{}m{}\x1b[0m", code, text);
  }
};

bool is_continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// Moves a byte index back to the start of its code point (at most three bytes: text
// that is not valid UTF-8 has no code points to find).
size_t to_char_start(std::string_view s, size_t i) {
  for (int steps = 0; steps < 3 && i > 0 && i < s.size() && is_continuation(s[i]); ++steps) --i;
  return i;
}

// The padding under `text` up to its end: tabs stay tabs, every other code point one space.
std::string padding_for(std::string_view text) {
  std::string pad;
  for (char c : text) {
    if (c == '\t') pad += '\t';
    else if (!is_continuation(c)) pad += ' ';
  }
  return pad;
}

size_t code_points(std::string_view text) {
  return static_cast<size_t>(std::count_if(text.begin(), text.end(), [](char c) { return !is_continuation(c); }));
}

// Bytes that are not valid UTF-8, and control characters but tab, show as U+FFFD, so a
// diagnostic never writes raw bytes to the terminal; `start` and `end` follow the change.
std::string printable_line(std::string_view text, size_t& start, size_t& end) {
  static constexpr std::string_view kReplacement = "\xEF\xBF\xBD";
  std::string out;
  size_t new_start = start, new_end = end;
  for (size_t i = 0; i < text.size();) {
    auto c = static_cast<unsigned char>(text[i]);
    size_t n = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
    bool valid = n > 0 && i + n <= text.size();
    for (size_t k = 1; valid && k < n; ++k) valid = is_continuation(text[i + k]);
    bool control = n == 1 && (c < 0x20 || c == 0x7F) && c != '\t';
    if (valid && !control) {
      out.append(text.substr(i, n));
      i += n;
      continue;
    }
    // One byte becomes the three of U+FFFD: later offsets move by two.
    if (i < start) new_start += kReplacement.size() - 1;
    if (i < end) new_end += kReplacement.size() - 1;
    out.append(kReplacement);
    ++i;
  }
  start = new_start;
  end = new_end;
  return out;
}

void render_source(const Diagnostic& d, const Style& style, std::string_view accent, std::string& out) {
  const SourceFile& file = *d.span.file;
  uint32_t line = file.line_of(d.span.offset);
  std::string number = std::to_string(line);
  std::string gutter(number.size() + 1, ' ');
  out += fmt::format("{}{} {}\n", gutter, style.paint("1;34", "-->"), d.span.location());
  out += fmt::format("{}{}\n", gutter, style.paint("1;34", " |"));

  std::string_view text = file.line_text(line);
  // A span before the first line's start (into a byte-order mark) points at that start.
  size_t start = d.span.offset - std::min(d.span.offset, file.line_start(line));
  size_t end = std::min<size_t>(start + std::max<uint32_t>(d.span.length, 1), text.size());
  if (end <= start) end = start;  // a span at the end of a line underlines one column past it

  std::string prefix, suffix;
  if (text.size() > kMaxShownLine) {
    size_t from = start > 40 ? to_char_start(text, start - 40) : 0;
    // The window shows at most kMaxShownLine bytes, however long the span: a span that
    // runs past it (a name of a million characters) is underlined as far as it is shown.
    size_t to = std::min(text.size(), from + kMaxShownLine);
    to = to < text.size() ? to_char_start(text, to) : to;
    if (from > 0) prefix = "...";
    if (to < text.size()) suffix = "...";
    text = text.substr(from, to - from);
    start = std::min(start - from, text.size());
    end = std::max(start, std::min(end - from, text.size()));
  }
  std::string shown = printable_line(text, start, end);
  text = shown;
  size_t width = std::max<size_t>(1, code_points(text.substr(start, end - start)));
  out += fmt::format("{}{} {}{}{}\n", style.paint("1;34", fmt::format("{:>{}}", number, gutter.size())),
                     style.paint("1;34", " |"), prefix, text, suffix);
  std::string marked = std::string(prefix.size(), ' ') + padding_for(text.substr(0, start));
  std::string mark(width, '^');
  if (!d.label.empty()) mark += " " + d.label;
  out += fmt::format("{}{} {}{}\n", gutter, style.paint("1;34", " |"), marked, style.paint(accent, mark));
}

void render_calls(const std::vector<CallFrame>& calls, const std::string& gutter, const Style& style,
                  std::string& out) {
  // Long chains (deep recursion) show their innermost and outermost calls only.
  constexpr size_t kHead = 6, kTail = 3;
  auto note = [&](const CallFrame& frame) {
    out += fmt::format("{}{} in {}, called at {}\n", gutter, style.paint("1;34", " = note:"), frame.function,
                       frame.call.location());
  };
  if (calls.size() <= kHead + kTail + 1) {
    for (const auto& frame : calls) note(frame);
    return;
  }
  for (size_t i = 0; i < kHead; ++i) note(calls[i]);
  out += fmt::format("{}{} ... {} more calls ...\n", gutter, style.paint("1;34", " = note:"),
                     calls.size() - kHead - kTail);
  for (size_t i = calls.size() - kTail; i < calls.size(); ++i) note(calls[i]);
}

}  // namespace

std::string render(const Diagnostic& d, bool color) {
  Style style{color};
  bool error = d.severity == Severity::Error;
  std::string_view accent = error ? "1;31" : "1;33";
  std::string out;
  out += style.paint(accent, fmt::format("{}[{}]", error ? "error" : "warning", d.code));
  out += style.paint("1", fmt::format(": {}", d.message));
  out += '\n';
  std::string gutter = " ";
  // A span past its file's end has no line to show.
  if (d.span.in_text()) {
    render_source(d, style, accent, out);
    gutter = std::string(std::to_string(d.span.file->line_of(d.span.offset)).size() + 1, ' ');
  }
  for (const auto& help : d.helps) out += fmt::format("{}{} {}\n", gutter, style.paint("1;34", " = help:"), help);
  for (const auto& note : d.notes) out += fmt::format("{}{} {}\n", gutter, style.paint("1;34", " = note:"), note);
  render_calls(d.calls, gutter, style, out);
  return out;
}

bool stderr_wants_color() {
  const char* no_color = std::getenv("NO_COLOR");
  return isatty(STDERR_FILENO) && !(no_color && *no_color);
}

void fail(std::string code, Span span, std::string message, std::string help) {
  Diagnostic d;
  d.code = std::move(code);
  d.span = span;
  d.message = std::move(message);
  if (!help.empty()) d.helps.push_back(std::move(help));
  throw Error(std::move(d));
}

}  // namespace sx::lang
