// Strided views of a tensor's elements, for steps that read (or write) through nodes
// they absorb rather than copy: a product through a reshape of a slice (matmul.cc), a
// concat through a reshape of a transpose (movement.cc).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "graph/graph.h"

namespace sx::device::cpu {

// The elements at `offset` + sum index[d] * strides[d] over `shape`.
struct View {
  graph::Shape shape;
  std::vector<int64_t> strides;
  int64_t offset = 0;
};

// `view` reshaped to `to` without a copy, when each run of its axes that `to` splits or
// merges lies along memory as one axis would (numpy's rule); nothing otherwise.
inline std::optional<View> reshaped(const View& view, const graph::Shape& to) {
  View out{.shape = to, .strides = std::vector<int64_t>(to.size(), 1), .offset = view.offset};
  size_t i = 0, j = 0;
  while (i < view.shape.size() && j < to.size()) {
    size_t i_end = i + 1, j_end = j + 1;
    int64_t from_size = view.shape[i], to_size = to[j];
    while (from_size != to_size) {
      if (from_size < to_size) {
        if (i_end == view.shape.size()) return std::nullopt;
        from_size *= view.shape[i_end++];
      } else {
        if (j_end == to.size()) return std::nullopt;
        to_size *= to[j_end++];
      }
    }
    for (size_t d = i; d + 1 < i_end; ++d) {
      if (view.shape[d + 1] != 1 && view.strides[d] != view.strides[d + 1] * view.shape[d + 1]) return std::nullopt;
    }
    out.strides[j_end - 1] = view.strides[i_end - 1];
    for (size_t d = j_end - 1; d > j; --d) out.strides[d - 1] = out.strides[d] * to[d];
    i = i_end;
    j = j_end;
  }
  for (; i < view.shape.size(); ++i) {
    if (view.shape[i] != 1) return std::nullopt;
  }
  for (; j < to.size(); ++j) {
    if (to[j] != 1) return std::nullopt;
  }
  return out;
}

}  // namespace sx::device::cpu
