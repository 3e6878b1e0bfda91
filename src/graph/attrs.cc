// Typed access to node attributes, with errors that name the attribute.
#include "graph/attrs.h"

#include <fmt/format.h>

#include "graph/errors.h"
#include "graph/shape.h"

namespace sx::graph {

Attrs& Attrs::set(std::string name, AttrValue value) {
  values_[std::move(name)] = std::move(value);
  return *this;
}

bool Attrs::has(std::string_view name) const { return values_.find(name) != values_.end(); }

const AttrValue& Attrs::get(std::string_view name) const {
  auto it = values_.find(name);
  if (it == values_.end()) throw ShapeError(fmt::format("attribute '{}' is missing", name));
  return it->second;
}

namespace {

template <class T>
const T& get_as(const AttrValue& value, std::string_view name, std::string_view kind) {
  if (const T* v = std::get_if<T>(&value)) return *v;
  throw ShapeError(fmt::format("attribute '{}' must be {}", name, kind));
}

}  // namespace

int64_t Attrs::get_int(std::string_view name) const { return get_as<int64_t>(get(name), name, "an integer"); }

const std::vector<int64_t>& Attrs::get_ints(std::string_view name) const {
  return get_as<std::vector<int64_t>>(get(name), name, "a list of integers");
}

double Attrs::get_double(std::string_view name) const {
  const AttrValue& value = get(name);
  if (const int64_t* v = std::get_if<int64_t>(&value)) return static_cast<double>(*v);
  return get_as<double>(value, name, "a number");
}

DType Attrs::get_dtype(std::string_view name) const { return get_as<DType>(get(name), name, "a dtype"); }

const std::string& Attrs::get_string(std::string_view name) const {
  return get_as<std::string>(get(name), name, "a string");
}

std::string attrs_str(const Attrs& attrs) {
  std::string out;
  for (const auto& [name, value] : attrs.values()) {
    if (!out.empty()) out += ' ';
    out += name + '=';
    if (auto* i = std::get_if<int64_t>(&value)) out += std::to_string(*i);
    if (auto* l = std::get_if<std::vector<int64_t>>(&value)) out += list_str(*l);
    if (auto* d = std::get_if<double>(&value)) out += fmt::format("{}", *d);
    if (auto* t = std::get_if<DType>(&value)) out += dtype_name(*t);
    if (auto* s = std::get_if<std::string>(&value)) out += fmt::format("\"{}\"", *s);
  }
  return out;
}

}  // namespace sx::graph
