// Tensor values and their printing.
#include "lang/tracer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "lang/printer.h"

namespace sx::lang {

void Tracer::at(Span span) {
  origins_.push_back(span);
  builder_.set_origin(static_cast<uint32_t>(origins_.size() - 1));
}

size_t Tracer::compact() {
  std::vector<graph::Node>& nodes = graph_.nodes;
  std::vector<bool> keep(nodes.size(), false);
  std::vector<graph::NodeId> pending;
  auto reach = [&](graph::NodeId id) {
    if (!keep[id]) keep[id] = true, pending.push_back(id);
  };
  for (const graph::NamedNode& in : graph_.inputs) reach(in.node);
  for (const graph::NamedNode& out : graph_.outputs) reach(out.node);
  for (const TensorValue* tensor : live_) reach(tensor->node);
  while (!pending.empty()) {
    graph::NodeId id = pending.back();
    pending.pop_back();
    for (graph::NodeId in : nodes[id].inputs) reach(in);
  }
  // Nodes keep their order (an input precedes its users), and origins their spans.
  NodeRemap remap(nodes.size(), kDropped);
  std::vector<uint32_t> origin_remap(origins_.size(), 0);
  std::vector<Span> origins{Span{}};
  std::vector<graph::Node> kept;
  for (graph::NodeId id = 0; id < nodes.size(); ++id) {
    if (!keep[id]) continue;
    graph::Node node = std::move(nodes[id]);
    for (graph::NodeId& in : node.inputs) in = remap[in];
    if (node.origin != 0 && origin_remap[node.origin] == 0) {
      origin_remap[node.origin] = static_cast<uint32_t>(origins.size());
      origins.push_back(origins_[node.origin]);
    }
    node.origin = origin_remap[node.origin];
    remap[id] = static_cast<graph::NodeId>(kept.size());
    kept.push_back(std::move(node));
  }
  size_t dropped = nodes.size() - kept.size();
  nodes = std::move(kept);
  origins_ = std::move(origins);
  builder_.set_origin(0);
  for (graph::NamedNode& in : graph_.inputs) in.node = remap[in.node];
  for (graph::NamedNode& out : graph_.outputs) out.node = remap[out.node];
  for (TensorValue* tensor : live_) tensor->node = remap[tensor->node];
  std::set<graph::NodeId> arguments;
  for (graph::NodeId id : arguments_) {
    if (remap[id] != kDropped) arguments.insert(remap[id]);
  }
  arguments_ = std::move(arguments);
  for (const auto& listener : listeners_) listener(remap);
  return dropped;
}

Value make_tensor(const std::shared_ptr<Tracer>& tracer, graph::NodeId node) {
  return Value(new TensorValue(tracer, node));
}

namespace {
size_t print_limit = 1000;
}  // namespace

size_t tensor_print_limit() { return print_limit; }
void set_tensor_print_limit(size_t max_elements) { print_limit = max_elements; }

std::string TensorValue::print() const {
  const graph::Node& n = info();
  if (n.value) return format_tensor(*n.value);
  return fmt::format("#<tensor {}{}>", graph::dtype_name(n.dtype), graph::shape_str(n.shape));
}

std::string element_text(const graph::Tensor& t, int64_t i) {
  double v = t.value(i);
  switch (t.dtype()) {
    case graph::DType::boolean: return v != 0 ? "true" : "false";
    case graph::DType::f64: return format_float(v);
    case graph::DType::f32:
    case graph::DType::bf16: {
      // The shortest text that reads back as the same f32.
      auto f = static_cast<float>(v);
      if (std::isnan(f) || std::isinf(f)) return format_float(v);
      std::string text = fmt::format("{}", f);
      if (text.find_first_of(".e") == std::string::npos) text += ".0";
      return text;
    }
    // Integers print from their storage: a double holds neither every i64 nor 2^63.
    case graph::DType::i64: return fmt::format("{}", t.data<int64_t>()[i]);
    case graph::DType::i32: return fmt::format("{}", t.data<int32_t>()[i]);
    case graph::DType::u16: return fmt::format("{}", t.data<uint16_t>()[i]);
    case graph::DType::u8: return fmt::format("{}", t.data<uint8_t>()[i]);
  }
  return "?";
}

namespace {

// Which indices of an axis of length n are shown: all, or the first and last three.
std::vector<int64_t> shown(int64_t n, bool elide) {
  std::vector<int64_t> idx;
  if (!elide || n <= 6) {
    for (int64_t i = 0; i < n; ++i) idx.push_back(i);
  } else {
    for (int64_t i : {int64_t{0}, int64_t{1}, int64_t{2}, int64_t{-1}, n - 3, n - 2, n - 1}) idx.push_back(i);
  }
  return idx;
}

}  // namespace

std::string format_tensor(const graph::Tensor& t, size_t max_elements, const ElementText& element) {
  const graph::Shape& shape = t.shape();
  // Nested brackets cannot say the length of the axes after an empty one: [0 2] would
  // print as [] and read back as [0]. The constructor says the shape.
  if (t.numel() == 0)
    return fmt::format("(zeros {} :dtype :{})", graph::shape_str(shape, " "), graph::dtype_name(t.dtype()));
  bool elide = max_elements != 0 && static_cast<size_t>(t.numel()) > max_elements;
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];

  // Only the elements shown are turned into text.
  std::vector<bool> visible(static_cast<size_t>(t.numel()), !elide);
  if (elide) {
    auto mark = [&](auto&& self, size_t axis, int64_t base) -> void {
      if (axis == shape.size()) {
        visible[static_cast<size_t>(base)] = true;
        return;
      }
      for (int64_t i : shown(shape[axis], true)) {
        if (i >= 0) self(self, axis + 1, base + i * strides[axis]);
      }
    };
    mark(mark, 0, 0);
  }
  size_t width = 0;
  std::vector<std::string> texts(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (!visible[static_cast<size_t>(i)]) continue;
    texts[static_cast<size_t>(i)] = element ? element(t, i) : element_text(t, i);
    width = std::max(width, texts[static_cast<size_t>(i)].size());
  }
  std::string out = "(tensor ";
  const size_t indent = out.size();
  // Writes the sub-array at `axis` starting at element `base`.
  auto write = [&](auto&& self, size_t axis, int64_t base) -> void {
    if (axis == shape.size()) {
      out += fmt::format("{:>{}}", texts[static_cast<size_t>(base)], width);
      return;
    }
    out += '[';
    bool first = true;
    for (int64_t i : shown(shape[axis], elide)) {
      if (!first) {
        if (axis + 1 == shape.size()) out += ' ';
        else out += std::string(shape.size() - axis - 1, '\n') + std::string(indent + axis + 1, ' ');
      }
      first = false;
      if (i < 0) out += "...";
      else self(self, axis + 1, base + i * strides[axis]);
    }
    out += ']';
  };
  write(write, 0, 0);
  out += fmt::format(" :dtype :{})", graph::dtype_name(t.dtype()));
  // An elided tensor no longer shows its shape by its nesting: say it.
  if (elide) out += " ; shape " + graph::shape_str(shape, " ");
  return out;
}

}  // namespace sx::lang
