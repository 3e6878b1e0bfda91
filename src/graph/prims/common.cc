// Shared helpers of the primitive families (see common.h).
#include "graph/prims/common.h"

namespace sx::graph::prims {

std::string type_str(const ValueType& type) {
  return fmt::format("{}{}", dtype_name(type.dtype), shape_str(type.shape));
}

void require_dtypes(std::string_view op, std::span<const ValueType> args, bool (*accepts)(DType),
                    std::string_view what) {
  for (const ValueType& a : args) {
    if (!accepts(a.dtype)) {
      std::vector<std::string> names;
      for (const ValueType& t : args) names.emplace_back(dtype_name(t.dtype));
      throw ShapeError(fmt::format("{}: needs {} operands, got {}", op, what, join(names, " and ")));
    }
  }
}

bool is_numeric(DType dtype) { return dtype != DType::boolean; }
bool is_bool(DType dtype) { return dtype == DType::boolean; }

void require_same_types(std::string_view op, std::span<const ValueType> args) {
  for (const ValueType& a : args) {
    if (a.shape != args[0].shape || a.dtype != args[0].dtype) {
      std::vector<std::string> types;
      for (const ValueType& t : args) types.push_back(type_str(t));
      throw ShapeError(fmt::format("{}: operands must have one shape and dtype, got {}", op, join(types, " and ")));
    }
  }
}

int64_t ravel(const std::vector<int64_t>& index, const std::vector<int64_t>& strides) {
  int64_t flat = 0;
  for (size_t i = 0; i < index.size(); ++i) flat += index[i] * strides[i];
  return flat;
}

NodeId to_batched(Builder& b, NodeId x, bool batched, int64_t batch_size) {
  if (batched) return x;
  Shape shape = b.shape(x);
  shape.insert(shape.begin(), batch_size);
  return b.broadcast_to(x, shape);
}

NodeId batch_elementwise(Builder& b, const Node& node, std::span<const NodeId> args, std::span<const bool> batched,
                         int64_t batch_size) {
  std::vector<NodeId> xs;
  for (size_t i = 0; i < args.size(); ++i) xs.push_back(to_batched(b, args[i], batched[i], batch_size));
  return b.emit(*node.prim, xs, node.attrs);
}

NodeId batch_by_unrolling(Builder& b, const Node& node, std::span<const NodeId> args, std::span<const bool> batched,
                          int64_t batch_size) {
  std::vector<NodeId> rows;
  for (int64_t row = 0; row < batch_size; ++row) {
    std::vector<NodeId> xs;
    for (size_t i = 0; i < args.size(); ++i) {
      if (!batched[i]) {
        xs.push_back(args[i]);
        continue;
      }
      Shape shape = b.shape(args[i]);
      std::vector<int64_t> start(shape.size(), 0), stop = shape;
      start[0] = row;
      stop[0] = row + 1;
      NodeId one = b.slice(args[i], start, stop);
      xs.push_back(b.reshape(one, Shape(shape.begin() + 1, shape.end())));
    }
    NodeId y = b.emit(*node.prim, xs, node.attrs);
    Shape shape = b.shape(y);
    shape.insert(shape.begin(), 1);
    rows.push_back(b.reshape(y, shape));
  }
  return rows.size() == 1 ? rows[0] : b.concat(rows, 0);
}

std::optional<Sinking> sink_elementwise(const Node& node, std::span<const ValueType> args, int64_t axis) {
  return Sinking{.input_axes = std::vector<std::optional<int64_t>>(args.size(), axis), .attrs = node.attrs};
}

std::vector<int64_t> shift_axes(std::vector<int64_t> axes, int64_t shift) {
  for (int64_t& a : axes) a += shift;
  return axes;
}

}  // namespace sx::graph::prims
