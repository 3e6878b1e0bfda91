// Shapes of tensors and the helpers every shape rule uses: element counts,
// row-major strides, NumPy broadcasting and axis normalization.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sx::graph {

using Shape = std::vector<int64_t>;

// Sizes, element counts, positions and byte counts are int64. A shape rule computes a
// size from others with these: a + b and a * b, or a ShapeError saying that `what` ("the
// padded length of axis 0") is too large when the result does not fit in int64, so that a
// size never wraps around to a small or negative one.
int64_t checked_add(int64_t a, int64_t b, std::string_view what);
int64_t checked_mul(int64_t a, int64_t b, std::string_view what);

int64_t numel(const Shape& shape);
// numel, or a ShapeError naming the shape when a size is negative or the product of its
// nonzero sizes does not fit in int64. That product is checked even when a size is 0 (as
// NumPy does), so that the strides of every shape fit too. Every node's shape is checked
// so when it is built, so numel never overflows afterwards.
int64_t checked_numel(const Shape& shape);
// The bytes of a tensor of `shape` whose elements are `element_size` bytes each: checked
// as checked_numel, and the product of the nonzero sizes by the element size must fit in
// int64 too.
int64_t checked_bytes(const Shape& shape, int64_t element_size);
// The one way a shape is written: "[2, 3]", a scalar "[]"; `separator` between
// the sizes: " " writes it as the language does, "[2 3]", and "," as compact
// JSON, "[2,3]".
std::string shape_str(const Shape& shape, std::string_view separator = ", ");
// `parts` separated by `separator`.
std::string join(const std::vector<std::string>& parts, std::string_view separator);
// Also for lists of axes or indices: "[0, 2]".
std::string list_str(const std::vector<int64_t>& values, std::string_view separator = ", ");
std::vector<int64_t> row_major_strides(const Shape& shape);

// NumPy broadcasting of two shapes: aligned at the right, each pair of
// dimensions equal or one of them 1. nullopt when they do not broadcast.
std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b);
// Whether `from` broadcasts to exactly `to`.
bool broadcasts_to(const Shape& from, const Shape& to);

// An axis in [-rank, rank) made non-negative; throws ShapeError naming `op`.
int64_t normalize_axis(int64_t axis, int64_t rank, std::string_view op);
// A list of distinct axes, normalized and sorted.
std::vector<int64_t> normalize_axes(const std::vector<int64_t>& axes, int64_t rank, std::string_view op);

}  // namespace sx::graph
