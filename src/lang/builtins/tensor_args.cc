// Argument conversion and tracing for tensor builtins.
#include "lang/builtins/tensor_args.h"

#include <fmt/format.h>

#include "graph/errors.h"
#include "graph/primitive.h"
#include "lang/printer.h"

namespace sx::lang {

bool has_tensor(const Args& a) {
  for (size_t i = 0; i < a.size(); ++i) {
    if (as_tensor(a[i])) return true;
  }
  return false;
}

graph::NodeId node_arg(Args& a, size_t i) {
  graph::Builder& b = a.interp.tracer()->builder();
  if (const TensorValue* t = as_tensor(a[i])) {
    if (t->tracer != a.interp.tracer()) a.type_error(i, "a tensor of this evaluation");
    return t->node;
  }
  a.interp.tracer()->at(a.span(i));
  if (a[i].is(Type::Int)) return b.literal_int(a[i].as_int());
  if (a[i].is(Type::Float)) return b.literal(a[i].as_float());
  if (a[i].is(Type::Bool)) return b.scalar(a[i].as_bool() ? 1 : 0, graph::DType::boolean);
  a.type_error(i, "a tensor or a number");
}

std::vector<int64_t> ints_arg(Args& a, size_t i) {
  std::vector<int64_t> out;
  auto take = [&](const Value& v) {
    if (!v.is(Type::Int)) a.type_error(i, "integers (a vector like [2 3])");
    out.push_back(v.as_int());
  };
  if (a[i].is(Type::Int)) take(a[i]);
  else if (a[i].is(Type::Vector))
    for (const auto& v : a[i].as<Vector>()->items) take(v);
  else if (a[i].is_list())
    for (Cons* c = as_cons(a[i]); c; c = next(c)) take(c->car);
  else a.type_error(i, "integers (a vector like [2 3])");
  return out;
}

graph::Shape shape_arg(Args& a, size_t i) {
  std::vector<int64_t> dims = ints_arg(a, i);
  for (int64_t d : dims) {
    if (d < 0)
      fail("E-SHAPE-001", a.span(i),
           fmt::format("`{}`: a shape has no negative sizes: {}", a.function, printed_in_message(a[i])));
  }
  return dims;
}

std::optional<size_t> axis_keyword(Args& a, std::map<std::string, size_t>& kw) {
  if (kw.count("axis") && kw.count("axes")) {
    fail("E-EVAL-006", a.span(kw["axes"] - 1), fmt::format("`{}` is given both `:axis` and `:axes`", a.function),
         "`:axes` is the older name of `:axis`; give one, an integer or a vector of axes");
  }
  if (kw.count("axis")) return kw["axis"];
  if (kw.count("axes")) return kw["axes"];
  return std::nullopt;
}

int64_t one_axis(Args& a, std::map<std::string, size_t>& kw, int64_t fallback) {
  auto at = axis_keyword(a, kw);
  if (!at) return fallback;
  const Value& v = a[*at];
  if (v.is(Type::Int)) return v.as_int();
  if (v.is(Type::Vector) && v.as<Vector>()->items.size() == 1 && v.as<Vector>()->items[0].is(Type::Int)) {
    return v.as<Vector>()->items[0].as_int();
  }
  fail("E-EVAL-004", a.span(*at),
       fmt::format("`:axis` of `{}` must be one axis, an integer, not {} `{}`", a.function, type_name(v.type()),
                   printed_in_message(v)),
       fmt::format("`{}` works along one axis; only reductions take several", a.function));
}

graph::DType dtype_arg(Args& a, size_t i) {
  if (a[i].is(Type::Keyword)) {
    if (auto dtype = graph::parse_dtype(a[i].as<Symbol>()->name)) return *dtype;
  }
  a.type_error(i, "a dtype (:f32 :bf16 :f64 :i32 :i64 :bool :u8 :u16)");
}

void check_known_indices(Args& a, size_t at, graph::NodeId indices, int64_t depth) {
  const graph::Node& node = a.interp.tracer()->graph().node(indices);
  if (!node.value) return;
  const graph::Tensor& known = *node.value;
  for (int64_t i = 0; i < known.numel(); ++i) {
    double index = known.value(i);
    if (index < 0 || index >= static_cast<double>(depth)) {
      fail(
          "E-EVAL-015", a.span(at),
          fmt::format("index {} (element {} of the indices) is outside the depth {}", element_text(known, i), i, depth),
          fmt::format("an index is a class from 0 to {}", depth - 1));
    }
  }
}

namespace {

// A graph error begins with the op that refused it (`add: cannot broadcast ...`), which
// may be an internal name or one of several ops a builtin builds; the message names the
// builtin the program called (`+`) instead.
std::string named_by_the_call(const Args& a, std::string_view message) {
  size_t colon = message.find(": ");
  if (colon != std::string_view::npos && graph::find_primitive(message.substr(0, colon))) {
    message.remove_prefix(colon + 2);
  }
  return fmt::format("`{}`: {}", a.function, message);
}

}  // namespace

Value trace(Args& a, const std::function<graph::NodeId(graph::Builder&)>& build) {
  const auto& tracer = a.interp.tracer();
  tracer->at(a.call);
  try {
    return make_tensor(tracer, build(tracer->builder()));
  } catch (const graph::GraphError& e) {
    fail("E-SHAPE-001", a.call, named_by_the_call(a, e.what()));
  }
}

Value tensor_fold(Args& a, std::string_view op) {
  std::vector<graph::NodeId> nodes;
  for (size_t i = 0; i < a.size(); ++i) nodes.push_back(node_arg(a, i));
  return trace(a, [&](graph::Builder& b) {
    if (nodes.size() == 1) {
      if (op == "sub") return b.neg(nodes[0]);
      if (op == "div") return b.div(b.literal(1.0), nodes[0]);
      return nodes[0];
    }
    graph::NodeId acc = nodes[0];
    for (size_t i = 1; i < nodes.size(); ++i) acc = b.op(op, {acc, nodes[i]});
    return acc;
  });
}

Value tensor_unary(Args& a, std::string_view op) {
  graph::NodeId x = node_arg(a, 0);
  return trace(a, [&](graph::Builder& b) { return b.op(op, {x}); });
}

Value tensor_compare(Args& a, std::string_view op) {
  if (a.size() != 2) {
    fail("E-EVAL-003", a.call, fmt::format("`{}` on tensors compares two arguments, given {}", a.function, a.size()));
  }
  graph::NodeId x = node_arg(a, 0), y = node_arg(a, 1);
  return trace(a, [&](graph::Builder& b) { return b.op(op, {x, y}); });
}

}  // namespace sx::lang
