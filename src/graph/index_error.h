// An index outside the axis it reads, met while a graph runs: an index of gather or
// scatter_add, or of a checked one_hot. No index is clamped or wrapped: the run stops at
// the first one outside, and its caller reports it (a diagnostic naming the form, a
// training step, a served call's answer). Not a GraphError: the graph is well formed, its
// data is not.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "graph/errors.h"
#include "graph/graph.h"

namespace sx::graph {

class IndexOutOfRange : public std::exception {
 public:
  // What a kernel knows: input `operand` of its node holds `value` at the flat position
  // `position`, and the axis it indexes has `length` places.
  IndexOutOfRange(size_t operand, int64_t position, int64_t value, int64_t length);
  const char* what() const noexcept override { return message_.c_str(); }

  // What the plan that ran the kernel adds: node `node` of `graph` threw. It names the
  // primitive, the node's origin, the indices' shape, and the graph input whose elements
  // the indices are, element for element (through reshapes and casts), when they are one.
  void locate(const Graph& graph, NodeId node);

  int64_t value() const { return value_; }
  int64_t length() const { return length_; }
  uint32_t origin() const { return origin_; }
  // The graph input the indices are, by name; nullopt for indices computed otherwise.
  const std::optional<std::string>& input() const { return input_; }
  // Where the index is in its indices (and so in that input): one index per axis.
  std::vector<int64_t> position() const;

  // "gather: index -1 at [0, 3] of input `tokens` is outside 0 to 255": the indices named
  // by `indices`, the index at `position` of them.
  std::string message(std::string_view indices, const std::vector<int64_t>& position) const;

 private:
  size_t operand_;
  int64_t position_, value_, length_;
  std::string op_;
  Shape shape_;  // the indices'; unknown (flat) until located
  uint32_t origin_ = 0;
  std::optional<std::string> input_;
  std::string message_;
};

// fn(Index{}) for the storage type Index of an index dtype (i32, i64, u8, u16: what
// is_integer accepts, and what gather, scatter_add and one_hot take).
template <class Fn>
decltype(auto) visit_index_dtype(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::i32: return fn(int32_t{});
    case DType::i64: return fn(int64_t{});
    case DType::u8: return fn(uint8_t{});
    case DType::u16: return fn(uint16_t{});
    default: throw GraphError(fmt::format("indices must be integers, got {}", dtype_name(dtype)));
  }
}

// Throws IndexOutOfRange for the first of `count` indices outside [0, length), the
// indices being input `operand` of the kernel's node. One comparison an index, in a loop
// the compiler vectorizes; the first one outside is looked for only when there is one.
template <class Index>
void check_indices(const Index* indices, int64_t count, int64_t length, size_t operand) {
  // Unsigned: a negative index is above every length.
  auto outside = [length](Index index) {
    return static_cast<uint64_t>(static_cast<int64_t>(index)) >= static_cast<uint64_t>(length);
  };
  bool any = false;
  for (int64_t i = 0; i < count; ++i) any |= outside(indices[i]);
  if (!any) return;
  for (int64_t i = 0; i < count; ++i) {
    if (outside(indices[i])) throw IndexOutOfRange(operand, i, static_cast<int64_t>(indices[i]), length);
  }
}

}  // namespace sx::graph
