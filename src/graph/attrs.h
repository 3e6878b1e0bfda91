// The attributes of a node: a small map from names to typed values (an int,
// a list of ints, a double, a dtype or a string), ordered by name so that
// equal attributes compare and serialize equally.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "graph/dtype.h"

namespace sx::graph {

using AttrValue = std::variant<int64_t, std::vector<int64_t>, double, DType, std::string>;

class Attrs {
 public:
  Attrs() = default;
  Attrs(std::initializer_list<std::pair<const std::string, AttrValue>> values) : values_(values) {}

  Attrs& set(std::string name, AttrValue value);
  bool has(std::string_view name) const;

  // Each getter throws ShapeError naming the attribute when it is missing or
  // holds another kind of value.
  int64_t get_int(std::string_view name) const;
  const std::vector<int64_t>& get_ints(std::string_view name) const;
  double get_double(std::string_view name) const;
  DType get_dtype(std::string_view name) const;
  const std::string& get_string(std::string_view name) const;

  const std::map<std::string, AttrValue, std::less<>>& values() const { return values_; }
  bool operator==(const Attrs& other) const = default;

 private:
  const AttrValue& get(std::string_view name) const;
  std::map<std::string, AttrValue, std::less<>> values_;
};

// "axes=[0, 1] keepdims=1": for error messages and CSE keys.
std::string attrs_str(const Attrs& attrs);

}  // namespace sx::graph
