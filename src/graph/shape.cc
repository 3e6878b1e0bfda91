// Shape helpers: counting, printing, strides, broadcasting, axes.
#include "graph/shape.h"

#include <fmt/format.h>

#include <algorithm>

#include "graph/errors.h"

namespace sx::graph {

int64_t checked_add(int64_t a, int64_t b, std::string_view what) {
  int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) {
    throw ShapeError(fmt::format("{} is too large: {} + {} is more than a size can be (2^63 - 1)", what, a, b));
  }
  return sum;
}

int64_t checked_mul(int64_t a, int64_t b, std::string_view what) {
  int64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) {
    throw ShapeError(fmt::format("{} is too large: {} * {} is more than a size can be (2^63 - 1)", what, a, b));
  }
  return product;
}

int64_t numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

namespace {

// The product of the nonzero sizes and `element_size`; nullopt when it does not fit.
std::optional<int64_t> nonzero_product(const Shape& shape, int64_t element_size) {
  int64_t product = element_size;
  for (int64_t d : shape) {
    if (d != 0 && __builtin_mul_overflow(product, d, &product)) return std::nullopt;
  }
  return product;
}

void check_sizes(const Shape& shape) {
  for (int64_t d : shape) {
    if (d < 0) throw ShapeError(fmt::format("the shape {} has a negative size", shape_str(shape)));
  }
}

bool has_zero(const Shape& shape) { return std::find(shape.begin(), shape.end(), 0) != shape.end(); }

}  // namespace

int64_t checked_numel(const Shape& shape) {
  check_sizes(shape);
  std::optional<int64_t> count = nonzero_product(shape, 1);
  if (!count) {
    throw ShapeError(fmt::format("the shape {} has more elements than a tensor can hold (2^63)", shape_str(shape)));
  }
  return has_zero(shape) ? 0 : *count;
}

int64_t checked_bytes(const Shape& shape, int64_t element_size) {
  int64_t count = checked_numel(shape);
  std::optional<int64_t> bytes = nonzero_product(shape, element_size);
  if (!bytes) {
    throw ShapeError(fmt::format("the shape {} of {}-byte elements has more bytes than a tensor can hold (2^63)",
                                 shape_str(shape), element_size));
  }
  return count == 0 ? 0 : *bytes;
}

std::string join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += separator;
    out += parts[i];
  }
  return out;
}

std::string list_str(const std::vector<int64_t>& values, std::string_view separator) {
  std::vector<std::string> parts;
  for (int64_t v : values) parts.push_back(std::to_string(v));
  std::string out = "[";
  out += join(parts, separator);
  out += ']';
  return out;
}

std::string shape_str(const Shape& shape, std::string_view separator) { return list_str(shape, separator); }

std::vector<int64_t> row_major_strides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) strides[i - 1] = strides[i] * shape[i];
  return strides;
}

std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) return std::nullopt;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

bool broadcasts_to(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) return false;
  size_t lead = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i) {
    if (from[i] != to[lead + i] && from[i] != 1) return false;
  }
  return true;
}

int64_t normalize_axis(int64_t axis, int64_t rank, std::string_view op) {
  if (axis < -rank || axis >= rank) {
    throw ShapeError(fmt::format("{}: axis {} is out of range for rank {}", op, axis, rank));
  }
  return axis < 0 ? axis + rank : axis;
}

std::vector<int64_t> normalize_axes(const std::vector<int64_t>& axes, int64_t rank, std::string_view op) {
  std::vector<int64_t> out;
  for (int64_t axis : axes) out.push_back(normalize_axis(axis, rank, op));
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end()) {
    throw ShapeError(fmt::format("{}: axes {} repeat an axis", op, list_str(axes)));
  }
  return out;
}

}  // namespace sx::graph
