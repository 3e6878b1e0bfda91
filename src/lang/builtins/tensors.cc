// Tensor builtins: constructors, shape operations, reductions, indexing, products,
// random numbers. Each traces one op of the graph (graph/builder.h) at the call's span.
#include <fmt/format.h>

#include <cstdlib>
#include <limits>
#include <type_traits>

#include "lang/builtins/tensor_args.h"
#include "lang/printer.h"

namespace sx::lang {
namespace {

using graph::Builder;
using graph::DType;
using graph::NodeId;

// Nested vectors (or lists) of numbers to a shape and the row-major leaves.
void flatten(Args& a, const Value& v, size_t depth, graph::Shape& shape, std::vector<Value>& out, bool& any_float,
             bool& all_bool) {
  bool sequence = v.is(Type::Vector) || v.is(Type::Cons);
  if (!sequence) {
    if (depth != shape.size() && !shape.empty()) {
      fail("E-SHAPE-001", a.span(0), "`tensor`: rows of different depths: every row must nest equally");
    }
    if (shape.size() < depth) shape.resize(depth);
    if (!v.is_number() && !v.is(Type::Bool)) a.type_error(0, "numbers or booleans in nested vectors");
    all_bool = all_bool && v.is(Type::Bool);
    any_float = any_float || v.is(Type::Float);
    out.push_back(v);
    return;
  }
  std::vector<Value> items = v.is(Type::Vector) ? v.as<Vector>()->items : list_items(v);
  auto n = static_cast<int64_t>(items.size());
  if (depth == shape.size() && out.empty()) shape.push_back(n);
  else if (depth >= shape.size() || shape[depth] != n) {
    fail("E-SHAPE-001", a.span(0), "`tensor`: rows of different lengths: every row along an axis must be as long");
  }
  for (const auto& item : items) flatten(a, item, depth + 1, shape, out, any_float, all_bool);
}

// Integer leaves go to integer dtypes exactly, not through a double (which holds
// neither every i64 nor 2^63); one that does not fit the dtype is E-EVAL-009.
graph::Tensor exact_integers(Args& a, DType dtype, const graph::Shape& shape, const std::vector<Value>& leaves) {
  graph::Tensor t(dtype, shape);
  graph::visit_dtype(dtype, [&](auto types) {
    using S = typename decltype(types)::storage;
    if constexpr (std::is_integral_v<S> && !std::is_same_v<S, bool>) {
      for (size_t i = 0; i < leaves.size(); ++i) {
        int64_t v = leaves[i].is(Type::Bool) ? leaves[i].as_bool() : leaves[i].as_int();
        bool fits = v >= static_cast<int64_t>(std::numeric_limits<S>::min()) &&
                    (v <= 0 || static_cast<uint64_t>(v) <= static_cast<uint64_t>(std::numeric_limits<S>::max()));
        if (!fits) {
          fail("E-EVAL-009", a.span(0), fmt::format("`tensor`: {} does not fit in {}", v, graph::dtype_name(dtype)));
        }
        t.data<S>()[i] = static_cast<S>(v);
      }
    }
  });
  return t;
}

Value tensor_literal(Args& a) {
  auto kw = a.keywords(1, {"dtype"});
  graph::Shape shape;
  std::vector<Value> leaves;
  bool any_float = false, all_bool = true;
  flatten(a, a[0], 0, shape, leaves, any_float, all_bool);
  DType dtype = leaves.empty() || any_float ? DType::f32 : all_bool ? DType::boolean : DType::i32;
  if (kw.count("dtype")) dtype = dtype_arg(a, kw["dtype"]);
  graph::Tensor value;
  if (graph::is_integer(dtype) && !any_float) {
    value = exact_integers(a, dtype, shape, leaves);
  } else {
    std::vector<double> numbers;
    for (const auto& leaf : leaves) numbers.push_back(leaf.is(Type::Bool) ? leaf.as_bool() : leaf.as_double());
    value = graph::Tensor::from_doubles(dtype, shape, numbers);
  }
  return trace(a, [&](Builder& b) { return b.constant(std::move(value)); });
}

DType dtype_or(Args& a, std::map<std::string, size_t>& kw, DType fallback) {
  return kw.count("dtype") ? dtype_arg(a, kw["dtype"]) : fallback;
}

Value filled(Args& a, double value) {
  auto kw = a.keywords(1, {"dtype"});
  graph::Shape shape = shape_arg(a, 0);
  DType dtype = dtype_or(a, kw, DType::f32);
  return trace(a, [&](Builder& b) { return b.full(shape, dtype, value); });
}

Value full(Args& a) {
  auto kw = a.keywords(2, {"dtype"});
  graph::Shape shape = shape_arg(a, 0);
  double value = a[1].is(Type::Bool) ? a[1].as_bool() : a.number(1);
  DType dtype = dtype_or(a, kw, a[1].is(Type::Int) ? DType::i32 : a[1].is(Type::Bool) ? DType::boolean : DType::f32);
  return trace(a, [&](Builder& b) { return b.full(shape, dtype, value); });
}

// (iota 4) is [0 1 2 3]; (iota [2 3] :axis 1) counts along axis 1.
Value iota(Args& a) {
  auto kw = a.keywords(1, {"dtype", "axis"});
  graph::Shape shape = shape_arg(a, 0);
  int64_t axis = one_axis(a, kw, 0);
  DType dtype = dtype_or(a, kw, DType::i32);
  return trace(a, [&](Builder& b) { return b.iota(shape, axis, dtype); });
}

const graph::Node& tensor_info(Args& a, size_t i) {
  const TensorValue* t = as_tensor(a[i]);
  if (!t) a.type_error(i, "a tensor");
  return t->info();
}

// (item x): the one element of a tensor as a number, run on the device first when it is
// traced (in eval and the REPL).
Value item(Args& a) {
  tensor_info(a, 0);
  Value shown = a.interp.materialized(a[0]);
  const TensorValue* run = as_tensor(shown);
  const graph::Node& n = run ? run->info() : tensor_info(a, 0);
  int64_t count = 1;
  for (int64_t d : n.shape) count *= d;
  if (count != 1) {
    fail("E-SHAPE-001", a.span(0),
         fmt::format("`item` reads a tensor of one element, not one of shape {}", graph::shape_str(n.shape)),
         "reduce it first, with (sum x) or (reduce-max x), or pick an element with (slice x ...)");
  }
  if (!n.value) {
    fail("E-EVAL-004", a.span(0), "`item` needs the value of a tensor that is computed, but nothing runs here",
         "`item` reads values in `sexpgpu eval` and the REPL; `check` and a traced function run nothing");
  }
  const graph::Tensor& t = *n.value;
  switch (t.dtype()) {
    case DType::boolean: return Value::boolean(t.value(0) != 0);
    case DType::i64: return Value::integer(t.data<int64_t>()[0]);
    case DType::i32:
    case DType::u16:
    case DType::u8: return Value::integer(static_cast<int64_t>(t.value(0)));
    case DType::f32:
    case DType::bf16: {
      // The float that prints as the element does: 0.1f reads as 0.1, not 0.10000000149011612.
      std::string text = fmt::format("{}", static_cast<float>(t.value(0)));
      char* end = nullptr;
      double d = std::strtod(text.c_str(), &end);
      return Value::number(end && *end == '\0' ? d : t.value(0));
    }
    default: return Value::number(t.value(0));
  }
}

Value shape_of(Args& a) {
  std::vector<Value> dims;
  for (int64_t d : tensor_info(a, 0).shape) dims.push_back(Value::integer(d));
  return make_vector(std::move(dims));
}

// Reductions: (sum x :axis [0 1] :keepdims true); all axes without :axis. `:axes` is the
// older name of `:axis`, still taken (docs/tensors.md, "Axes").
Value reduce(Args& a, NodeId (Builder::*method)(NodeId, std::vector<int64_t>, bool)) {
  auto kw = a.keywords(1, {"axis", "keepdims", "axes"});
  NodeId x = node_arg(a, 0);
  std::optional<size_t> axis_at = axis_keyword(a, kw);
  std::vector<int64_t> axes = axis_at ? ints_arg(a, *axis_at) : std::vector<int64_t>{};
  bool keepdims = kw.count("keepdims") && a[kw["keepdims"]].truthy();
  return trace(a, [&](Builder& b) { return (b.*method)(x, axes, keepdims); });
}

Value transpose(Args& a) {
  NodeId x = node_arg(a, 0);
  std::vector<int64_t> perm;
  if (a.size() > 1) {
    perm = ints_arg(a, 1);
  } else {
    auto rank = static_cast<int64_t>(a.interp.tracer()->graph().node(x).shape.size());
    for (int64_t d = rank - 1; d >= 0; --d) perm.push_back(d);
  }
  return trace(a, [&](Builder& b) { return b.transpose(x, perm); });
}

// (slice x [start...] [stop...] [step...]); shorter lists leave the last axes whole.
Value slice(Args& a) {
  NodeId x = node_arg(a, 0);
  auto start = ints_arg(a, 1), stop = ints_arg(a, 2);
  auto step = a.size() > 3 ? ints_arg(a, 3) : std::vector<int64_t>{};
  return trace(a, [&](Builder& b) { return b.slice(x, start, stop, step); });
}

// (concat-tensors (list a b) :axis 0)
Value concat_tensors(Args& a) {
  auto kw = a.keywords(1, {"axis"});
  std::vector<Value> items = a[0].is(Type::Vector) ? a[0].as<Vector>()->items : list_items(a.list(0));
  std::vector<NodeId> nodes;
  for (auto& item : items) {
    const TensorValue* t = as_tensor(item);
    if (!t) a.type_error(0, "a list of tensors");
    nodes.push_back(t->node);
  }
  int64_t axis = one_axis(a, kw, 0);
  return trace(a, [&](Builder& b) { return b.concat(nodes, axis); });
}

}  // namespace

// (concat a b c :axis 1), the tensor form of concat.
Value tensor_concat(Args& a) {
  size_t first_keyword = a.size();
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].is(Type::Keyword)) {
      first_keyword = i;
      break;
    }
  }
  auto kw = a.keywords(first_keyword, {"axis"});
  std::vector<NodeId> nodes;
  for (size_t i = 0; i < first_keyword; ++i) {
    if (!as_tensor(a[i])) a.type_error(i, "a tensor, as the first argument is");
    nodes.push_back(as_tensor(a[i])->node);
  }
  int64_t axis = one_axis(a, kw, 0);
  return trace(a, [&](Builder& b) { return b.concat(nodes, axis); });
}

namespace {

// (pad x [low...] [high...] :value 0.0)
Value pad(Args& a) {
  auto kw = a.keywords(3, {"value", "interior"});
  NodeId x = node_arg(a, 0);
  auto low = ints_arg(a, 1), high = ints_arg(a, 2);
  auto interior = kw.count("interior") ? ints_arg(a, kw["interior"]) : std::vector<int64_t>{};
  double value = kw.count("value") ? a.number(kw["value"]) : 0.0;
  return trace(a, [&](Builder& b) { return b.pad(x, low, high, interior, value); });
}

// (gather x indices :axis 0); (index table ids) is gather along axis 0.
Value gather(Args& a) {
  auto kw = a.keywords(2, {"axis"});
  NodeId x = node_arg(a, 0), indices = node_arg(a, 1);
  int64_t axis = one_axis(a, kw, 0);
  return trace(a, [&](Builder& b) { return b.gather(x, indices, axis); });
}

Value scatter_add(Args& a) {
  auto kw = a.keywords(3, {"axis"});
  NodeId x = node_arg(a, 0), indices = node_arg(a, 1), updates = node_arg(a, 2);
  int64_t axis = one_axis(a, kw, 0);
  return trace(a, [&](Builder& b) { return b.scatter_add(x, indices, updates, axis); });
}

Value one_hot(Args& a) {
  auto kw = a.keywords(2, {"dtype"});
  NodeId indices = node_arg(a, 0);
  int64_t depth = a.integer(1);
  DType dtype = dtype_or(a, kw, DType::f32);
  return trace(a, [&](Builder& b) { return b.one_hot(indices, depth, dtype); });
}

// (random-normal key [shape] :dtype :f32): key is an integer or an integer tensor.
Value random(Args& a, NodeId (Builder::*method)(NodeId, graph::Shape, DType)) {
  auto kw = a.keywords(2, {"dtype"});
  NodeId key = node_arg(a, 0);
  graph::Shape shape = shape_arg(a, 1);
  DType dtype = dtype_or(a, kw, DType::f32);
  return trace(a, [&](Builder& b) { return (b.*method)(key, shape, dtype); });
}

Value bernoulli(Args& a) {
  NodeId key = node_arg(a, 0);
  double p = a.number(1);
  graph::Shape shape = shape_arg(a, 2);
  return trace(a, [&](Builder& b) { return b.random_bernoulli(key, p, shape); });
}

Value binary(Args& a, std::string_view op) {
  NodeId x = node_arg(a, 0), y = node_arg(a, 1);
  return trace(a, [&](Builder& b) { return b.op(op, {x, y}); });
}

}  // namespace

void install_tensor_builtins(Interpreter& in) {
  constexpr int any = Builtin::kVariadic;
  install_rows(
      in,
      {
          {"tensor", 1, 3, tensor_literal},
          {"zeros", 1, 3, [](Args& a) { return filled(a, 0.0); }},
          {"ones", 1, 3, [](Args& a) { return filled(a, 1.0); }},
          {"full", 2, 4, full},
          {"iota", 1, 5, iota},
          {"shape", 1, 1, shape_of},
          {"rank", 1, 1, [](Args& a) { return Value::integer(static_cast<int64_t>(tensor_info(a, 0).shape.size())); }},
          {"dtype", 1, 1, [](Args& a) { return make_keyword(graph::dtype_name(tensor_info(a, 0).dtype)); }},
          {"item", 1, 1, item},
          {"cast", 2, 2,
           [](Args& a) {
             NodeId x = node_arg(a, 0);
             DType dtype = dtype_arg(a, 1);
             return trace(a, [&](Builder& b) { return b.cast(x, dtype); });
           }},
          {"reshape", 2, 2,
           [](Args& a) {
             NodeId x = node_arg(a, 0);
             graph::Shape shape = ints_arg(a, 1);
             return trace(a, [&](Builder& b) { return b.reshape(x, shape); });
           }},
          {"broadcast", 2, 2,
           [](Args& a) {
             NodeId x = node_arg(a, 0);
             graph::Shape shape = shape_arg(a, 1);
             return trace(a, [&](Builder& b) { return b.broadcast(x, shape); });
           }},
          {"transpose", 1, 2, transpose},
          {"slice", 3, 4, slice},
          {"concat-tensors", 1, 3, concat_tensors},
          {"pad", 3, 7, pad},
          {"sum", 1, 5, [](Args& a) { return reduce(a, &Builder::sum); }},
          {"reduce-max", 1, 5, [](Args& a) { return reduce(a, &Builder::reduce_max); }},
          {"reduce-min", 1, 5, [](Args& a) { return reduce(a, &Builder::reduce_min); }},
          {"argmax", 1, 5, [](Args& a) { return reduce(a, &Builder::argmax); }},
          {"argmin", 1, 5, [](Args& a) { return reduce(a, &Builder::argmin); }},
          {"gather", 2, 4, gather},
          {"index", 2, 4, gather},
          {"scatter-add", 3, 5, scatter_add},
          {"one-hot", 2, 4, one_hot},
          {"matmul", 2, 2, [](Args& a) { return binary(a, "matmul"); }},
          {"where", 3, 3,
           [](Args& a) {
             NodeId c = node_arg(a, 0), x = node_arg(a, 1), y = node_arg(a, 2);
             return trace(a, [&](Builder& b) { return b.where(c, x, y); });
           }},
          {"pow", 2, 2, [](Args& a) { return binary(a, "pow"); }},
          {"logical-and", 2, any, [](Args& a) { return tensor_fold(a, "logical_and"); }},
          {"logical-or", 2, any, [](Args& a) { return tensor_fold(a, "logical_or"); }},
          {"logical-not", 1, 1, [](Args& a) { return tensor_unary(a, "logical_not"); }},
          {"rsqrt", 1, 1, [](Args& a) { return tensor_unary(a, "rsqrt"); }},
          {"erf", 1, 1, [](Args& a) { return tensor_unary(a, "erf"); }},
          {"logistic", 1, 1, [](Args& a) { return tensor_unary(a, "logistic"); }},
          {"sign", 1, 1, [](Args& a) { return tensor_unary(a, "sign"); }},
          {"random-normal", 2, 4, [](Args& a) { return random(a, &Builder::random_normal); }},
          {"random-uniform", 2, 4, [](Args& a) { return random(a, &Builder::random_uniform); }},
          {"random-bernoulli", 3, 3, bernoulli},
      });
}

}  // namespace sx::lang
