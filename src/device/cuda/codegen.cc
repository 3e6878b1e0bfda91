// The generated kernels: finding the elementwise chains, and writing their source.
#include "device/cuda/codegen.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <map>
#include <numbers>
#include <span>

#include "device/cuda/element.h"
#include "device/cuda/elementwise.h"
#include "device/cuda/gradient_math.h"
#include "device/cuda/index_math.h"
#include "device/cuda/nvrtc.h"
#include "device/cuda/reduction.h"
#include "device/device.h"
#include "graph/composite.h"
#include "graph/primitive.h"
#include "graph/shape.h"

namespace sx::device::cuda {
namespace {

// The C type of a dtype's storage, which is its compute type too but for bf16's.
const char* c_type(graph::DType dtype) {
  switch (dtype) {
    case graph::DType::f32: return "float";
    case graph::DType::f64: return "double";
    case graph::DType::i32: return "int32_t";
    case graph::DType::i64: return "int64_t";
    case graph::DType::boolean: return "bool";
    case graph::DType::u8: return "uint8_t";
    case graph::DType::u16: return "uint16_t";
    case graph::DType::bf16: return "sx::graph::Bf16";
  }
  return "";
}

// The C type a dtype's arithmetic runs in (graph::visit_dtype's compute type): float for
// bf16, whose every value is stored rounded to nearest even.
const char* compute_type(graph::DType dtype) { return dtype == graph::DType::bf16 ? "float" : c_type(dtype); }

// scalar.h's name of a primitive's formula: the primitive's, in camel case
// ("logical_not": LogicalNot).
std::string formula_name(std::string_view primitive) {
  std::string name;
  bool upper = true;
  for (char c : primitive) {
    if (c == '_') {
      upper = true;
      continue;
    }
    name += upper ? static_cast<char>(c - 'a' + 'A') : c;
    upper = false;
  }
  return name;
}

bool is_one_of(graph::PrimId prim, std::initializer_list<graph::PrimId> prims) {
  return std::find(prims.begin(), prims.end(), prim) != prims.end();
}

// Whether the node reads or writes bf16.
bool touches_bf16(const graph::Graph& graph, const graph::Node& node) {
  if (node.dtype == graph::DType::bf16) return true;
  for (graph::NodeId in : node.inputs) {
    if (graph.node(in).dtype == graph::DType::bf16) return true;
  }
  return false;
}

graph::DType operand_dtype(const graph::Graph& graph, graph::NodeId id) {
  return graph.node(graph.node(id).inputs[0]).dtype;
}

// One node's line: `const T v2 = unary_element<...>(v0);`, each value named by its place
// in the kernel (`local`), not by its node, so that the same chain anywhere in a graph
// gives the same source, one kernel and one cache entry.
std::string element_line(const graph::Graph& graph, graph::NodeId id, const std::map<graph::NodeId, size_t>& local) {
  const graph::Node& node = graph.node(id);
  auto operand = [&](size_t k) { return local.at(node.inputs[k]); };
  std::string call;
  if (node.op() == graph::PrimId::where) {
    call = fmt::format("v{} ? v{} : v{}", operand(0), operand(1), operand(2));
  } else if (node.op() == graph::PrimId::cast) {
    call = fmt::format("sx::graph::prims::convert<{}>(v{})", c_type(node.dtype), operand(0));
  } else {
    const char* s = c_type(operand_dtype(graph, id));
    const char* c = compute_type(operand_dtype(graph, id));
    // scalar.h's formula where the kernels share it with the reference, else transcendental.h's.
    bool shared = visit_element(node.op(), [](auto, auto, auto) {});
    std::string formula =
        (shared ? "sx::graph::prims::scalar::" : "sx::device::cuda::gpu::") + formula_name(node.op_name());
    visit_generated_element(node.op(), [&](auto, auto shape, auto) {
      using Shape = decltype(shape);
      if constexpr (std::is_same_v<Shape, Unary>) {
        call = fmt::format("sx::device::cuda::unary_element<{}, {}, {}>(v{})", formula, s, c, operand(0));
      } else {
        call = fmt::format("sx::device::cuda::binary_element<{}, {}, {}, {}>(v{}, v{})", formula, s, c,
                           std::is_same_v<Shape, Comparison> ? "bool" : s, operand(0), operand(1));
      }
    });
  }
  return fmt::format("    const {} v{} = {};\n", c_type(node.dtype), local.at(id), call);
}

// A kernel's source, named by a hash of its parameters and body: "sx_fused_...". Its
// threads take the places i < `bound` (n unless given) in turns (a grid-stride loop),
// `setup` before the loop and `body` (lines of i) in it.
GeneratedKernel grid_stride_kernel(std::string_view kind, const std::string& parameters, const std::string& setup,
                                   const std::string& body, std::string_view bound = "n") {
  std::string signature_and_body = fmt::format(
      "({}) {{\n"
      "{}"
      "  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < {}; i += int64_t(gridDim.x) * "
      "blockDim.x) {{\n"
      "{}"
      "  }}\n"
      "}}\n",
      parameters, setup, bound, body);
  GeneratedKernel kernel;
  kernel.name = fmt::format("sx_{}_{:016x}", kind, text_hash(signature_and_body));
  kernel.source = fmt::format(
      "#include \"graph/bf16.h\"\n"
      "#include \"device/cuda/composite_math.h\"\n"
      "#include \"device/cuda/cross_entropy_math.h\"\n"
      "#include \"device/cuda/element_math.h\"\n"
      "#include \"device/cuda/gradient_math.h\"\n"
      "#include \"device/cuda/index_math.h\"\n"
      "#include \"device/cuda/random_math.h\"\n"
      "#include \"device/cuda/reduction.h\"\n"
      "#include \"device/cuda/transcendental.h\"\n"
      "#include \"device/cuda/update_math.h\"\n\n"
      "extern \"C\" __global__ void {}{}",
      kernel.name, signature_and_body);
  return kernel;
}

// The kernel's function of a reduction node of x's `dtype`: reduce_sum's or
// reduce_extremum's call, in the dtype's compute type (bf16 accumulates in float).
std::string reduction_call(graph::PrimId prim, graph::DType dtype) {
  const char* s = c_type(dtype);
  const char* c = compute_type(dtype);
  switch (prim) {
    case graph::PrimId::sum: return fmt::format("reduce_sum<{}, {}>", s, c);
    case graph::PrimId::reduce_max: return fmt::format("reduce_extremum<{0}, {1}, {0}, true, false>", s, c);
    case graph::PrimId::reduce_min: return fmt::format("reduce_extremum<{0}, {1}, {0}, false, false>", s, c);
    case graph::PrimId::argmax: return fmt::format("reduce_extremum<{}, {}, int64_t, true, true>", s, c);
    default: return fmt::format("reduce_extremum<{}, {}, int64_t, false, true>", s, c);
  }
}

}  // namespace

bool reducible(const graph::Graph& graph, graph::NodeId id) {
  const graph::Node& node = graph.node(id);
  if (!is_one_of(node.op(), {graph::PrimId::sum, graph::PrimId::reduce_max, graph::PrimId::reduce_min,
                             graph::PrimId::argmax, graph::PrimId::argmin})) {
    return false;
  }
  const graph::Node& x = graph.node(node.inputs[0]);
  return x.dtype != graph::DType::boolean && x.shape.size() <= static_cast<size_t>(kMostAxes);
}

ReductionAxes reduction_axes(const graph::Graph& graph, graph::NodeId id) {
  const graph::Node& node = graph.node(id);
  const graph::Shape& shape = graph.node(node.inputs[0]).shape;
  const std::vector<int64_t>& axes = node.attrs.get_ints("axes");
  std::vector<int64_t> strides = graph::row_major_strides(shape);
  ReductionAxes result;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (std::find(axes.begin(), axes.end(), static_cast<int64_t>(d)) != axes.end()) {
      result.reduced_shape[result.reduced_rank] = shape[d];
      result.reduced_stride[result.reduced_rank++] = strides[d];
    } else {
      result.kept_shape[result.kept_rank] = shape[d];
      result.kept_stride[result.kept_rank++] = strides[d];
    }
  }
  return result;
}

GeneratedKernel generate_reduction(const graph::Graph& graph, graph::NodeId id) {
  const graph::Node& node = graph.node(id);
  ReductionAxes axes = reduction_axes(graph, id);
  auto list = [](int32_t rank, const int64_t* values) {
    std::string text = "{";
    for (int32_t d = 0; d < rank; ++d) text += fmt::format("{}{}", d ? ", " : "", values[d]);
    return text + "}";
  };
  graph::DType dtype = graph.node(node.inputs[0]).dtype;
  return grid_stride_kernel(
      "reduce",
      fmt::format("const {}* __restrict__ x, {}* __restrict__ out, int64_t n, int64_t length", c_type(dtype),
                  c_type(node.dtype)),
      fmt::format("  const sx::device::cuda::ReductionAxes axes = {{{}, {}, {}, {}, {}, {}}};\n", axes.kept_rank,
                  list(axes.kept_rank, axes.kept_shape), list(axes.kept_rank, axes.kept_stride), axes.reduced_rank,
                  list(axes.reduced_rank, axes.reduced_shape), list(axes.reduced_rank, axes.reduced_stride)),
      fmt::format("    out[i] = sx::device::cuda::{}(x, axes, i, length);\n", reduction_call(node.op(), dtype)));
}

bool indexable(const graph::Graph& graph, graph::NodeId id) {
  const graph::Node& node = graph.node(id);
  return is_one_of(node.op(),
                   {graph::PrimId::gather, graph::PrimId::scatter_add, graph::PrimId::one_hot, graph::PrimId::iota});
}

GatherGeometry gather_geometry(const graph::Graph& graph, graph::NodeId id) {
  const graph::Node& node = graph.node(id);
  const graph::Shape& x = graph.node(node.inputs[0]).shape;
  auto axis = static_cast<size_t>(node.attrs.get_int("axis"));
  GatherGeometry g;
  g.count = graph::numel(graph.node(node.inputs[1]).shape);
  g.length = x[axis];
  for (size_t d = axis + 1; d < x.size(); ++d) g.inner *= x[d];
  return g;
}

namespace {

// "const S0* __restrict__ operand0, ...": the parameters of `node`'s inputs, in order.
std::string operand_parameters(const graph::Graph& graph, const graph::Node& node) {
  std::string parameters;
  for (size_t k = 0; k < node.inputs.size(); ++k) {
    parameters += fmt::format("const {}* __restrict__ operand{}, ", c_type(graph.node(node.inputs[k]).dtype), k);
  }
  return parameters;
}

// The parameters a kernel that checks indices takes after its others.
constexpr const char* kIndexCheckParameters = ", sx::device::cuda::IndexFault* fault, uint32_t node";

// A kernel's setup that checks `check`'s indices, its threads taking them in turns.
std::string index_check_setup(const IndexCheck& check) {
  return fmt::format(
      "  for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < {}; j += int64_t(gridDim.x) * "
      "blockDim.x) {{\n"
      "    sx::device::cuda::check_index(fault, node, operand{}, j, {});\n"
      "  }}\n",
      check.count, check.operand, check.length);
}

// A kernel of one thread per element of `node`'s result: void NAME(const S0* operand0,
// ..., T* out, int64_t n), its inputs in order, out[i] = `element` (an expression of
// operand0..., and i) for i < n. With `check`, it takes IndexFault* fault and uint32_t
// node too, and its threads first check the indices in turns, as they take elements.
GeneratedKernel per_element_kernel(std::string_view kind, const graph::Graph& graph, graph::NodeId id,
                                   const std::string& element, const std::optional<IndexCheck>& check = {}) {
  const graph::Node& node = graph.node(id);
  std::string parameters = operand_parameters(graph, node);
  parameters += fmt::format("{}* __restrict__ out, int64_t n", c_type(node.dtype));
  std::string setup;
  if (check) {
    parameters += kIndexCheckParameters;
    setup = index_check_setup(*check);
  }
  return grid_stride_kernel(kind, parameters, setup, fmt::format("    out[i] = sx::device::cuda::{};\n", element));
}

}  // namespace

std::optional<IndexCheck> index_check(const graph::Graph& graph, graph::NodeId id) {
  const graph::Node& node = graph.node(id);
  switch (node.op()) {
    case graph::PrimId::gather:
    case graph::PrimId::scatter_add: {
      GatherGeometry g = gather_geometry(graph, id);
      return IndexCheck{.operand = 1, .count = g.count, .length = g.length};
    }
    case graph::PrimId::one_hot:
      if (!node.attrs.has("checked")) return std::nullopt;
      return IndexCheck{
          .operand = 0, .count = graph::numel(graph.node(node.inputs[0]).shape), .length = node.attrs.get_int("depth")};
    case graph::PrimId::composite_gradient:
      if (graph::gradient_of(node.attrs).id != graph::PrimId::cross_entropy) return std::nullopt;
      [[fallthrough]];
    case graph::PrimId::cross_entropy: {
      // Its one_hot's check, of the targets against the classes.
      const graph::Shape& logits = graph.node(node.inputs[0]).shape;
      if (logits.empty()) return std::nullopt;
      return IndexCheck{.operand = 1, .count = graph::numel(graph.node(node.inputs[1]).shape), .length = logits.back()};
    }
    default: return std::nullopt;
  }
}

graph::IndexOutOfRange index_fault_error(const graph::Graph& graph, const IndexFault& fault) {
  graph::NodeId node = fault_node(fault.recorded);
  std::optional<IndexCheck> check = node < graph.nodes.size() ? index_check(graph, node) : std::nullopt;
  int64_t position = fault_position(fault.recorded);
  if (!check || position >= check->count) {
    throw DeviceError(fmt::format("the GPU recorded an index outside its axis at position {} of node {}, which "
                                  "reads no such index: its memory is corrupted",
                                  position, node),
                      "E-DEVICE-008");
  }
  graph::IndexOutOfRange error(check->operand, position, fault.value, check->length);
  error.locate(graph, node);
  return error;
}

GeneratedKernel generate_index_kernel(const graph::Graph& graph, graph::NodeId id) {
  const graph::Node& node = graph.node(id);
  const char* t = c_type(node.dtype);
  const char* c = compute_type(node.dtype);
  std::optional<IndexCheck> check = index_check(graph, id);
  auto geometry = [&] {
    GatherGeometry g = gather_geometry(graph, id);
    return fmt::format("sx::device::cuda::GatherGeometry{{{}, {}, {}}}", g.count, g.length, g.inner);
  };
  switch (node.op()) {
    case graph::PrimId::gather:
      return per_element_kernel("index", graph, id,
                                fmt::format("gather_element(operand0, operand1, {}, i)", geometry()), check);
    case graph::PrimId::scatter_add:
      return per_element_kernel(
          "index", graph, id,
          fmt::format("scatter_add_element<{}, {}>(operand0, operand1, operand2, {}, i)", t, c, geometry()), check);
    case graph::PrimId::one_hot:
      return per_element_kernel("index", graph, id,
                                fmt::format("one_hot_element<{}>(operand0, {}, i)", t, node.attrs.get_int("depth")),
                                check);
    default: {
      auto axis = static_cast<size_t>(node.attrs.get_int("axis"));
      int64_t inner = 1;
      for (size_t d = axis + 1; d < node.shape.size(); ++d) inner *= node.shape[d];
      return per_element_kernel("index", graph, id,
                                fmt::format("iota_element<{}, {}>({}, {}, i)", t, c, node.shape[axis], inner));
    }
  }
}

bool randomizable(const graph::Graph& graph, graph::NodeId id) {
  const graph::Node& node = graph.node(id);
  switch (node.op()) {
    case graph::PrimId::random_bernoulli: return true;
    case graph::PrimId::random_normal:
    case graph::PrimId::random_uniform:
      return node.dtype == graph::DType::f32 || node.dtype == graph::DType::f64 || node.dtype == graph::DType::bf16;
    default: return false;
  }
}

GeneratedKernel generate_random_kernel(const graph::Graph& graph, graph::NodeId id) {
  const graph::Node& node = graph.node(id);
  const char* t = c_type(node.dtype);
  std::string element;
  switch (node.op()) {
    case graph::PrimId::random_normal:
      element = fmt::format("random_normal_element<{}>(int64_t(operand0[0]), i)", t);
      break;
    case graph::PrimId::random_uniform:
      element = fmt::format("random_uniform_element<{}>(int64_t(operand0[0]), i)", t);
      break;
    default:
      // p as its double's bits, so that the kernel compares with exactly the attribute's value.
      element = fmt::format("random_bernoulli_element(int64_t(operand0[0]), i, __longlong_as_double({}ll))",
                            std::bit_cast<int64_t>(node.attrs.get_double("p")));
  }
  return per_element_kernel("random", graph, id, element);
}

bool fusible(const graph::Graph& graph, graph::NodeId id) {
  const graph::Node& node = graph.node(id);
  if (node.prim->kind != graph::PrimKind::elementwise || node.inputs.empty()) return false;
  if (node.op() == graph::PrimId::where) return true;
  // bf16's casts and the elements nvcc's kernels compute stay theirs (elementwise.h).
  bool bf16 = touches_bf16(graph, node);
  if (node.op() == graph::PrimId::cast) return !bf16;
  graph::DType dtype = operand_dtype(graph, id);
  return has_generated_element(node.op(), dtype) && !(bf16 && has_elementwise_kernel(node.op(), dtype));
}

bool row_reducible(const graph::Graph& graph, graph::NodeId id) {
  const graph::Node& node = graph.node(id);
  if (node.op() != graph::PrimId::sum && node.op() != graph::PrimId::reduce_max) return false;
  const graph::Node& x = graph.node(node.inputs[0]);
  auto last = static_cast<int64_t>(x.shape.size()) - 1;
  return x.dtype != graph::DType::boolean && node.attrs.get_ints("axes") == std::vector<int64_t>{last};
}

GeneratedKernel generate_row_reduction(const graph::Graph& graph, graph::NodeId id) {
  const graph::Node& node = graph.node(id);
  graph::DType dtype = graph.node(node.inputs[0]).dtype;
  return grid_stride_kernel(
      "row", fmt::format("const {0}* __restrict__ x, {0}* __restrict__ out, int64_t n, int64_t length", c_type(dtype)),
      "",
      fmt::format("    out[i] = sx::device::cuda::{}<{}, {}>(x + i * length, length);\n",
                  node.op() == graph::PrimId::sum ? "row_sum" : "row_max", c_type(dtype), compute_type(dtype)));
}

namespace {

bool is_row_composite(graph::PrimId prim) {
  return is_one_of(prim, {graph::PrimId::softmax, graph::PrimId::log_softmax, graph::PrimId::layer_norm,
                          graph::PrimId::rms_norm, graph::PrimId::gelu});
}

// Whether the row composite `prim` of `attrs` on `inputs` (x first) is a form its kernel
// takes: a softmax's over the last axis, a norm's weight and bias each of x's dtype and
// the last axis's length.
bool kernel_takes_form(const graph::Graph& graph, graph::PrimId prim, const graph::Attrs& attrs,
                       std::span<const graph::NodeId> inputs) {
  const graph::Node& x = graph.node(inputs[0]);
  const auto rank = static_cast<int64_t>(x.shape.size());
  switch (prim) {
    case graph::PrimId::gelu: return true;
    case graph::PrimId::softmax:
    case graph::PrimId::log_softmax: {
      const std::vector<int64_t>& axes = attrs.get_ints("axes");
      return axes.size() == 1 && rank > 0 && (axes[0] == rank - 1 || axes[0] == -1);
    }
    default:
      for (graph::NodeId in : inputs.subspan(1)) {
        const graph::Node& operand = graph.node(in);
        if (operand.dtype != x.dtype || rank == 0 || operand.shape != graph::Shape{x.shape.back()}) return false;
      }
      return true;
  }
}

// A composite_gradient's composite, where its kernel computes it: the gradient with
// respect to x of a row composite of f32 or bf16 in a form its kernel takes.
std::optional<graph::PrimId> gradient_kernel_of(const graph::Graph& graph, const graph::Node& node) {
  const graph::Primitive& of = graph::gradient_of(node.attrs);
  if (!is_row_composite(of.id) || node.attrs.get_int("input") != 0) return std::nullopt;
  if (node.dtype != graph::DType::f32 && node.dtype != graph::DType::bf16) return std::nullopt;
  std::span<const graph::NodeId> operands(node.inputs.data(), node.inputs.size() - 1);
  const graph::Node& cotangent = graph.node(node.inputs.back());
  if (cotangent.dtype != node.dtype || cotangent.shape != node.shape) return std::nullopt;
  if (!kernel_takes_form(graph, of.id, graph::differentiated_attrs(node.attrs), operands)) return std::nullopt;
  return of.id;
}

// A double literal as its bits, so that the kernel rounds exactly the host's value.
std::string exactly(double value) { return fmt::format("__longlong_as_double({}ll)", std::bit_cast<int64_t>(value)); }

bool is_index_dtype(graph::DType dtype) {
  return dtype == graph::DType::i32 || dtype == graph::DType::i64 || dtype == graph::DType::u8 ||
         dtype == graph::DType::u16;
}

// Whether cross_entropy of `inputs` is a form its kernels take: logits of f32 or bf16, not
// empty, a target of an index dtype for each of their rows, and for its gradient with
// respect to the logits, the loss's cotangent last, a scalar of the logits' dtype.
bool cross_entropy_kernel_takes(const graph::Graph& graph, std::span<const graph::NodeId> inputs) {
  if (inputs.size() != 2 && inputs.size() != 3) return false;
  const graph::Node& x = graph.node(inputs[0]);
  const graph::Node& targets = graph.node(inputs[1]);
  if ((x.dtype != graph::DType::f32 && x.dtype != graph::DType::bf16) || x.shape.empty() ||
      graph::numel(x.shape) == 0) {
    return false;
  }
  if (!is_index_dtype(targets.dtype) || targets.shape != graph::Shape(x.shape.begin(), x.shape.end() - 1)) return false;
  if (inputs.size() == 2) return true;
  const graph::Node& cotangent = graph.node(inputs[2]);
  return cotangent.dtype == x.dtype && cotangent.shape.empty();
}

bool is_cross_entropy_gradient(const graph::Graph& graph, const graph::Node& node) {
  return graph::gradient_of(node.attrs).id == graph::PrimId::cross_entropy && node.attrs.get_int("input") == 0 &&
         cross_entropy_kernel_takes(graph, node.inputs);
}

enum class NormParameter { weight, bias };

// The parameter a composite_gradient is the gradient of, where its kernels compute it: a
// norm's weight or bias, of f32 or bf16, of a form the norm's kernel takes, of x not
// empty, the cotangent last, of x's dtype and shape.
std::optional<NormParameter> norm_parameter_of(const graph::Graph& graph, const graph::Node& node) {
  const graph::PrimId of = graph::gradient_of(node.attrs).id;
  const int64_t input = node.attrs.get_int("input");
  if ((of != graph::PrimId::layer_norm && of != graph::PrimId::rms_norm) || input == 0) return std::nullopt;
  if (node.dtype != graph::DType::f32 && node.dtype != graph::DType::bf16) return std::nullopt;
  std::span<const graph::NodeId> operands(node.inputs.data(), node.inputs.size() - 1);
  const graph::Node& x = graph.node(operands[0]);
  const graph::Node& cotangent = graph.node(node.inputs.back());
  if (x.dtype != node.dtype || graph::numel(x.shape) == 0) return std::nullopt;
  if (cotangent.dtype != x.dtype || cotangent.shape != x.shape) return std::nullopt;
  const graph::Attrs attrs = graph::differentiated_attrs(node.attrs);
  if (!kernel_takes_form(graph, of, attrs, operands)) return std::nullopt;
  return input == 1 && attrs.get_int("weight") != 0 ? NormParameter::weight : NormParameter::bias;
}

}  // namespace

bool runs_by_elements(const graph::Graph& graph, const graph::Node& node) {
  if (is_update(node.op()) || node.op() == graph::PrimId::gelu || node.op() == graph::PrimId::attention) return true;
  return node.op() == graph::PrimId::composite_gradient && gradient_kernel_of(graph, node) == graph::PrimId::gelu;
}

bool has_composite_kernel(graph::PrimId prim) {
  return is_row_composite(prim) || is_update(prim) || prim == graph::PrimId::composite_gradient ||
         prim == graph::PrimId::cross_entropy || prim == graph::PrimId::attention;
}

bool is_update(graph::PrimId prim) { return prim == graph::PrimId::adamw || prim == graph::PrimId::sgd; }

bool has_composite_kernel(const graph::Graph& graph, const graph::Node& node) {
  if (!has_composite_kernel(node.op())) return false;
  if (is_update(node.op())) return node.dtype == graph::DType::f32;
  if (node.op() == graph::PrimId::attention) return has_attention_kernel(graph, node);
  if (node.op() == graph::PrimId::cross_entropy) return cross_entropy_kernel_takes(graph, node.inputs);
  if (node.op() == graph::PrimId::composite_gradient) {
    return gradient_kernel_of(graph, node).has_value() || is_cross_entropy_gradient(graph, node) ||
           norm_parameter_of(graph, node).has_value();
  }
  return graph::is_float(node.dtype) && kernel_takes_form(graph, node.op(), node.attrs, node.inputs);
}

namespace {

// An update's kernel: void NAME(const float* operand0, ..., float* out, int64_t n), its
// inputs in order (the scalars and the flag as pointers to their one value), an element
// of the parameter each, its values stacked in out (update_math.h).
GeneratedKernel generate_update_kernel(const graph::Graph& graph, graph::NodeId id) {
  const graph::Node& node = graph.node(id);
  std::string parameters = operand_parameters(graph, node) + "float* __restrict__ out, int64_t n";
  const bool decays = node.attrs.get_int("weight_decay") != 0;
  std::string setup, call;
  if (node.op() == graph::PrimId::adamw) {
    setup = fmt::format(
        "  const sx::device::cuda::AdamwScalars s = {{operand4[0], operand5[0], operand6[0], operand7[0], "
        "operand8[0], operand9[0], operand10[0], {}}};\n",
        decays ? "operand11[0]" : "1.0f");
    call = fmt::format("adamw_element<{}>(operand0, operand1, operand2, operand3, s, out, n, i)", decays);
  } else {
    // sgd's operands: parameter, gradient, -lr, [weight_decay], [buffer, momentum, first].
    const bool momentum = node.attrs.get_int("momentum") != 0;
    const size_t buffer = decays ? 4 : 3;
    call =
        fmt::format("sgd_element<{}, {}>(operand0, operand1, operand2[0], {}, {}, {}, {}, out, n, i)", decays, momentum,
                    decays ? "operand3[0]" : "0.0f", momentum ? fmt::format("operand{}", buffer) : "nullptr",
                    momentum ? fmt::format("operand{}[0]", buffer + 1) : "0.0f",
                    momentum ? fmt::format("operand{}[0]", buffer + 2) : "false");
  }
  return grid_stride_kernel("update", parameters, setup, fmt::format("    sx::device::cuda::{};\n", call));
}

}  // namespace

GeneratedKernel generate_composite_kernel(const graph::Graph& graph, graph::NodeId id) {
  const graph::Node& node = graph.node(id);
  if (is_update(node.op())) return generate_update_kernel(graph, id);
  if (node.op() == graph::PrimId::attention) return generate_attention_kernel(graph, id);
  // A gradient's kernel is its composite's, of that composite's attributes, given the
  // cotangent (the last operand) too.
  const bool gradient = node.op() == graph::PrimId::composite_gradient;
  const graph::PrimId op = gradient ? graph::gradient_of(node.attrs).id : node.op();
  const graph::Attrs attrs = gradient ? graph::differentiated_attrs(node.attrs) : node.attrs;
  const std::string kind = gradient ? "gradient" : "composite";
  const std::string cotangent = fmt::format("operand{}", node.inputs.size() - 1);
  const char* t = c_type(node.dtype);
  // The composite_math.h (gradient_math.h) function's template arguments: the storage and compute types.
  std::string types = fmt::format("{}, {}", t, compute_type(node.dtype));
  if (op == graph::PrimId::gelu) {
    const std::string& form = attrs.get_string("form");
    if (!gradient) {
      return per_element_kernel("gelu", graph, id, fmt::format("gelu_{}_element<{}>(operand0[i])", form, types));
    }
    // The erf form's 2 / sqrt(pi), as erf's gradient rule (graph/prims/unary.cc) computes it.
    std::string literal = form == "erf" ? ", " + exactly(2.0 / std::sqrt(std::numbers::pi)) : "";
    return per_element_kernel(
        kind, graph, id,
        fmt::format("gelu_{}_gradient_element<{}>(operand0[i], {}[i]{})", form, types, cotangent, literal));
  }
  std::string parameters;
  for (size_t k = 0; k < node.inputs.size(); ++k) parameters += fmt::format("const {}* __restrict__ operand{}, ", t, k);
  parameters += fmt::format("{}* __restrict__ out, int64_t n, int64_t length", t);
  // The optional weight and bias are the operands after x, in that order, or null.
  auto optional_operand = [&, next = size_t{1}](const char* attr) mutable {
    return attrs.get_int(attr) != 0 ? fmt::format("operand{}", next++) : std::string("nullptr");
  };
  const std::string eps = op == graph::PrimId::layer_norm || op == graph::PrimId::rms_norm
                              ? exactly(attrs.get_double("eps"))
                              : std::string();
  // A gradient's arguments before its row's out: x's row, (the weight,) the cotangent's row.
  const std::string g_row = fmt::format("{} + i * length", cotangent);
  std::string call;
  switch (op) {
    case graph::PrimId::softmax:
    case graph::PrimId::log_softmax: {
      const char* name = op == graph::PrimId::softmax ? "softmax" : "log_softmax";
      call = gradient ? fmt::format("{}_gradient_row<{}>(row, {}, out + i * length, length)", name, types, g_row)
                      : fmt::format("{}_row<{}>(row, out + i * length, length)", name, types);
      break;
    }
    default: {
      const bool centered = op == graph::PrimId::layer_norm;
      std::string weight = optional_operand("weight");
      if (gradient) {
        call = fmt::format("norm_gradient_row<{}, {}>(row, {}, {}, out + i * length, length, {})", types, centered,
                           weight, g_row, eps);
      } else if (centered) {
        std::string bias = optional_operand("bias");
        call = fmt::format("layer_norm_row<{}>(row, {}, {}, out + i * length, length, {})", types, weight, bias, eps);
      } else {
        call = fmt::format("rms_norm_row<{}>(row, {}, out + i * length, length, {})", types, weight, eps);
      }
    }
  }
  return grid_stride_kernel(kind, parameters, "",
                            fmt::format("    const {}* row = operand0 + i * length;\n"
                                        "    sx::device::cuda::{};\n",
                                        t, call));
}

namespace {

// What the passes of a node's passed kernels share: the storage and compute types of x,
// the kind of kernel, the parameters, the index check's setup, the cotangent operand
// (a gradient's), and where the first pass's values for the second begin: after the
// node's value, 16-byte aligned.
struct PassSource {
  std::string types, kind, parameters, setup, cotangent;
  size_t value_bytes = 0, scratch = 0;

  // The body's line that names those values `scratch`, of `type`.
  std::string scratch_of(std::string_view type) const {
    return fmt::format("    {0}* scratch = reinterpret_cast<{0}*>(reinterpret_cast<char*>(out) + {1});\n", type,
                       scratch);
  }
};

// A cross_entropy's kernels over `rows` (cross_entropy_math.h): the loss's two passes, or
// the gradient's one.
PassedKernels cross_entropy_kernels(const PassSource& source, bool gradient, int64_t rows) {
  PassedKernels passes;
  passes.threads = rows;
  passes.bytes = source.value_bytes;
  if (gradient) {
    passes.first = grid_stride_kernel(
        source.kind, source.parameters, source.setup,
        fmt::format("    sx::device::cuda::cross_entropy_gradient_row<{}>(operand0 + i * length, int64_t(operand1[i]), "
                    "{}[0], n, out + i * length, length);\n",
                    source.types, source.cotangent));
    return passes;
  }
  passes.first = grid_stride_kernel(
      source.kind, source.parameters, source.setup,
      source.scratch_of("float") +
          fmt::format("    scratch[i] = float(sx::device::cuda::picked_log_probability<{}>(operand0 + i * length, "
                      "length, int64_t(operand1[i])));\n",
                      source.types));
  passes.second = grid_stride_kernel(
      source.kind, source.parameters, "",
      source.scratch_of("float") +
          fmt::format("    out[0] = sx::device::cuda::cross_entropy_loss<{}>(scratch, n);\n", source.types),
      "1");
  passes.second_threads = 1;
  passes.bytes = source.scratch + static_cast<size_t>(rows) * sizeof(float);
  return passes;
}

// The kernels of the gradient of a norm's weight (each row's statistics, then a column's
// sum a thread) or bias (a column's sum a thread), of x's `rows` of `length`
// (gradient_math.h).
PassedKernels norm_parameter_kernels(const PassSource& source, const graph::Node& node, NormParameter parameter,
                                     int64_t rows, int64_t length, bool summed) {
  const bool centered = graph::gradient_of(node.attrs).id == graph::PrimId::layer_norm;
  const bool weight = parameter == NormParameter::weight;
  const std::string column = fmt::format(
      "    out[i] = sx::device::cuda::norm_parameter_gradient_column<{}, {}, {}>(operand0, {}, {}, n, length, i, "
      "{});\n",
      source.types, centered, weight, source.cotangent, weight ? "scratch" : "nullptr", summed);
  PassedKernels passes;
  passes.bytes = source.value_bytes;
  if (!weight) {
    passes.first = grid_stride_kernel(source.kind, source.parameters, "", column, "length");
    passes.threads = length;
    return passes;
  }
  const char* statistics = "sx::device::cuda::NormStatistics<float>";
  const double eps = graph::differentiated_attrs(node.attrs).get_double("eps");
  passes.first = grid_stride_kernel(
      source.kind, source.parameters, "",
      source.scratch_of(statistics) +
          fmt::format("    scratch[i] = sx::device::cuda::norm_statistics<{}, {}>(operand0 + i * length, length, "
                      "{});\n",
                      source.types, centered, exactly(eps)));
  passes.threads = rows;
  passes.second =
      grid_stride_kernel(source.kind, source.parameters, "", source.scratch_of(statistics) + column, "length");
  passes.second_threads = length;
  passes.bytes = source.scratch + static_cast<size_t>(rows) * sizeof(NormStatistics<float>);
  return passes;
}

}  // namespace

std::optional<PassedKernels> passed_kernels(const graph::Graph& graph, graph::NodeId id) {
  const graph::Node& node = graph.node(id);
  const bool gradient = node.op() == graph::PrimId::composite_gradient;
  const bool cross_entropy = node.op() == graph::PrimId::cross_entropy
                                 ? cross_entropy_kernel_takes(graph, node.inputs)
                                 : gradient && is_cross_entropy_gradient(graph, node);
  const std::optional<NormParameter> parameter = gradient ? norm_parameter_of(graph, node) : std::nullopt;
  if (!cross_entropy && !parameter) return std::nullopt;
  const graph::Node& x = graph.node(node.inputs[0]);
  PassSource source{
      .types = fmt::format("{}, {}", c_type(x.dtype), compute_type(x.dtype)),
      .kind = gradient ? "gradient" : "composite",
      .parameters = operand_parameters(graph, node) +
                    fmt::format("{}* __restrict__ out, int64_t n, int64_t length", c_type(node.dtype)),
      .setup = "",
      .cotangent = fmt::format("operand{}", node.inputs.size() - 1),
      .value_bytes = static_cast<size_t>(graph::numel(node.shape)) * graph::dtype_size(node.dtype),
  };
  source.scratch = (source.value_bytes + 15) / 16 * 16;
  if (std::optional<IndexCheck> check = index_check(graph, id)) {
    source.parameters += kIndexCheckParameters;
    source.setup = index_check_setup(*check);
  }
  const int64_t length = x.shape.back(), rows = graph::numel(x.shape) / length;
  if (cross_entropy) return cross_entropy_kernels(source, gradient, rows);
  // x of rank 1 is a single row of the parameter's shape: its terms are not summed.
  return norm_parameter_kernels(source, node, *parameter, rows, length, x.shape.size() > 1);
}

std::vector<Fusion> find_fusions(const graph::Graph& graph) {
  size_t count = graph.nodes.size();
  std::vector<std::vector<graph::NodeId>> readers(count);
  for (graph::NodeId id = 0; id < count; ++id) {
    for (graph::NodeId in : graph.nodes[id].inputs) {
      if (std::find(readers[in].begin(), readers[in].end(), id) == readers[in].end()) readers[in].push_back(id);
    }
  }
  std::vector<bool> joins(count, false);  // computed in its only reader's kernel
  std::vector<bool> is_output(count, false);
  for (const graph::NamedNode& output : graph.outputs) is_output[output.node] = true;
  for (graph::NodeId id = 0; id < count; ++id) {
    joins[id] = fusible(graph, id) && !is_output[id] && readers[id].size() == 1 && fusible(graph, readers[id][0]);
  }
  std::vector<Fusion> fusions;
  for (graph::NodeId root = 0; root < count; ++root) {
    if (!fusible(graph, root) || joins[root]) continue;
    Fusion fusion;
    std::vector<graph::NodeId> pending = {root};
    while (!pending.empty()) {
      graph::NodeId id = pending.back();
      pending.pop_back();
      fusion.nodes.push_back(id);
      for (graph::NodeId in : graph.node(id).inputs) {
        if (joins[in]) pending.push_back(in);
      }
    }
    std::sort(fusion.nodes.begin(), fusion.nodes.end());
    fusion.nodes.erase(std::unique(fusion.nodes.begin(), fusion.nodes.end()), fusion.nodes.end());
    for (graph::NodeId id : fusion.nodes) {
      for (graph::NodeId in : graph.node(id).inputs) {
        bool inside = std::binary_search(fusion.nodes.begin(), fusion.nodes.end(), in);
        if (!inside && std::find(fusion.operands.begin(), fusion.operands.end(), in) == fusion.operands.end()) {
          fusion.operands.push_back(in);
        }
      }
    }
    fusions.push_back(std::move(fusion));
  }
  return fusions;
}

GeneratedKernel generate_kernel(const graph::Graph& graph, const Fusion& fusion) {
  std::string parameters, body;
  std::map<graph::NodeId, size_t> local;
  for (size_t k = 0; k < fusion.operands.size(); ++k) {
    graph::NodeId operand = fusion.operands[k];
    const char* type = c_type(graph.node(operand).dtype);
    parameters += fmt::format("const {}* __restrict__ operand{}, ", type, k);
    body += fmt::format("    const {} v{} = operand{}[i];\n", type, k, k);
    local.emplace(operand, k);
  }
  for (graph::NodeId id : fusion.nodes) {
    local.emplace(id, local.size());
    body += element_line(graph, id, local);
  }
  graph::NodeId root = fusion.nodes.back();
  parameters += fmt::format("{}* __restrict__ out, int64_t n", c_type(graph.node(root).dtype));
  body += fmt::format("    out[i] = v{};\n", local.at(root));
  return grid_stride_kernel("fused", parameters, "", body);
}

}  // namespace sx::device::cuda
