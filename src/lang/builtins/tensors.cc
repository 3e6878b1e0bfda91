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
  auto kw = a.keywords();
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
  auto kw = a.keywords();
  graph::Shape shape = shape_arg(a, 0);
  DType dtype = dtype_or(a, kw, DType::f32);
  return trace(a, [&](Builder& b) { return b.full(shape, dtype, value); });
}

Value full(Args& a) {
  auto kw = a.keywords();
  graph::Shape shape = shape_arg(a, 0);
  double value = a[1].is(Type::Bool) ? a[1].as_bool() : a.number(1);
  DType dtype = dtype_or(a, kw, a[1].is(Type::Int) ? DType::i32 : a[1].is(Type::Bool) ? DType::boolean : DType::f32);
  return trace(a, [&](Builder& b) { return b.full(shape, dtype, value); });
}

// (iota 4) is [0 1 2 3]; (iota [2 3] :axis 1) counts along axis 1.
Value iota(Args& a) {
  auto kw = a.keywords();
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
  auto kw = a.keywords();
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
  auto kw = a.keywords();
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
  auto kw = a.keywords();
  std::vector<NodeId> nodes;
  for (size_t i = 0; i < a.keywords_at(); ++i) {
    if (!as_tensor(a[i])) a.type_error(i, "a tensor, as the first argument is");
    nodes.push_back(as_tensor(a[i])->node);
  }
  int64_t axis = one_axis(a, kw, 0);
  return trace(a, [&](Builder& b) { return b.concat(nodes, axis); });
}

namespace {

// (pad x [low...] [high...] :value 0.0)
Value pad(Args& a) {
  auto kw = a.keywords();
  NodeId x = node_arg(a, 0);
  auto low = ints_arg(a, 1), high = ints_arg(a, 2);
  auto interior = kw.count("interior") ? ints_arg(a, kw["interior"]) : std::vector<int64_t>{};
  double value = kw.count("value") ? a.number(kw["value"]) : 0.0;
  return trace(a, [&](Builder& b) { return b.pad(x, low, high, interior, value); });
}

// (gather x indices :axis 0); (index table ids) is gather along axis 0.
Value gather(Args& a) {
  auto kw = a.keywords();
  NodeId x = node_arg(a, 0), indices = node_arg(a, 1);
  int64_t axis = one_axis(a, kw, 0);
  return trace(a, [&](Builder& b) { return b.gather(x, indices, axis); });
}

Value scatter_add(Args& a) {
  auto kw = a.keywords();
  NodeId x = node_arg(a, 0), indices = node_arg(a, 1), updates = node_arg(a, 2);
  int64_t axis = one_axis(a, kw, 0);
  return trace(a, [&](Builder& b) { return b.scatter_add(x, indices, updates, axis); });
}

// (one-hot indices depth :dtype d :checked true): an index outside the depth gives a row
// of zeros, or with :checked is an error: here when the indices are known, else when the
// graph runs (E-DEVICE-004).
Value one_hot(Args& a) {
  auto kw = a.keywords();
  NodeId indices = node_arg(a, 0);
  int64_t depth = a.integer(1);
  DType dtype = dtype_or(a, kw, DType::f32);
  const bool checked = kw.count("checked") && a[kw["checked"]].truthy();
  if (checked) check_known_indices(a, 0, indices, depth);
  return trace(a, [&](Builder& b) { return b.one_hot(indices, depth, dtype, checked); });
}

// (random-normal key [shape] :dtype :f32): key is an integer or an integer tensor.
Value random(Args& a, NodeId (Builder::*method)(NodeId, graph::Shape, DType)) {
  auto kw = a.keywords();
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
  install_rows(
      in, "Tensors",
      {
          {"tensor", tensor_literal, "(values &key dtype)",
           "A constant from nested vectors of numbers: f32 if any is a float, else i32 (bool for booleans).",
           "(list (tensor [1 2]) (tensor [1.5 2]) (tensor [[true]]))\n"
           ";; => ((tensor [1 2] :dtype :i32) (tensor [1.5 2.0] :dtype :f32) (tensor [[true]] :dtype :bool))"},
          {"zeros", [](Args& a) { return filled(a, 0.0); }, "(shape &key dtype)",
           "A tensor of zeros (f32 unless :dtype says).", "(zeros [2] :dtype :i32)\n;; => (tensor [0 0] :dtype :i32)"},
          {"ones", [](Args& a) { return filled(a, 1.0); }, "(shape &key dtype)",
           "A tensor of ones (f32 unless :dtype says).", "(ones [2])\n;; => (tensor [1.0 1.0] :dtype :f32)"},
          {"full", full, "(shape value &key dtype)", "A tensor with every element value.",
           "(full [2] 7.5)\n;; => (tensor [7.5 7.5] :dtype :f32)"},
          {"iota", iota, "(shape &key axis dtype)",
           "Each element's position along axis (default 0); i32 unless :dtype says.",
           "(list (iota 3) (iota [1 3] :axis 1 :dtype :f32))\n"
           ";; => ((tensor [0 1 2] :dtype :i32) (tensor [[0.0 1.0 2.0]] :dtype :f32))"},
          {"shape", shape_of, "(x)", "The shape of a tensor, a vector of integers.",
           "(shape (zeros [2 3]))\n;; => [2 3]"},
          {"rank", [](Args& a) { return Value::integer(static_cast<int64_t>(tensor_info(a, 0).shape.size())); }, "(x)",
           "The number of axes of a tensor.", "(rank (zeros [2 3]))\n;; => 2"},
          {"dtype", [](Args& a) { return make_keyword(graph::dtype_name(tensor_info(a, 0).dtype)); }, "(x)",
           "The dtype of a tensor, a keyword.", "(dtype (iota 3))\n;; => :i32"},
          {"item", item, "(x)", "The one element of a tensor as a number (a boolean for bool), run first where needed.",
           "(item (sum (tensor [1.5 2.0])))\n;; => 3.5"},
          {"cast",
           [](Args& a) {
             NodeId x = node_arg(a, 0);
             DType dtype = dtype_arg(a, 1);
             return trace(a, [&](Builder& b) { return b.cast(x, dtype); });
           },
           "(x dtype)", "x converted to dtype; floats to integers truncate and saturate.",
           "(cast (tensor [1.7 -2.5]) :i32)\n;; => (tensor [ 1 -2] :dtype :i32)"},
          {"reshape",
           [](Args& a) {
             NodeId x = node_arg(a, 0);
             graph::Shape shape = ints_arg(a, 1);
             return trace(a, [&](Builder& b) { return b.reshape(x, shape); });
           },
           "(x shape)", "The same elements in a new shape; one -1 is inferred.",
           "(shape (reshape (zeros [2 3]) [3 -1]))\n;; => [3 2]"},
          {"broadcast",
           [](Args& a) {
             NodeId x = node_arg(a, 0);
             graph::Shape shape = shape_arg(a, 1);
             return trace(a, [&](Builder& b) { return b.broadcast(x, shape); });
           },
           "(x shape)", "x broadcast to shape by NumPy's rule.",
           "(broadcast (tensor [1 2]) [1 2])\n;; => (tensor [[1 2]] :dtype :i32)"},
          {"transpose", transpose, "(x &optional perm)",
           "Axis i of the result is axis perm[i] of x; the axes reversed without perm.",
           "(shape (transpose (zeros [2 3 4]) [0 2 1]))\n;; => [2 4 3]"},
          {"slice", slice, "(x start stop &optional step)",
           "Per axis, the elements from start up to stop by step; shorter lists leave the last axes whole.",
           "(slice (iota 6) [1] [5] [2])\n;; => (tensor [1 3] :dtype :i32)"},
          {"concat-tensors", concat_tensors, "(tensors &key axis)", "A list of tensors joined along axis (default 0).",
           "(concat-tensors (list (iota 2) (iota 3)))\n;; => (tensor [0 1 0 1 2] :dtype :i32)"},
          {"pad", pad, "(x low high &key value interior)",
           "x with low elements before and high after each axis (and interior between), filled with value.",
           "(pad (ones [2]) [1] [2] :value 9.0)\n;; => (tensor [9.0 1.0 1.0 9.0 9.0] :dtype :f32)"},
          {"sum", [](Args& a) { return reduce(a, &Builder::sum); }, "(x &key axis keepdims axes)",
           "The sum over axis (an integer or a vector; every axis without); :keepdims keeps them as 1.",
           "(sum (tensor [[1 2] [3 4]]) :axis 1)\n;; => (tensor [3 7] :dtype :i32)"},
          {"reduce-max", [](Args& a) { return reduce(a, &Builder::reduce_max); }, "(x &key axis keepdims axes)",
           "The largest element over axis (every axis without).",
           "(reduce-max (tensor [[1 5] [3 4]]) :axis 0)\n;; => (tensor [3 5] :dtype :i32)"},
          {"reduce-min", [](Args& a) { return reduce(a, &Builder::reduce_min); }, "(x &key axis keepdims axes)",
           "The smallest element over axis (every axis without).",
           "(reduce-min (tensor [[1 5] [3 4]]))\n;; => (tensor 1 :dtype :i32)"},
          {"argmax", [](Args& a) { return reduce(a, &Builder::argmax); }, "(x &key axis keepdims axes)",
           "The i64 position of the largest element along axis (the first on ties).",
           "(argmax (tensor [[1 5] [4 3]]) :axis -1)\n;; => (tensor [1 0] :dtype :i64)"},
          {"argmin", [](Args& a) { return reduce(a, &Builder::argmin); }, "(x &key axis keepdims axes)",
           "The i64 position of the smallest element along axis (the first on ties).",
           "(argmin (tensor [4 2 8]))\n;; => (tensor 1 :dtype :i64)"},
          {"gather", gather, "(x indices &key axis)",
           "NumPy's take: the slices of x at indices along axis (default 0); an index outside the axis is an "
           "error when it runs (E-DEVICE-004).",
           "(gather (tensor [10 20 30]) (tensor [2 0]))\n;; => (tensor [30 10] :dtype :i32)"},
          {"index", gather, "(x indices &key axis)", "`gather`, by the name embeddings read well with.",
           "(index (tensor [[1 2] [3 4]]) (tensor [1]))\n;; => (tensor [[3 4]] :dtype :i32)"},
          {"scatter-add", scatter_add, "(x indices updates &key axis)",
           "x with updates added at the positions `gather` would read (its gradient).",
           "(scatter-add (zeros [3]) (tensor [0 2 0]) (ones [3]))\n;; => (tensor [2.0 0.0 1.0] :dtype :f32)"},
          {"one-hot", one_hot, "(indices depth &key dtype checked)",
           "indices' shape plus [depth], 1 at each index and 0 elsewhere (f32 unless :dtype says). An index "
           "outside 0 to depth-1 gives a row of zeros; with :checked true it is an error: E-EVAL-015 when the "
           "indices are a constant tensor, else E-DEVICE-004 when it runs.",
           "(one-hot (tensor [2]) 3)\n;; => (tensor [[0.0 0.0 1.0]] :dtype :f32)"},
          {"matmul", [](Args& a) { return binary(a, "matmul"); }, "(a b)",
           "The matrix product [..., m, k] by [..., k, n], broadcasting the leading axes.",
           "(matmul (ones [1 3]) (ones [3 2]))\n;; => (tensor [[3.0 3.0]] :dtype :f32)"},
          {"where",
           [](Args& a) {
             NodeId c = node_arg(a, 0), x = node_arg(a, 1), y = node_arg(a, 2);
             return trace(a, [&](Builder& b) { return b.where(c, x, y); });
           },
           "(condition a b)", "Elementwise, a where condition is true, else b.",
           "(where (tensor [true false]) (tensor [1.0 2.0]) 0.0)\n;; => (tensor [1.0 0.0] :dtype :f32)"},
          {"logical-and", [](Args& a) { return tensor_fold(a, "logical_and"); }, "(a b &rest more)",
           "Elementwise and of bool tensors.",
           "(logical-and (tensor [true true]) (tensor [true false]))\n;; => (tensor [ true false] :dtype :bool)"},
          {"logical-or", [](Args& a) { return tensor_fold(a, "logical_or"); }, "(a b &rest more)",
           "Elementwise or of bool tensors.",
           "(logical-or (tensor [false true]) (tensor [false false]))\n;; => (tensor [false  true] :dtype :bool)"},
          {"logical-not", [](Args& a) { return tensor_unary(a, "logical_not"); }, "(x)",
           "Elementwise not of a bool tensor.", "(logical-not (tensor [true]))\n;; => (tensor [false] :dtype :bool)"},
          {"stop-gradient", [](Args& a) { return tensor_unary(a, "stop_gradient"); }, "(x)",
           "x itself, held constant when a function is differentiated: no gradient flows through it.",
           "((grad (lambda (x) (sum (* x (stop-gradient x))))) (tensor [1.0 2.0]))\n"
           ";; => (tensor [1.0 2.0] :dtype :f32)"},
          {"random-normal", [](Args& a) { return random(a, &Builder::random_normal); }, "(key shape &key dtype)",
           "Standard normal numbers drawn from an integer key (Philox: the same on every device).",
           "(shape (random-normal 7 [2 3]))\n;; => [2 3]"},
          {"random-uniform", [](Args& a) { return random(a, &Builder::random_uniform); }, "(key shape &key dtype)",
           "Numbers uniform in [0, 1) drawn from an integer key.",
           "(item (reduce-max (random-uniform 7 [100])))\n;; => 0.9962227"},
          {"random-bernoulli", bernoulli, "(key p shape)", "A bool tensor, each element true with probability p.",
           "(dtype (random-bernoulli 7 0.9 [4]))\n;; => :bool"},
      });
}

}  // namespace sx::lang
