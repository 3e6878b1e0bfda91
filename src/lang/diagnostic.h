// Diagnostics: every user-facing error or warning is a code, a message and a span,
// rendered the way rustc renders its own (source line, caret underline, notes).
#pragma once

#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "graph/shown.h"
#include "lang/source.h"

namespace sx::lang {

enum class Severity { Error, Warning };

// One step of the chain of calls an error happened inside, innermost first.
struct CallFrame {
  std::string function;  // "f", or "the expansion of `m`"
  Span call;             // where it was called
};

struct Diagnostic {
  Severity severity = Severity::Error;
  std::string code;     // "E-READ-001"
  std::string message;  // one line, no trailing period
  Span span;
  std::string label;               // printed after the caret underline
  std::vector<std::string> helps;  // "= help: ..."
  std::vector<std::string> notes;  // "= note: ..."
  std::vector<CallFrame> calls;    // rendered as notes, elided when long
};

// Renders one diagnostic, ending in a newline; `color` adds ANSI colours.
std::string render(const Diagnostic& diagnostic, bool color);

// Whether diagnostics on standard error should be coloured: a terminal and no NO_COLOR.
bool stderr_wants_color();

// The exception that carries a diagnosed error up to whoever reports it.
class Error : public std::exception {
 public:
  explicit Error(Diagnostic diagnostic) : diagnostic_(std::move(diagnostic)) {}
  const char* what() const noexcept override { return diagnostic_.message.c_str(); }
  Diagnostic& diagnostic() { return diagnostic_; }
  const Diagnostic& diagnostic() const { return diagnostic_; }

 private:
  Diagnostic diagnostic_;
};

// User text as a message shows it, at most 80 characters of a long one, with its length
// (graph/shown.h); every diagnostic that quotes the user's input quotes it through this.
using graph::shown_in_message;

// Builds and throws an error; the common case in one line.
[[noreturn]] void fail(std::string code, Span span, std::string message, std::string help = {});

}  // namespace sx::lang
