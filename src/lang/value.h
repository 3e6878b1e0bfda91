// Lisp values: immediates (nil, booleans, integers, floats) inline, everything else a
// reference-counted heap object. The evaluator is single-threaded, so counts are plain.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lang/source.h"

namespace sx::lang {

enum class Type : uint8_t {
  Nil,
  Bool,
  Int,
  Float,
  String,
  Symbol,
  Keyword,
  Cons,
  Vector,
  Function,  // a builtin or a closure
  Macro,
  Opaque,  // a value defined outside the language core (a tensor, a model)
  Env,     // never seen by user code
};

// The name users see in messages: "an integer", "a list", ...
std::string_view type_name(Type type);

class Object {
 public:
  explicit Object(Type type) : type_(type) {}
  Object(const Object&) = delete;
  Object& operator=(const Object&) = delete;
  virtual ~Object() = default;

  Type type() const { return type_; }
  void retain() const { ++refs_; }
  void release() const {
    if (--refs_ == 0) delete this;
  }
  uint32_t refs() const { return refs_; }

 private:
  Type type_;
  mutable uint32_t refs_ = 0;
};

// An intrusive strong reference to an Object subclass.
template <class T>
class Ref {
 public:
  Ref() = default;
  Ref(T* p) : p_(p) {  // NOLINT: implicit from a fresh object is the point
    if (p_) p_->retain();
  }
  Ref(const Ref& o) : Ref(o.p_) {}
  Ref(Ref&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  Ref& operator=(Ref o) noexcept {
    std::swap(p_, o.p_);
    return *this;
  }
  ~Ref() {
    if (p_) p_->release();
  }
  T* get() const { return p_; }
  T* operator->() const { return p_; }
  T& operator*() const { return *p_; }
  explicit operator bool() const { return p_ != nullptr; }

 private:
  T* p_ = nullptr;
};

class Value {
 public:
  Value() { u_.object = nullptr; }
  Value(const Value& o) : type_(o.type_), u_(o.u_) {
    if (is_object()) u_.object->retain();
  }
  Value(Value&& o) noexcept : type_(o.type_), u_(o.u_) { o.type_ = Type::Nil; }
  Value& operator=(Value o) noexcept {
    std::swap(type_, o.type_);
    std::swap(u_, o.u_);
    return *this;
  }
  ~Value() {
    if (is_object()) u_.object->release();
  }
  explicit Value(const Object* object) : type_(object ? object->type() : Type::Nil) {
    u_.object = object;
    if (object) object->retain();
  }

  static Value nil() { return Value(); }
  static Value boolean(bool b) {
    Value v;
    v.type_ = Type::Bool;
    v.u_.boolean = b;
    return v;
  }
  static Value integer(int64_t i) {
    Value v;
    v.type_ = Type::Int;
    v.u_.integer = i;
    return v;
  }
  static Value number(double d) {
    Value v;
    v.type_ = Type::Float;
    v.u_.number = d;
    return v;
  }

  Type type() const { return type_; }
  bool is(Type t) const { return type_ == t; }
  bool is_nil() const { return type_ == Type::Nil; }
  bool is_number() const { return type_ == Type::Int || type_ == Type::Float; }
  // A list is nil or a cons.
  bool is_list() const { return type_ == Type::Nil || type_ == Type::Cons; }
  bool is_object() const { return type_ > Type::Float; }
  // false and nil are false; everything else is true.
  bool truthy() const { return !(type_ == Type::Nil || (type_ == Type::Bool && !u_.boolean)); }

  bool as_bool() const { return u_.boolean; }
  int64_t as_int() const { return u_.integer; }
  double as_float() const { return u_.number; }
  // An integer or a float, as a double.
  double as_double() const { return type_ == Type::Int ? static_cast<double>(u_.integer) : u_.number; }
  const Object* object() const { return is_object() ? u_.object : nullptr; }
  template <class T>
  T* as() const {
    return static_cast<T*>(const_cast<Object*>(u_.object));
  }

 private:
  Type type_ = Type::Nil;
  union {
    bool boolean;
    int64_t integer;
    double number;
    const Object* object;
  } u_;
};

class String final : public Object {
 public:
  explicit String(std::string text) : Object(Type::String), text(std::move(text)) {}
  const std::string text;
};

// Symbols and keywords are interned: one object per name, compared by address, never freed.
class Symbol final : public Object {
 public:
  Symbol(Type type, std::string name) : Object(type), name(std::move(name)) {}
  const std::string name;  // without the leading ':' for keywords
};

Symbol* intern(std::string_view name);
Symbol* intern_keyword(std::string_view name);  // name without ':'

// A list cell. `car_span` is where the element came from, so that every form keeps its span.
class Cons final : public Object {
 public:
  Cons(Value car, Value cdr, Span car_span = {})
      : Object(Type::Cons), car(std::move(car)), cdr(std::move(cdr)), car_span(car_span) {}
  ~Cons() override;  // iterative, so a million-element list does not overflow the stack
  Value car;
  Value cdr;
  Span car_span;
};

class Vector final : public Object {
 public:
  explicit Vector(std::vector<Value> items, std::vector<Span> spans = {})
      : Object(Type::Vector), items(std::move(items)), spans(std::move(spans)) {}
  std::vector<Value> items;
  std::vector<Span> spans;  // empty, or one span per item when read from source
  Span span_of(size_t i) const { return i < spans.size() ? spans[i] : Span{}; }
};

// A value the language core does not know the inside of (tensors, models, ...).
class Opaque : public Object {
 public:
  Opaque() : Object(Type::Opaque) {}
  virtual std::string type_label() const = 0;  // "a tensor"
  virtual std::string print() const = 0;
  virtual bool equal(const Opaque& other) const { return this == &other; }
  // What calling it calls (a model calls its function); nullptr when it is not callable.
  virtual const Value* callee() const { return nullptr; }
};

// --- Construction and inspection helpers -------------------------------------------------

Value make_string(std::string text);
Value make_symbol(std::string_view name);
Value make_keyword(std::string_view name);
Value make_vector(std::vector<Value> items);
Value cons(Value car, Value cdr, Span car_span = {});
Value list(std::vector<Value> items);
Value list_with_spans(std::vector<Value> items, const std::vector<Span>& spans);

inline Cons* as_cons(const Value& v) { return v.is(Type::Cons) ? v.as<Cons>() : nullptr; }
inline Cons* next(const Cons* c) { return as_cons(c->cdr); }
inline const Symbol* as_symbol(const Value& v) { return v.is(Type::Symbol) ? v.as<Symbol>() : nullptr; }
inline const std::string& string_of(const Value& v) { return v.as<String>()->text; }
inline bool is_symbol(const Value& v, const Symbol* s) { return v.is(Type::Symbol) && v.object() == s; }

size_t list_length(const Value& list);
std::vector<Value> list_items(const Value& list);

// Structural equality (`equal`): same type and same contents; (equal 1 1.0) is false, as in CL.
bool equal(const Value& a, const Value& b);

}  // namespace sx::lang
