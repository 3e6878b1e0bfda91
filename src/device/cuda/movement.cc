// The copies of the movement primitives, from their attributes as the reference kernels
// read them (graph/prims/shape.cc).
#include "device/cuda/movement.h"

#include <cstring>

#include "graph/primitive.h"
#include "graph/shape.h"
#include "graph/tensor.h"

namespace sx::device::cuda {
namespace {

// A copy walking `shape`, its source and destination row-major unless changed after.
StridedCopy row_major_copy(const graph::Shape& shape) {
  StridedCopy copy;
  copy.rank = static_cast<int32_t>(shape.size());
  std::vector<int64_t> strides = graph::row_major_strides(shape);
  for (size_t d = 0; d < shape.size(); ++d) {
    copy.shape[d] = shape[d];
    copy.src_stride[d] = copy.dst_stride[d] = strides[d];
  }
  return copy;
}

}  // namespace

bool moves_by_copies(graph::PrimId prim) {
  switch (prim) {
    case graph::PrimId::reshape:
    case graph::PrimId::transpose:
    case graph::PrimId::broadcast:
    case graph::PrimId::slice:
    case graph::PrimId::concat:
    case graph::PrimId::pad: return true;
    default: return false;
  }
}

bool movable(const graph::Graph& graph, graph::NodeId id) {
  const graph::Node& node = graph.node(id);
  if (!moves_by_copies(node.op())) return false;
  // A reshape is one flat copy, whatever its axes.
  return node.op() == graph::PrimId::reshape || node.shape.size() <= static_cast<size_t>(kMostAxes);
}

Movement plan_movement(const graph::Graph& graph, graph::NodeId id) {
  const graph::Node& node = graph.node(id);
  const graph::Shape& in = graph.node(node.inputs[0]).shape;
  std::vector<int64_t> in_strides = graph::row_major_strides(in);
  std::vector<int64_t> out_strides = graph::row_major_strides(node.shape);
  Movement movement;
  switch (node.op()) {
    case graph::PrimId::reshape: movement.copies.push_back(row_major_copy({graph::numel(node.shape)})); break;
    case graph::PrimId::transpose: {
      const std::vector<int64_t>& perm = node.attrs.get_ints("perm");
      StridedCopy copy = row_major_copy(node.shape);
      for (size_t d = 0; d < perm.size(); ++d) copy.src_stride[d] = in_strides[static_cast<size_t>(perm[d])];
      movement.copies.push_back(copy);
      break;
    }
    case graph::PrimId::broadcast: {
      StridedCopy copy = row_major_copy(node.shape);
      size_t lead = node.shape.size() - in.size();
      for (size_t d = 0; d < node.shape.size(); ++d) {
        copy.src_stride[d] = d < lead || in[d - lead] == 1 ? 0 : in_strides[d - lead];
      }
      movement.copies.push_back(copy);
      break;
    }
    case graph::PrimId::slice: {
      const std::vector<int64_t>&start = node.attrs.get_ints("start"), &step = node.attrs.get_ints("step");
      StridedCopy copy = row_major_copy(node.shape);
      for (size_t d = 0; d < in.size(); ++d) {
        copy.src_offset += start[d] * in_strides[d];
        copy.src_stride[d] = step[d] * in_strides[d];
      }
      movement.copies.push_back(copy);
      break;
    }
    case graph::PrimId::concat: {
      auto axis = static_cast<size_t>(node.attrs.get_int("axis"));
      int64_t offset = 0;
      for (graph::NodeId input : node.inputs) {
        const graph::Shape& shape = graph.node(input).shape;
        StridedCopy copy = row_major_copy(shape);
        for (size_t d = 0; d < shape.size(); ++d) copy.dst_stride[d] = out_strides[d];
        copy.dst_offset = offset * out_strides[axis];
        offset += shape[axis];
        movement.copies.push_back(copy);
      }
      break;
    }
    case graph::PrimId::pad: {
      const std::vector<int64_t>&low = node.attrs.get_ints("low"), &interior = node.attrs.get_ints("interior");
      StridedCopy copy = row_major_copy(in);
      for (size_t d = 0; d < in.size(); ++d) {
        copy.dst_stride[d] = out_strides[d] * (interior[d] + 1);
        copy.dst_offset += low[d] * out_strides[d];
      }
      movement.copies.push_back(copy);
      graph::Tensor value = graph::Tensor::scalar(node.dtype, node.attrs.get_double("value"));
      movement.fills = true;
      std::memcpy(&movement.fill, value.bytes().data(), value.bytes().size());
      break;
    }
    default: break;
  }
  return movement;
}

}  // namespace sx::device::cuda
