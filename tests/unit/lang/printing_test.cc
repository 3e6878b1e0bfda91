// Showing values to a person: tensors in print, str and format (which run traced tensors
// through Interpreter::materialize), format's specs, item, and printed values (empty
// tensors, infinities, NaN) that read back as the same value.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <string>

#include "lang/tracer.h"
#include "run_util.h"
#include "test_util.h"

namespace sx::lang {
namespace {

using testing::error_code;
using testing::eval_run_print;

TEST(Format, Specs) {
  EXPECT_EQ(eval_run_print("(format \"{:.3f}\" (/ 1.0 3))"), "\"0.333\"");
  EXPECT_EQ(eval_run_print("(format \"{:.2f} {:e} {:>6} {:<4}|\" 2 1234.5 42 1.5)"),
            "\"2.00 1.234500e+03     42 1.5 |\"");
  // A float placed by width keeps its shortest text and its `.`, right-aligned as numbers are.
  EXPECT_EQ(eval_run_print("(format \"[{:6}] [{:^7}]\" 4.0 0.5)"), "\"[   4.0] [  0.5  ]\"");
  EXPECT_EQ(eval_run_print("(format \"{:>5}|{:x}\" \"ab\" 255)"), "\"   ab|ff\"");
  EXPECT_EQ(eval_run_print("(format \"{{}} {} {{:x}}\" 1)"), "\"{} 1 {:x}\"");
  EXPECT_EQ(error_code("(format \"{:q}\" 1)"), "E-EVAL-004");
  EXPECT_EQ(error_code("(format \"{x}\" 1)"), "E-EVAL-004");
  EXPECT_EQ(error_code("(format \"{:.2f}\")"), "E-EVAL-004");
}

TEST(Format, SpecsOnTensors) {
  // A scalar tensor reads as its number; any other applies the spec to each element.
  EXPECT_EQ(eval_run_print("(format \"loss {:.3f}\" (tensor 0.6931472))"), "\"loss 0.693\"");
  EXPECT_EQ(eval_run_print("(format \"{:.1f}\" (tensor [0.25 1.0]))"), "\"(tensor [0.2 1.0] :dtype :f32)\"");
  EXPECT_EQ(eval_run_print("(format \"{:>3}\" (tensor [1 2]))"), "\"(tensor [  1   2] :dtype :i32)\"");
  EXPECT_EQ(eval_run_print("(format \"{}\" (tensor [1 2]))"), "\"(tensor [1 2] :dtype :i32)\"");
}

TEST(Printing, EmptyTensorsReadBackWithTheirShape) {
  for (std::string shape : {"[0]", "[0 2]", "[2 0]", "[3 0 4]"}) {
    std::string printed = eval_run_print("(zeros " + shape + ")");
    EXPECT_EQ(printed, "(zeros " + shape + " :dtype :f32)");
    EXPECT_EQ(eval_run_print("(shape " + printed + ")"), shape);
  }
  EXPECT_EQ(eval_run_print("(tensor [] :dtype :i32)"), "(zeros [0] :dtype :i32)");
  EXPECT_EQ(eval_run_print("(zeros [0 2] :dtype :bool)"), "(zeros [0 2] :dtype :bool)");
}

// Floats alike bit for bit; any two NaNs alike, since a NaN prints without its sign and payload.
bool same_float(double a, double b) {
  return std::isnan(a) ? std::isnan(b) : std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b);
}

// The same value: floats by their bits, tensors by dtype, shape and elements.
::testing::AssertionResult same_value(const Value& a, const Value& b) {
  const TensorValue* ta = as_tensor(a);
  const TensorValue* tb = as_tensor(b);
  if (ta && tb) {
    const graph::Tensor& x = *ta->info().value;
    const graph::Tensor& y = *tb->info().value;
    if (x.dtype() != y.dtype() || x.shape() != y.shape()) return ::testing::AssertionFailure() << "dtype or shape";
    if (graph::is_float(x.dtype())) {
      for (int64_t i = 0; i < x.numel(); ++i) {
        if (!same_float(x.value(i), y.value(i))) return ::testing::AssertionFailure() << "element " << i;
      }
      return ::testing::AssertionSuccess();
    }
    return std::ranges::equal(x.bytes(), y.bytes()) ? ::testing::AssertionSuccess()
                                                    : ::testing::AssertionFailure() << "elements";
  }
  if (a.is(Type::Float) && b.is(Type::Float)) {
    return same_float(a.as_float(), b.as_float()) ? ::testing::AssertionSuccess() : ::testing::AssertionFailure();
  }
  return ::testing::AssertionFailure() << "not two tensors or two floats";
}

// Issue 12 item 10: what `sexpgpu eval` prints, read and evaluated again, is the same value.
TEST(Printing, ValuesReadBack) {
  for (std::string text : {
           "(/ 1.0 0)",
           "(/ -1.0 0)",
           "(/ 0.0 0)",
           "(- inf)",
           "nan",
           "-0.0",
           "1e300",
           "(tensor [(- inf) nan inf -0.0 0.1 3.4028235e38 1e-45])",
           "(tensor [[(- inf) nan] [inf 2.5]] :dtype :f64)",
           "(tensor [(- inf) nan inf 0.1 -0.0] :dtype :bf16)",
           "(/ (tensor [0.0 1.0 -1.0]) 0)",
           "(tensor (/ -1.0 0))",
           "(zeros [2 0 3])",
           "(zeros [0 2] :dtype :i64)",
           "(tensor [] :dtype :bool)",
           "(tensor [9223372036854775807 -9223372036854775808] :dtype :i64)",
           "(tensor [[true false] [false true]])",
           "(tensor [0 255] :dtype :u8)",
       }) {
    Interpreter interp(testing::test_options());
    Ref<Env> env = interp.new_top_level();
    auto eval = [&](const std::string& source) {
      return testing::run_on_reference(interp, interp.eval_text(source, "<test>", *env));
    };
    Value value = eval(text);
    std::string printed = print(value);
    Value again = eval(printed);
    EXPECT_EQ(print(again), printed) << text;
    EXPECT_TRUE(same_value(value, again)) << text << " printed as " << printed;
  }
  // The float and the name it is bound to print apart.
  EXPECT_EQ(eval_run_print("(list inf 'inf)"), "(+inf.0 inf)");
}

TEST(Printing, LimitAndFull) {
  std::string elided = eval_run_print("(iota 2000)");
  EXPECT_NE(elided.find("..."), std::string::npos);
  EXPECT_NE(elided.find("; shape [2000]"), std::string::npos);
  set_tensor_print_limit(0);
  std::string full = eval_run_print("(iota 2000)");
  set_tensor_print_limit(1000);
  EXPECT_EQ(full.find("..."), std::string::npos);
  EXPECT_NE(full.find(" 1999]"), std::string::npos);
}

TEST(Item, ReadsOneElement) {
  EXPECT_EQ(eval_run_print("(item (tensor 2.5))"), "2.5");
  // An f32 element reads as the number it prints as.
  EXPECT_EQ(eval_run_print("(item (tensor [0.1]))"), "0.1");
  EXPECT_EQ(eval_run_print("(item (tensor [[7]] :dtype :i64))"), "7");
  EXPECT_EQ(eval_run_print("(item (tensor true))"), "true");
  EXPECT_EQ(error_code("(item (ones [2]))"), "E-SHAPE-001");
  EXPECT_EQ(error_code("(item 3)"), "E-EVAL-004");
  EXPECT_EQ(eval_run_print("(item (sum (ones [2 3])))"), "6.0");
  // Without a device (as in `check`), a computed tensor has no value to read.
  EXPECT_EQ(error_code("(item (sum (ones [2])))"), "E-EVAL-004");
}

// `print`, `str`, `format` and `item` hand traced tensors to Interpreter::materialize,
// once per call and only when there is one; here a stand-in gives every one the value 7.
TEST(Materialize, ShowingValuesRunsTracedTensorsOnce) {
  Interpreter interp(testing::test_options());
  Ref<Env> env = interp.new_top_level();
  int calls = 0;
  interp.materialize = [&](const Value& value) {
    ++calls;
    auto seven = [&](const Value& item) {
      const TensorValue* t = as_tensor(item);
      if (!t || t->info().value) return item;
      graph::Tensor values = graph::Tensor::from_doubles(t->info().dtype, t->info().shape,
                                                         std::vector<double>(graph::numel(t->info().shape), 7.0));
      return make_tensor(interp.tracer(), interp.tracer()->builder().constant(std::move(values)));
    };
    if (!value.is_list()) return seven(value);
    std::vector<Value> items;
    for (const Value& item : list_items(value)) items.push_back(seven(item));
    return list(std::move(items));
  };
  auto show = [&](const std::string& text) { return print(interp.eval_text(text, "<test>", *env)); };
  // A value with no traced tensor is never handed over.
  EXPECT_EQ(show("(str \"a\" 1)"), "\"a1\"");
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(show("(str (sum (ones [2])) \" \" (tensor [1.0]))"),
            "\"(tensor 7.0 :dtype :f32) (tensor [1.0] :dtype :f32)\"");
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(show("(format \"{:.1f}\" (sum (ones [2])))"), "\"7.0\"");
  EXPECT_EQ(show("(item (sum (ones [2])))"), "7.0");
  EXPECT_EQ(calls, 3);
}

TEST(Printing, PrintStrAndFormatShowTracedTensorsValues) {
  EXPECT_EQ(eval_run_print("(str (sum (ones [2 2])))"), "\"(tensor 4.0 :dtype :f32)\"");
  EXPECT_EQ(eval_run_print("(format \"{} and {:.2f}\" (iota 2) (/ (sum (ones [2])) 3))"),
            "\"(tensor [0 1] :dtype :i32) and 0.67\"");
  ::testing::internal::CaptureStdout();
  std::string value = eval_run_print("(print \"sum\" (sum (ones [3])) \"done\")");
  EXPECT_EQ(::testing::internal::GetCapturedStdout(), "sum (tensor 3.0 :dtype :f32) done\n");
  EXPECT_EQ(value, "\"done\"");
  // Without a device (`check`) a computed tensor shows its type.
  EXPECT_EQ(testing::eval_print("(str (sum (ones [2])))"), "\"#<tensor f32[]>\"");
}

}  // namespace
}  // namespace sx::lang
