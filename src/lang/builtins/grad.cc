// `grad` and `value-and-grad`: functions that trace f and append its reverse-mode
// gradient (graph/autodiff.h) to the same graph, over the tensors in their arguments,
// which may be lists, plists and vectors of them (pytrees, as in JAX).
#include <fmt/format.h>

#include <functional>

#include "graph/autodiff.h"
#include "graph/errors.h"
#include "lang/builtins/tensor_args.h"
#include "lang/printer.h"

namespace sx::lang {
namespace {

// Arguments are pytrees, as in JAX: lists, plists and vectors of values, nested; their
// tensors are the leaves differentiated. Deeper nesting than this is refused.
constexpr size_t kMaxNesting = 1000;

// `v` with each leaf replaced by leaf(v): lists (proper or not) and vectors are walked,
// their elements in order, and keep their spans.
Value map_tree(const Value& v, const std::function<Value(const Value&)>& leaf, size_t depth, Args& a) {
  if (depth > kMaxNesting) {
    fail("E-EVAL-008", a.call,
         fmt::format("`{}`: the arguments nest lists and vectors more than {} deep", a.function, kMaxNesting));
  }
  if (v.is(Type::Vector)) {
    const auto* vec = v.as<Vector>();
    std::vector<Value> items;
    for (const auto& item : vec->items) items.push_back(map_tree(item, leaf, depth + 1, a));
    return Value(new Vector(std::move(items), vec->spans));
  }
  if (v.is(Type::Cons)) {
    std::vector<Value> items;
    std::vector<Span> spans;
    const Cons* c = v.as<Cons>();
    for (;;) {
      items.push_back(map_tree(c->car, leaf, depth + 1, a));
      spans.push_back(c->car_span);
      if (const Cons* n = next(c)) {
        c = n;
        continue;
      }
      break;
    }
    Value out = c->cdr.is_nil() ? Value() : leaf(c->cdr);
    for (size_t i = items.size(); i-- > 0;) out = cons(std::move(items[i]), std::move(out), spans[i]);
    return out;
  }
  return leaf(v);
}

// Calls f on its arguments with every tensor in them replaced by a fresh copy, so tensors
// f closes over that were computed from an argument stay constants, as in JAX; then
// differentiates. The gradient has the arguments' structure: each tensor its gradient,
// each keyword, string or symbol itself (a plist keeps its keys), anything else nil. A
// model's parameter from `(parameters model)` is not copied: its gradient counts every
// use, so f may call the model that reads it.
Value differentiate(Args& a, const Value& f, bool with_value) {
  const auto& tracer = a.interp.tracer();
  graph::Builder& b = tracer->builder();
  std::vector<Value> args;
  std::vector<graph::NodeId> wrt;
  tracer->at(a.call);
  auto copy = [&](const Value& leaf) {
    const TensorValue* t = as_tensor(leaf);
    if (!t) return leaf;
    if (t->parameter) {
      wrt.push_back(t->node);
      return leaf;
    }
    graph::NodeId id = b.emit(graph::primitive(graph::PrimId::reshape), {t->node}, {{"shape", t->info().shape}});
    tracer->mark_argument(id);
    wrt.push_back(id);
    return make_tensor(tracer, id);
  };
  for (const auto& arg : a.values) args.push_back(map_tree(arg, copy, 0, a));
  if (wrt.empty()) {
    fail(
        "E-EVAL-004", a.call,
        fmt::format("`{}` needs a tensor among its arguments (or in the lists, vectors and plists given)", a.function));
  }
  std::vector<Span> spans(a.spans.begin(), a.spans.end());
  Value result = a.interp.apply(f, args, spans, a.call);
  const TensorValue* loss = as_tensor(result);
  if (!loss) {
    fail("E-SHAPE-001", a.call,
         fmt::format("`{}`: the function must return a floating-point scalar tensor, not {}", a.function,
                     printed_in_message(result)));
  }
  const graph::Node& n = loss->info();
  bool scalar = n.shape.empty(), floating = graph::is_float(n.dtype);
  if (!scalar || !floating) {
    // Name only what is wrong: an integer scalar's shape is fine.
    std::string wrong = scalar ? "" : fmt::format("shape {}", graph::shape_str(n.shape));
    if (!floating) wrong += fmt::format("{}dtype {}", scalar ? "" : " and ", graph::dtype_name(n.dtype));
    fail("E-SHAPE-001", a.call,
         fmt::format("`{}`: the function must return a floating-point scalar tensor, not one of {}", a.function, wrong),
         floating ? "reduce it to one number, as with (sum x)"
                  : "gradients are of floats: give float tensors, as (tensor [1.0 2.0]), or (cast x :f32) inside");
  }
  tracer->at(a.call);
  std::vector<graph::NodeId> grads;
  try {
    grads = graph::gradients(b, loss->node, wrt);
  } catch (const graph::GraphError& e) {
    fail("E-SHAPE-001", a.call, e.what());
  }
  size_t next_grad = 0;
  auto gradient_of = [&](const Value& leaf) {
    if (as_tensor(leaf)) return make_tensor(tracer, grads[next_grad++]);
    if (leaf.is(Type::Keyword) || leaf.is(Type::String) || leaf.is(Type::Symbol)) return leaf;
    return Value();
  };
  std::vector<Value> out;
  for (const auto& arg : args) out.push_back(map_tree(arg, gradient_of, 0, a));
  Value gradient = out.size() == 1 ? out[0] : list(std::move(out));
  return with_value ? list({result, gradient}) : gradient;
}

Value make_grad(Args& a, bool with_value) {
  Value f = a.callable(0);
  // Its name is shown in messages: the function's own name shortened, as a message shows names.
  std::string name = fmt::format("({} {})", a.function, shown_in_message(f.as<Function>()->name));
  return Value(new NativeClosure(name, [f, with_value](Args& call) { return differentiate(call, f, with_value); }));
}

}  // namespace

void install_grad_builtins(Interpreter& in) {
  install_rows(in, "Gradients",
               {
                   {"grad", [](Args& a) { return make_grad(a, false); }, "(f)",
                    "A function that calls f and gives the gradient of its scalar result for each tensor argument; "
                    "arguments may be lists, plists and vectors of tensors, and their gradient has their shape.",
                    "((grad (lambda (x) (sum (* x x)))) (tensor [1.0 2.0]))\n;; => (tensor [2.0 4.0] :dtype :f32)"},
                   {"value-and-grad", [](Args& a) { return make_grad(a, true); }, "(f)",
                    "As `grad`, but the function gives (list value gradient).",
                    "(first ((value-and-grad (lambda (x) (sum (* x x)))) (tensor [1.0 2.0])))\n"
                    ";; => (tensor 5.0 :dtype :f32)"},
               });
}

}  // namespace sx::lang
