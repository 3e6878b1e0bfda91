// The composite primitives as builtins (graph/composite.h): one node each in the trace,
// which a device may run as one kernel, and which runs as its decomposition where the
// device has none. The standard library calls them under the names users know:
// sexpgpu/ops's softmax, log-softmax, normalize, rms-normalize, gelu, gelu-erf,
// cross-entropy and attention.
#include <fmt/format.h>

#include "lang/builtins/tensor_args.h"

namespace sx::lang {
namespace {

using graph::Attrs;
using graph::Builder;
using graph::NodeId;

NodeId tensor_node(Args& a, size_t i) {
  if (!as_tensor(a[i])) a.type_error(i, "a tensor");
  return node_arg(a, i);
}

// The tensor given as keyword `name`, or nothing where it is absent or nil.
std::optional<NodeId> optional_tensor(Args& a, std::map<std::string, size_t>& kw, const std::string& name) {
  if (!kw.count(name) || a[kw[name]].is_nil()) return std::nullopt;
  return tensor_node(a, kw[name]);
}

double eps_arg(Args& a, std::map<std::string, size_t>& kw, double fallback) {
  return kw.count("eps") ? a.number(kw["eps"]) : fallback;
}

Value over_axes(Args& a, std::string_view op) {
  auto kw = a.keywords();
  NodeId x = tensor_node(a, 0);
  std::vector<int64_t> axes = kw.count("axis") ? ints_arg(a, kw["axis"]) : std::vector<int64_t>{-1};
  return trace(a, [&](Builder& b) { return b.op(op, {x}, {{"axes", axes}}); });
}

Value layer_norm(Args& a) {
  auto kw = a.keywords();
  std::vector<NodeId> inputs{tensor_node(a, 0)};
  std::optional<NodeId> weight = optional_tensor(a, kw, "weight"), bias = optional_tensor(a, kw, "bias");
  if (weight) inputs.push_back(*weight);
  if (bias) inputs.push_back(*bias);
  Attrs attrs{
      {"eps", eps_arg(a, kw, 1e-5)}, {"weight", int64_t{weight.has_value()}}, {"bias", int64_t{bias.has_value()}}};
  return trace(a, [&](Builder& b) { return b.op("layer_norm", inputs, attrs); });
}

Value rms_norm(Args& a) {
  auto kw = a.keywords();
  std::vector<NodeId> inputs{tensor_node(a, 0)};
  std::optional<NodeId> weight = optional_tensor(a, kw, "weight");
  if (weight) inputs.push_back(*weight);
  Attrs attrs{{"eps", eps_arg(a, kw, 1e-6)}, {"weight", int64_t{weight.has_value()}}};
  return trace(a, [&](Builder& b) { return b.op("rms_norm", inputs, attrs); });
}

Value gelu(Args& a) {
  auto kw = a.keywords();
  NodeId x = tensor_node(a, 0);
  std::string form = "tanh";
  if (kw.count("form")) {
    const Value& v = a[kw["form"]];
    if (!v.is(Type::Keyword) || (v.as<Symbol>()->name != "tanh" && v.as<Symbol>()->name != "erf")) {
      a.type_error(kw["form"], ":tanh or :erf");
    }
    form = v.as<Symbol>()->name;
  }
  return trace(a, [&](Builder& b) { return b.op("gelu", {x}, {{"form", form}}); });
}

// A target known here (a constant tensor) that is not a class is refused here.
Value cross_entropy(Args& a) {
  NodeId logits = tensor_node(a, 0), targets = tensor_node(a, 1);
  const graph::Shape shape = a.interp.tracer()->graph().node(logits).shape;
  if (!shape.empty()) check_known_indices(a, 1, targets, shape.back());
  return trace(a, [&](Builder& b) { return b.op("cross_entropy", {logits, targets}); });
}

Value attention(Args& a) {
  auto kw = a.keywords();
  std::vector<NodeId> inputs{tensor_node(a, 0), tensor_node(a, 1), tensor_node(a, 2)};
  if (std::optional<NodeId> mask = optional_tensor(a, kw, "mask")) inputs.push_back(*mask);
  const bool causal = kw.count("causal") && a[kw["causal"]].truthy();
  return trace(a, [&](Builder& b) { return b.op("attention", inputs, {{"causal", int64_t{causal}}}); });
}

}  // namespace

void install_composite_builtins(Interpreter& in) {
  install_rows(
      in, "Composite primitives",
      {
          {"%softmax", [](Args& a) { return over_axes(a, "softmax"); }, "(x &key axis)",
           "The `softmax` primitive over axis (an integer or a vector; the last by default): sexpgpu/ops's `softmax`.",
           "(%softmax (tensor [0.0 0.0]))\n;; => (tensor [0.5 0.5] :dtype :f32)"},
          {"%log-softmax", [](Args& a) { return over_axes(a, "log_softmax"); }, "(x &key axis)",
           "The `log_softmax` primitive over axis (the last by default): sexpgpu/ops's `log-softmax`.",
           "(%log-softmax (tensor [0.0 0.0]))\n;; => (tensor [-0.6931472 -0.6931472] :dtype :f32)"},
          {"%layer-norm", layer_norm, "(x &key weight bias eps)",
           "The `layer_norm` primitive: the last axis to mean 0 and variance 1 (eps 1e-5), then times weight and "
           "plus bias where given: sexpgpu/ops's `normalize`.",
           "(%layer-norm (tensor [1.0 3.0]))\n;; => (tensor [-0.999995  0.999995] :dtype :f32)"},
          {"%rms-norm", rms_norm, "(x &key weight eps)",
           "The `rms_norm` primitive: the last axis to root-mean-square 1 (eps 1e-6), then times weight where "
           "given: sexpgpu/ops's `rms-normalize`.",
           "(%rms-norm (tensor [2.0 2.0]))\n;; => (tensor [0.9999999 0.9999999] :dtype :f32)"},
          {"%gelu", gelu, "(x &key form)",
           "The `gelu` primitive, :form :tanh (GPT-2's approximation, the default) or :erf (exact): sexpgpu/ops's "
           "`gelu` and `gelu-erf`.",
           "(%gelu (tensor [0.0 1.0]) :form :erf)\n;; => (tensor [      0.0 0.8413447] :dtype :f32)"},
          {"%cross-entropy", cross_entropy, "(logits targets)",
           "The `cross_entropy` primitive: the mean over rows of -log softmax(logits)[target]; a target that is not "
           "a class is an error: sexpgpu/ops's `cross-entropy`.",
           "(%cross-entropy (tensor [[0.0 0.0]]) (tensor [1]))\n;; => (tensor 0.6931472 :dtype :f32)"},
          {"%attention", attention, "(q k v &key mask causal)",
           "The `attention` primitive: softmax(q k^T / sqrt(d)) v over the last two axes, where mask (bool) is true "
           "and, with :causal true, each query sees only keys up to its own place: sexpgpu/ops's `attention`.",
           "(reshape (%attention (ones [2 1]) (ones [2 1]) (tensor [[1.0] [3.0]]) :causal true) [2])\n"
           ";; => (tensor [1.0 2.0] :dtype :f32)"},
      });
}

}  // namespace sx::lang
