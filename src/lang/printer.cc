// Printing values.
#include "lang/printer.h"

#include <fmt/format.h>

#include <cmath>

#include "lang/diagnostic.h"
#include "lang/interp.h"

namespace sx::lang {
namespace {

// Deeper structures print their inside as `...`, so printing never exhausts the stack.
constexpr int kMaxPrintDepth = 1000;

void print_string_literal(const std::string& text, std::string& out) {
  out += '"';
  for (unsigned char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20 || c == 0x7F) out += fmt::format("\\u{{{:X}}}", c);
        else out += static_cast<char>(c);
    }
  }
  out += '"';
}

void print_to(const Value& v, bool readable, int depth, std::string& out) {
  if (depth > kMaxPrintDepth) {
    out += "...";
    return;
  }
  switch (v.type()) {
    case Type::Nil: out += "nil"; return;
    case Type::Bool: out += v.as_bool() ? "true" : "false"; return;
    case Type::Int: out += std::to_string(v.as_int()); return;
    case Type::Float: out += format_float(v.as_float()); return;
    case Type::String:
      if (readable) print_string_literal(string_of(v), out);
      else out += string_of(v);
      return;
    case Type::Symbol: out += v.as<Symbol>()->name; return;
    case Type::Keyword: out += ':' + v.as<Symbol>()->name; return;
    case Type::Cons: {
      out += '(';
      for (Cons* c = as_cons(v); c; c = next(c)) {
        print_to(c->car, readable, depth + 1, out);
        if (!c->cdr.is_nil()) out += ' ';
      }
      out += ')';
      return;
    }
    case Type::Vector: {
      out += '[';
      const auto& items = v.as<Vector>()->items;
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += ' ';
        print_to(items[i], readable, depth + 1, out);
      }
      out += ']';
      return;
    }
    case Type::Function: out += fmt::format("#<function {}>", v.as<Function>()->name); return;
    case Type::Macro: out += fmt::format("#<macro {}>", v.as<Function>()->name); return;
    case Type::Opaque: out += v.as<Opaque>()->print(); return;
    case Type::Env: out += "#<environment>"; return;
  }
}

}  // namespace

std::string format_float(double value) {
  // Scheme's spellings, which the reader reads back as floats (`inf` and `nan` are names, so
  // `-inf` would read as a symbol). Every NaN prints alike: its sign and payload are lost.
  if (std::isnan(value)) return "+nan.0";
  if (std::isinf(value)) return value > 0 ? "+inf.0" : "-inf.0";
  std::string text = fmt::format("{}", value);
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

std::string print(const Value& value) {
  std::string out;
  print_to(value, true, 0, out);
  return out;
}

std::string display(const Value& value) {
  std::string out;
  print_to(value, false, 0, out);
  return out;
}

std::string printed_in_message(const Value& value) { return shown_in_message(print(value)); }

}  // namespace sx::lang
