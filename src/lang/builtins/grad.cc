// `grad` and `value-and-grad`: functions that trace f and append its reverse-mode
// gradient (graph/autodiff.h) to the same graph.
#include <fmt/format.h>

#include "graph/autodiff.h"
#include "graph/errors.h"
#include "lang/builtins/tensor_args.h"
#include "lang/printer.h"

namespace sx::lang {
namespace {

// Calls f on fresh copies of its tensor arguments, so tensors f closes over that were
// computed from an argument stay constants, as in JAX; then differentiates.
Value differentiate(Args& a, const Value& f, bool with_value) {
  const auto& tracer = a.interp.tracer();
  graph::Builder& b = tracer->builder();
  std::vector<Value> args(a.values.begin(), a.values.end());
  std::vector<graph::NodeId> wrt;
  std::vector<bool> is_tensor;
  tracer->at(a.call);
  for (auto& arg : args) {
    const TensorValue* t = as_tensor(arg);
    is_tensor.push_back(t != nullptr);
    if (!t) continue;
    const graph::Node& n = t->info();
    graph::NodeId copy = b.emit(graph::primitive("reshape"), {t->node}, {{"shape", n.shape}});
    wrt.push_back(copy);
    arg = make_tensor(tracer, copy);
  }
  if (wrt.empty()) fail("E-EVAL-004", a.call, fmt::format("`{}` needs at least one tensor argument", a.function));
  std::vector<Span> spans(a.spans.begin(), a.spans.end());
  Value result = a.interp.apply(f, args, spans, a.call);
  const TensorValue* loss = as_tensor(result);
  if (!loss || !loss->info().shape.empty() || !graph::is_float(loss->info().dtype)) {
    fail("E-SHAPE-001", a.call,
         fmt::format("`{}`: the function must return a floating-point scalar tensor, not {}", a.function,
                     loss ? fmt::format("a tensor of shape {}", graph::shape_str(loss->info().shape)) : print(result)));
  }
  tracer->at(a.call);
  std::vector<graph::NodeId> grads;
  try {
    grads = graph::gradients(b, loss->node, wrt);
  } catch (const graph::GraphError& e) {
    fail("E-SHAPE-001", a.call, e.what());
  }
  std::vector<Value> out;
  for (size_t i = 0, g = 0; i < args.size(); ++i)
    out.push_back(is_tensor[i] ? make_tensor(tracer, grads[g++]) : Value());
  Value gradient = out.size() == 1 ? out[0] : list(std::move(out));
  return with_value ? list({result, gradient}) : gradient;
}

Value make_grad(Args& a, bool with_value) {
  Value f = a.callable(0);
  std::string name = fmt::format("({} {})", a.function, f.as<Function>()->name);
  return Value(new NativeClosure(name, [f, with_value](Args& call) { return differentiate(call, f, with_value); }));
}

}  // namespace

void install_grad_builtins(Interpreter& in) {
  install_rows(in, "Gradients",
               {
                   {"grad", 1, 1, [](Args& a) { return make_grad(a, false); }, "(f)",
                    "A function that calls f and gives the gradient of its scalar result for each tensor argument.",
                    "((grad (lambda (x) (sum (* x x)))) (tensor [1.0 2.0]))\n;; => (tensor [2.0 4.0] :dtype :f32)"},
                   {"value-and-grad", 1, 1, [](Args& a) { return make_grad(a, true); }, "(f)",
                    "As `grad`, but the function gives (list value gradient).",
                    "(first ((value-and-grad (lambda (x) (sum (* x x)))) (tensor [1.0 2.0])))\n"
                    ";; => (tensor 5.0 :dtype :f32)"},
               });
}

}  // namespace sx::lang
