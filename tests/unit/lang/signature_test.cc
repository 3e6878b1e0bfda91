// A builtin's lambda list is its signature: every call's arity and keywords are checked
// against it, by the check closures use, before the builtin runs. These tests call every
// builtin with arguments its lambda list refuses, so none can keep an arity or a keyword
// list of its own.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lang/builtins/builtins.h"
#include "test_util.h"

namespace sx::lang {
namespace {

using testing::eval_error;
using testing::eval_print;

// The diagnostic calling `fn` with `args` raises, if any.
std::optional<Diagnostic> call_error(Interpreter& interp, const Value& fn, std::vector<Value> args) {
  std::vector<Span> spans(args.size());
  try {
    interp.apply(fn, args, spans, Span{});
  } catch (const Error& e) {
    return e.diagnostic();
  }
  return std::nullopt;
}

std::string plural(size_t n) { return n == 1 ? "" : "s"; }

TEST(Signature, EveryBuiltinsArityAndKeywordsComeFromItsLambdaList) {
  Interpreter interp(testing::test_options());
  size_t with_keys = 0;
  for (const auto& [symbol, value] : interp.builtins().bindings()) {
    if (!value.is(Type::Function)) continue;
    const auto* builtin = dynamic_cast<const Builtin*>(value.as<Function>());
    ASSERT_NE(builtin, nullptr) << symbol->name;
    SCOPED_TRACE(symbol->name + " " + builtin->doc.params);
    ASSERT_NE(builtin->params, nullptr);
    const LambdaList& params = *builtin->params;
    size_t required = params.required.size(), positional = required + params.optional.size();

    if (required > 0) {
      auto d = call_error(interp, value, std::vector<Value>(required - 1));
      ASSERT_TRUE(d);
      EXPECT_EQ(d->code, "E-EVAL-003");
      EXPECT_EQ(d->message, fmt::format("`{}` takes {}{} argument{}, given {}", symbol->name,
                                        positional > required || params.rest || params.has_keys ? "at least " : "",
                                        required, plural(required), required - 1));
    }
    if (!params.rest && !params.has_keys) {
      auto d = call_error(interp, value, std::vector<Value>(positional + 1));
      ASSERT_TRUE(d);
      EXPECT_EQ(d->code, "E-EVAL-003");
      EXPECT_EQ(d->message,
                fmt::format("`{}` takes {}{} argument{}, given {}", symbol->name,
                            positional > required ? "at most " : "", positional, plural(positional), positional + 1));
    }
    if (!params.has_keys) continue;
    ++with_keys;
    std::vector<Value> args(positional);
    args.push_back(make_keyword("no-such-keyword"));
    args.push_back(Value::integer(1));
    auto unknown = call_error(interp, value, args);
    ASSERT_TRUE(unknown);
    EXPECT_EQ(unknown->code, "E-EVAL-006");
    EXPECT_EQ(unknown->message, fmt::format("`{}` takes no keyword `:no-such-keyword`", symbol->name));

    const std::string& first_key = params.keys.at(0).name->name;
    args.resize(positional);
    args.push_back(make_keyword(first_key));
    auto without_value = call_error(interp, value, args);
    ASSERT_TRUE(without_value);
    EXPECT_EQ(without_value->code, "E-EVAL-007");
    EXPECT_EQ(without_value->message, fmt::format("keyword `:{}` has no value", first_key));

    args.push_back(Value());
    args.push_back(make_keyword(first_key));
    args.push_back(Value());
    auto twice = call_error(interp, value, args);
    ASSERT_TRUE(twice);
    EXPECT_EQ(twice->code, "E-EVAL-006");
    EXPECT_EQ(twice->message, fmt::format("keyword `:{}` is given twice", first_key));
  }
  EXPECT_GT(with_keys, 10u);
}

// A builtin and a function with the same lambda list refuse the same calls in the same words.
TEST(Signature, BuiltinsAndFunctionsShareOneCheck) {
  auto message = [](const std::string& text) {
    auto d = eval_error(text);
    return d ? d->code + " " + d->message : std::string("no error");
  };
  const std::string zeros = "(defun my-zeros (shape &key dtype) shape) ";
  EXPECT_EQ(message("(zeros [2] :size 3)"), "E-EVAL-006 `zeros` takes no keyword `:size`");
  EXPECT_EQ(message(zeros + "(my-zeros [2] :size 3)"), "E-EVAL-006 `my-zeros` takes no keyword `:size`");
  EXPECT_EQ(message("(zeros)"), "E-EVAL-003 `zeros` takes at least 1 argument, given 0");
  EXPECT_EQ(message(zeros + "(my-zeros)"), "E-EVAL-003 `my-zeros` takes at least 1 argument, given 0");
  EXPECT_EQ(message("(zeros [2] 3)"), "E-EVAL-006 `zeros` expected a keyword here, not `3`");
  EXPECT_EQ(message(zeros + "(my-zeros [2] 3)"), "E-EVAL-006 `my-zeros` expected a keyword here, not `3`");
}

// concat's lambda list is (&rest seqs &key axis): the keywords begin at the first one.
TEST(Signature, RestThenKeywords) {
  EXPECT_EQ(testing::error_code("(concat (ones [1]) (ones [1]) :axis 0 (ones [1]))"), "E-EVAL-006");
  EXPECT_EQ(testing::error_code("(concat (ones [1]) (ones [1]) :axs 0)"), "E-EVAL-006");
  EXPECT_EQ(testing::error_code("(concat [1] [2] :axis 0)"), "E-EVAL-006");
  EXPECT_EQ(eval_print("(concat [1] [2])"), "[1 2]");
  // A function's &rest with &key holds the keyword pairs and allows others (docs/language.md).
  EXPECT_EQ(eval_print("(defun k (x &rest all &key a) (list x all a)) (k 1 2 :b 3 :a 4)"), "(1 (2 :b 3 :a 4) 4)");
}

// One row per math name: on a number each gives a number, never a tensor.
TEST(Signature, MathNamesGiveNumbersOnNumbers) {
  EXPECT_EQ(eval_print("(list (rsqrt 4.0) (logistic 0) (erf 0) (sign -3) (sign -0.5) (abs -4) (sqrt 4))"),
            "(0.5 0.5 0.0 -1 -1.0 4 2.0)");
  EXPECT_EQ(eval_print("(list (pow 2 10) (expt 2 10) (expt 2 -1) (expt 9 0.5) (pow 9 0.5))"),
            "(1024.0 1024 0.5 3.0 3.0)");
  EXPECT_EQ(testing::error_code("(expt 2 63)"), "E-EVAL-009");
  EXPECT_EQ(testing::error_code("(abs (- -9223372036854775807 1))"), "E-EVAL-009");
  EXPECT_EQ(eval_print("(type-of (rsqrt (tensor [4.0])))"), ":tensor");
}

}  // namespace
}  // namespace sx::lang
