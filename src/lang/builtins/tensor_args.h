// Shared by the tensor builtins: converting arguments to graph nodes, shapes and dtypes,
// and tracing an op at the call's span. Numbers meeting tensors become weak literals.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>

#include "graph/builder.h"
#include "lang/builtins/builtins.h"
#include "lang/tracer.h"

namespace sx::lang {

bool has_tensor(const Args& a);
// A tensor argument's node, or a number or boolean as a literal.
graph::NodeId node_arg(Args& a, size_t i);
// A shape: a vector or list of non-negative integers, or one integer.
graph::Shape shape_arg(Args& a, size_t i);
// A list of integers (axes, starts, ...): a vector, a list, or one integer.
std::vector<int64_t> ints_arg(Args& a, size_t i);
// Axes (docs/tensors.md, "Axes"): every operation names its axes with `:axis`, an integer
// or, where several axes make sense (reductions), a vector of them. Reductions still take
// the older `:axes`. The index of the `:axis` (or `:axes`) value among the arguments, if
// given; E-EVAL-006 when both are.
std::optional<size_t> axis_keyword(Args& a, std::map<std::string, size_t>& kw);
// The one axis of an operation that takes one (concat, gather, iota...): `:axis k` or
// `:axis [k]`, else `fallback`.
int64_t one_axis(Args& a, std::map<std::string, size_t>& kw, int64_t fallback);
// A dtype keyword: :f32 :bf16 :f64 :i32 :i64 :bool :u8 :u16.
graph::DType dtype_arg(Args& a, size_t i);

// Refuses (E-EVAL-015) an index of `indices`, argument `at`, outside 0 to depth-1 when its
// elements are known (a constant tensor), here where the call is; a computed one is
// checked when it runs (a checked one_hot, E-DEVICE-004).
void check_known_indices(Args& a, size_t at, graph::NodeId indices, int64_t depth);

// Emits what `build` builds, at the call's span; graph errors become E-SHAPE-001, named
// by the builtin called (`+`), not the graph op that refused (`add`).
Value trace(Args& a, const std::function<graph::NodeId(graph::Builder&)>& build);

// The elementwise forms of number builtins, used when an argument is a tensor.
Value tensor_fold(Args& a, std::string_view op);     // (+ a b c): add(add(a, b), c)
Value tensor_unary(Args& a, std::string_view op);    // (logical-not x)
Value tensor_compare(Args& a, std::string_view op);  // (< a b): a bool tensor
Value tensor_concat(Args& a);                        // (concat a b :axis 1) on tensors

}  // namespace sx::lang
