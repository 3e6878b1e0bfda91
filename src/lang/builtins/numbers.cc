// Number builtins: arithmetic with overflow checks, comparison, rounding (math functions are
// in math.cc). Integers are 64-bit and never wrap; a float anywhere makes the result a float.
// With a tensor among the arguments each becomes its elementwise tensor operation.
#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "lang/builtins/tensor_args.h"
#include "lang/printer.h"

namespace sx::lang {

void integer_overflow(const Args& a, std::string_view op) {
  fail("E-EVAL-009", a.call, fmt::format("integer overflow in `{}`", op),
       "integers are 64-bit and never wrap; use floats for values this large");
}

namespace {

// The number builtin `numbers`, or the tensor op `op` when an argument is a tensor.
template <Value (*numbers)(Args&)>
Value or_tensor_fold(Args& a, std::string_view op) {
  return has_tensor(a) ? tensor_fold(a, op) : numbers(a);
}

bool any_float(const Args& a) {
  for (size_t i = 0; i < a.size(); ++i) {
    a.number(i);  // checks the type
    if (a[i].is(Type::Float)) return true;
  }
  return false;
}

Value add(Args& a) {
  if (any_float(a)) {
    double sum = 0;
    for (size_t i = 0; i < a.size(); ++i) sum += a.number(i);
    return Value::number(sum);
  }
  int64_t sum = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (__builtin_add_overflow(sum, a[i].as_int(), &sum)) integer_overflow(a, "+");
  }
  return Value::integer(sum);
}

Value multiply(Args& a) {
  if (any_float(a)) {
    double product = 1;
    for (size_t i = 0; i < a.size(); ++i) product *= a.number(i);
    return Value::number(product);
  }
  int64_t product = 1;
  for (size_t i = 0; i < a.size(); ++i) {
    if (__builtin_mul_overflow(product, a[i].as_int(), &product)) integer_overflow(a, "*");
  }
  return Value::integer(product);
}

Value subtract(Args& a) {
  if (any_float(a)) {
    if (a.size() == 1) return Value::number(-a.number(0));
    double result = a.number(0);
    for (size_t i = 1; i < a.size(); ++i) result -= a.number(i);
    return Value::number(result);
  }
  int64_t result = a[0].as_int();
  if (a.size() == 1) {
    if (__builtin_sub_overflow(int64_t{0}, result, &result)) integer_overflow(a, "-");
    return Value::integer(result);
  }
  for (size_t i = 1; i < a.size(); ++i) {
    if (__builtin_sub_overflow(result, a[i].as_int(), &result)) integer_overflow(a, "-");
  }
  return Value::integer(result);
}

[[noreturn]] void divide_by_zero(const Args& a, size_t i) {
  fail("E-EVAL-014", a.span(i), fmt::format("integer division by zero in `{}`", a.function),
       "divide floats (1.0) to get an infinity instead");
}

// `/` on integers is exact when it divides evenly and a float otherwise; (/ x) is 1/x.
Value divide(Args& a) {
  bool floats = any_float(a);
  std::vector<Value> operands(a.values.begin(), a.values.end());
  if (a.size() == 1) operands.insert(operands.begin(), Value::integer(1));
  if (floats) {
    double result = operands[0].as_double();
    for (size_t i = 1; i < operands.size(); ++i) result /= operands[i].as_double();
    return Value::number(result);
  }
  int64_t numerator = operands[0].as_int();
  for (size_t i = 1; i < operands.size(); ++i) {
    int64_t d = operands[i].as_int();
    if (d == 0) divide_by_zero(a, a.size() == 1 ? 0 : i);
    if (numerator == std::numeric_limits<int64_t>::min() && d == -1) integer_overflow(a, "/");
    if (numerator % d != 0) {
      double result = static_cast<double>(numerator) / static_cast<double>(d);
      for (size_t j = i + 1; j < operands.size(); ++j) result /= operands[j].as_double();
      return Value::number(result);
    }
    numerator /= d;
  }
  return Value::integer(numerator);
}

// quot truncates toward zero, rem takes the dividend's sign, mod the divisor's.
Value integer_division(Args& a, char op) {
  int64_t x = a.integer(0), y = a.integer(1);
  if (y == 0) divide_by_zero(a, 1);
  if (x == std::numeric_limits<int64_t>::min() && y == -1) {
    if (op == 'q') integer_overflow(a, "quot");
    return Value::integer(0);
  }
  int64_t r = x % y;
  if (op == 'q') return Value::integer(x / y);
  if (op == 'm' && r != 0 && ((r < 0) != (y < 0))) r += y;
  return Value::integer(r);
}

template <class Compare>
Value compare_chain(Args& a, Compare compare, std::string_view op) {
  if (has_tensor(a)) return tensor_compare(a, op);
  for (size_t i = 0; i < a.size(); ++i) a.number(i);
  for (size_t i = 0; i + 1 < a.size(); ++i) {
    bool holds;
    if (a[i].is(Type::Int) && a[i + 1].is(Type::Int)) holds = compare(a[i].as_int(), a[i + 1].as_int());
    else holds = compare(a[i].as_double(), a[i + 1].as_double());
    if (!holds) return Value::boolean(false);
  }
  return Value::boolean(true);
}

Value extremum(Args& a, bool want_max) {
  if (has_tensor(a)) return tensor_fold(a, want_max ? "max" : "min");
  size_t best = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    a.number(i);
    double x = a[i].as_double(), b = a[best].as_double();
    if (std::isnan(x)) return a[i];
    if (want_max ? x > b : x < b) best = i;
  }
  return a[best];
}

// floor, ceiling, round (half to even) and truncate give integers.
Value to_integer(Args& a, double (*f)(double)) {
  if (a[0].is(Type::Int)) return a[0];
  double x = f(a.number(0));
  if (!(x >= -9.2233720368547758e18 && x < 9.2233720368547758e18)) {
    fail("E-EVAL-009", a.span(0),
         fmt::format("`{}` of {} does not fit in a 64-bit integer", a.function, format_float(a.number(0))));
  }
  return Value::integer(static_cast<int64_t>(x));
}

Value to_float(Args& a) { return Value::number(a.number(0)); }

}  // namespace

void install_number_builtins(Interpreter& in) {
  install_rows(
      in, "Numbers",
      {
          {"+", [](Args& a) { return or_tensor_fold<add>(a, "add"); }, "(&rest numbers)",
           "The sum; integers stay integers, any float makes a float; on tensors, elementwise.",
           "(+ 1 2 3.5)\n;; => 6.5"},
          {"*", [](Args& a) { return or_tensor_fold<multiply>(a, "mul"); }, "(&rest numbers)",
           "The product; on tensors, elementwise.", "(* 2 3 4)\n;; => 24"},
          {"-", [](Args& a) { return or_tensor_fold<subtract>(a, "sub"); }, "(x &rest numbers)",
           "x minus each of the rest; (- x) is x negated.", "(list (- 10 3 2) (- 5))\n;; => (5 -5)"},
          {"/", [](Args& a) { return or_tensor_fold<divide>(a, "div"); }, "(x &rest numbers)",
           "x divided by each of the rest, an integer when integers divide evenly; (/ x) is 1/x.",
           "(list (/ 6 3) (/ 7 2) (/ 4))\n;; => (2 3.5 0.25)"},
          {"quot", [](Args& a) { return integer_division(a, 'q'); }, "(a b)",
           "Integer division, truncated toward zero.", "(quot -7 2)\n;; => -3"},
          {"rem", [](Args& a) { return integer_division(a, 'r'); }, "(a b)",
           "The remainder of `quot`, with the sign of a.", "(rem -7 2)\n;; => -1"},
          {"mod", [](Args& a) { return integer_division(a, 'm'); }, "(a b)", "The remainder with the sign of b.",
           "(mod -7 2)\n;; => 1"},
          {"=",
           [](Args& a) {
             return compare_chain(
                 a, [](auto x, auto y) { return x == y; }, "eq");
           },
           "(x &rest more)", "Whether the numbers are equal (1 equals 1.0); on two tensors, a bool tensor.",
           "(list (= 1 1.0) (= 1 2))\n;; => (true false)"},
          {"/=",
           [](Args& a) {
             return compare_chain(
                 a, [](auto x, auto y) { return x != y; }, "ne");
           },
           "(x &rest more)", "Whether each number differs from the next; on two tensors, a bool tensor.",
           "(/= 1 2)\n;; => true"},
          {"<",
           [](Args& a) {
             return compare_chain(
                 a, [](auto x, auto y) { return x < y; }, "lt");
           },
           "(x &rest more)", "Whether the numbers increase; on two tensors, a bool tensor.", "(< 1 2 3)\n;; => true"},
          {">",
           [](Args& a) {
             return compare_chain(
                 a, [](auto x, auto y) { return x > y; }, "gt");
           },
           "(x &rest more)", "Whether the numbers decrease; on two tensors, a bool tensor.", "(> 3 2 2)\n;; => false"},
          {"<=",
           [](Args& a) {
             return compare_chain(
                 a, [](auto x, auto y) { return x <= y; }, "le");
           },
           "(x &rest more)", "Whether no number is above the next; on two tensors, a bool tensor.",
           "(<= 1 1 2)\n;; => true"},
          {">=",
           [](Args& a) {
             return compare_chain(
                 a, [](auto x, auto y) { return x >= y; }, "ge");
           },
           "(x &rest more)", "Whether no number is below the next; on two tensors, a bool tensor.",
           "(>= 2 1 1)\n;; => true"},
          {"max", [](Args& a) { return extremum(a, true); }, "(x &rest more)",
           "The largest (NaN if any is NaN); on tensors, elementwise.", "(max 3 7.5 2)\n;; => 7.5"},
          {"min", [](Args& a) { return extremum(a, false); }, "(x &rest more)",
           "The smallest (NaN if any is NaN); on tensors, elementwise.", "(min 3 7.5 2)\n;; => 2"},
          {"floor", [](Args& a) { return to_integer(a, std::floor); }, "(x)", "The largest integer not above x.",
           "(floor -2.5)\n;; => -3"},
          {"ceiling", [](Args& a) { return to_integer(a, std::ceil); }, "(x)", "The smallest integer not below x.",
           "(ceiling 2.1)\n;; => 3"},
          {"round", [](Args& a) { return to_integer(a, std::nearbyint); }, "(x)",
           "The nearest integer; halves go to the even one.", "(list (round 2.5) (round 3.5))\n;; => (2 4)"},
          {"truncate", [](Args& a) { return to_integer(a, std::trunc); }, "(x)",
           "x without its fraction: the integer toward zero.", "(truncate -2.7)\n;; => -2"},
          {"float", to_float, "(x)", "The number as a float.", "(float 3)\n;; => 3.0"},
      });
  in.builtins().define(intern("inf"), Value::number(std::numeric_limits<double>::infinity()));
  in.builtins().define(intern("nan"), Value::number(std::numeric_limits<double>::quiet_NaN()));
  in.builtins().define(intern("pi"), Value::number(3.141592653589793));
}

}  // namespace sx::lang
