// Value helpers: interning, list construction, equality.
#include "lang/value.h"

#include <unordered_map>

namespace sx::lang {

std::string_view type_name(Type type) {
  switch (type) {
    case Type::Nil: return "nil";
    case Type::Bool: return "a boolean";
    case Type::Int: return "an integer";
    case Type::Float: return "a float";
    case Type::String: return "a string";
    case Type::Symbol: return "a symbol";
    case Type::Keyword: return "a keyword";
    case Type::Cons: return "a list";
    case Type::Vector: return "a vector";
    case Type::Function: return "a function";
    case Type::Macro: return "a macro";
    case Type::Opaque: return "an opaque value";
    case Type::Env: return "an environment";
  }
  return "a value";
}

namespace {

Symbol* intern_in(std::unordered_map<std::string, Symbol*>& table, Type type, std::string_view name) {
  auto it = table.find(std::string(name));
  if (it != table.end()) return it->second;
  // Interned symbols live for the whole process: the extra reference keeps them alive.
  auto* symbol = new Symbol(type, std::string(name));
  symbol->retain();
  table.emplace(symbol->name, symbol);
  return symbol;
}

}  // namespace

Symbol* intern(std::string_view name) {
  static auto* table = new std::unordered_map<std::string, Symbol*>();
  return intern_in(*table, Type::Symbol, name);
}

Symbol* intern_keyword(std::string_view name) {
  static auto* table = new std::unordered_map<std::string, Symbol*>();
  return intern_in(*table, Type::Keyword, name);
}

Cons::~Cons() {
  // Unlink the tail one cell at a time while we hold its only reference.
  Value rest = std::move(cdr);
  while (rest.is(Type::Cons) && rest.object()->refs() == 1) {
    Value after = std::move(rest.as<Cons>()->cdr);
    rest = std::move(after);
  }
}

Value make_string(std::string text) { return Value(new String(std::move(text))); }
Value make_symbol(std::string_view name) { return Value(intern(name)); }
Value make_keyword(std::string_view name) { return Value(intern_keyword(name)); }
Value make_vector(std::vector<Value> items) { return Value(new Vector(std::move(items))); }
Value cons(Value car, Value cdr, Span car_span) { return Value(new Cons(std::move(car), std::move(cdr), car_span)); }

Value list(std::vector<Value> items) {
  Value result;
  for (auto it = items.rbegin(); it != items.rend(); ++it) result = cons(std::move(*it), std::move(result));
  return result;
}

Value list_with_spans(std::vector<Value> items, const std::vector<Span>& spans) {
  Value result;
  for (size_t i = items.size(); i-- > 0;) {
    result = cons(std::move(items[i]), std::move(result), i < spans.size() ? spans[i] : Span{});
  }
  return result;
}

size_t list_length(const Value& list) {
  size_t n = 0;
  for (Cons* c = as_cons(list); c; c = next(c)) ++n;
  return n;
}

std::vector<Value> list_items(const Value& list) {
  std::vector<Value> items;
  for (Cons* c = as_cons(list); c; c = next(c)) items.push_back(c->car);
  return items;
}

bool equal(const Value& a, const Value& b) {
  if (a.type() != b.type()) return false;
  switch (a.type()) {
    case Type::Nil: return true;
    case Type::Bool: return a.as_bool() == b.as_bool();
    case Type::Int: return a.as_int() == b.as_int();
    case Type::Float: return a.as_float() == b.as_float();
    case Type::String: return string_of(a) == string_of(b);
    case Type::Cons: {
      Cons* x = as_cons(a);
      Cons* y = as_cons(b);
      for (; x && y; x = next(x), y = next(y)) {
        if (!equal(x->car, y->car)) return false;
      }
      return !x && !y;
    }
    case Type::Vector: {
      const auto& x = a.as<Vector>()->items;
      const auto& y = b.as<Vector>()->items;
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i) {
        if (!equal(x[i], y[i])) return false;
      }
      return true;
    }
    case Type::Opaque: return a.as<Opaque>()->equal(*b.as<Opaque>());
    default: return a.object() == b.object();
  }
}

}  // namespace sx::lang
