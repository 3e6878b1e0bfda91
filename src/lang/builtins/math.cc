// Elementwise math: one row per Lisp name, with the primitive it traces and what it
// computes on numbers, so that every name behaves alike. With a tensor among the
// arguments it traces the primitive (numbers beside it are weak literals); on numbers it
// gives a number: a float, from the primitive's own formula (graph/prims/scalar.h), but
// where a row has an exact integer rule (abs, sign, expt) integers give an integer.
//
// pow and expt are one function with two rules on numbers: pow always raises in floating
// point, expt is exact for an integer base and a non-negative integer power (E-EVAL-009
// past 64 bits) and otherwise pow. On tensors both are the pow primitive.
#include <cstdint>
#include <limits>
#include <optional>
#include <utility>

#include "graph/prims/scalar.h"
#include "lang/builtins/tensor_args.h"

namespace sx::lang {
namespace {

namespace scalar = graph::prims::scalar;

// The integer result of integer arguments (y is 0 for a function of one), or nullopt
// where there is none for them (a negative power), which then give the float.
using ExactFn = std::optional<int64_t> (*)(const Args& a, int64_t x, int64_t y);

struct MathRow {
  std::string_view name;                     // the Lisp name
  std::string_view primitive;                // traced when an argument is a tensor
  double (*on_numbers)(double x, double y);  // y is 0 for a function of one argument
  ExactFn exact;                             // nullptr: integers give a float, as sqrt's do
  std::string_view params;                   // "(x)" or "(x y)": the arity
  std::string_view summary;
  std::string_view example;
};

template <class Formula>
double one(double x, double) {
  return Formula{}(x);
}

template <class Formula>
double two(double x, double y) {
  return Formula{}(x, y);
}

std::optional<int64_t> exact_abs(const Args& a, int64_t x, int64_t) {
  if (x == std::numeric_limits<int64_t>::min()) integer_overflow(a, a.function);
  return x < 0 ? -x : x;
}

std::optional<int64_t> exact_sign(const Args&, int64_t x, int64_t) { return scalar::Sign{}(x); }

std::optional<int64_t> exact_power(const Args& a, int64_t base, int64_t exponent) {
  if (exponent < 0) return std::nullopt;
  int64_t result = 1;
  while (exponent > 0) {
    if ((exponent & 1) && __builtin_mul_overflow(result, base, &result)) integer_overflow(a, a.function);
    exponent >>= 1;
    if (exponent > 0 && __builtin_mul_overflow(base, base, &base)) integer_overflow(a, a.function);
  }
  return result;
}

constexpr MathRow kRows[] = {
    {"abs", "abs", one<scalar::Abs>, exact_abs, "(x)",
     "The absolute value: an integer for an integer, else a float; on a tensor, the `abs` primitive.",
     "(list (abs -4) (abs -2.5) (abs (tensor [-1 2])))\n;; => (4 2.5 (tensor [1 2] :dtype :i32))"},
    {"sign", "sign", one<scalar::Sign>, exact_sign, "(x)",
     "-1, 0 or 1 by x's sign: an integer for an integer, else a float; on a tensor, the `sign` primitive.",
     "(list (sign -3) (sign 0.5) (sign (tensor [-2.5 0.0])))\n;; => (-1 1.0 (tensor [-1.0  0.0] :dtype :f32))"},
    {"exp", "exp", one<scalar::Exp>, nullptr, "(x)", "e to the power x: a float; on a tensor, the `exp` primitive.",
     "(exp 0)\n;; => 1.0"},
    {"log", "log", one<scalar::Log>, nullptr, "(x)",
     "The natural logarithm: a float; on a tensor, the `log` primitive.", "(log 1)\n;; => 0.0"},
    {"sqrt", "sqrt", one<scalar::Sqrt>, nullptr, "(x)", "The square root: a float; on a tensor, the `sqrt` primitive.",
     "(sqrt 16)\n;; => 4.0"},
    {"rsqrt", "rsqrt", one<scalar::Rsqrt>, nullptr, "(x)", "1/sqrt(x): a float; on a tensor, the `rsqrt` primitive.",
     "(list (rsqrt 4) (rsqrt (tensor [4.0])))\n;; => (0.5 (tensor [0.5] :dtype :f32))"},
    {"sin", "sin", one<scalar::Sin>, nullptr, "(x)",
     "The sine of x radians: a float; on a tensor, the `sin` primitive.", "(sin 0)\n;; => 0.0"},
    {"cos", "cos", one<scalar::Cos>, nullptr, "(x)",
     "The cosine of x radians: a float; on a tensor, the `cos` primitive.", "(cos 0)\n;; => 1.0"},
    {"tanh", "tanh", one<scalar::Tanh>, nullptr, "(x)",
     "The hyperbolic tangent: a float; on a tensor, the `tanh` primitive.", "(tanh 0)\n;; => 0.0"},
    {"erf", "erf", one<scalar::Erf>, nullptr, "(x)", "The error function: a float; on a tensor, the `erf` primitive.",
     "(erf 0)\n;; => 0.0"},
    {"logistic", "logistic", one<scalar::Logistic>, nullptr, "(x)",
     "1/(1+exp(-x)), the sigmoid: a float; on a tensor, the `logistic` primitive.",
     "(list (logistic 0) (logistic (tensor [0.0])))\n;; => (0.5 (tensor [0.5] :dtype :f32))"},
    {"pow", "pow", two<scalar::Pow>, nullptr, "(x y)",
     "x to the power y in floating point: a float; with a tensor, the `pow` primitive. `expt` keeps integers exact.",
     "(list (pow 2 10) (pow (tensor [2.0 3.0]) 2))\n;; => (1024.0 (tensor [4.0 9.0] :dtype :f32))"},
    {"expt", "pow", two<scalar::Pow>, exact_power, "(base power)",
     "`pow`, but exact for an integer base and a non-negative integer power (E-EVAL-009 past 64 bits).",
     "(list (expt 2 10) (expt 2 -1) (expt 4.0 0.5))\n;; => (1024 0.5 2.0)"},
};

Value apply_row(const MathRow& row, Args& a) {
  if (has_tensor(a)) {
    std::vector<graph::NodeId> operands;
    for (size_t i = 0; i < a.size(); ++i) operands.push_back(node_arg(a, i));
    return trace(a, [&](graph::Builder& b) { return b.op(row.primitive, operands); });
  }
  double x = a.number(0), y = a.size() > 1 ? a.number(1) : 0.0;
  bool integers = a[0].is(Type::Int) && (a.size() == 1 || a[1].is(Type::Int));
  if (row.exact && integers) {
    if (auto exact = row.exact(a, a[0].as_int(), a.size() > 1 ? a[1].as_int() : 0)) return Value::integer(*exact);
  }
  return Value::number(row.on_numbers(x, y));
}

template <size_t I>
Value row_builtin(Args& a) {
  return apply_row(kRows[I], a);
}

template <size_t... I>
void install(Interpreter& in, std::index_sequence<I...>) {
  install_rows(in, "Math functions",
               {BuiltinRow{kRows[I].name, row_builtin<I>, kRows[I].params, kRows[I].summary, kRows[I].example}...});
}

}  // namespace

void install_math_builtins(Interpreter& in) { install(in, std::make_index_sequence<std::size(kRows)>()); }

}  // namespace sx::lang
