// One convention for axes (docs/tensors.md, "Axes"): every operation and library function
// names them with :axis, an integer or a vector; reductions and mean/var still take the
// older :axes.
#include <gtest/gtest.h>

#include <string>

#include "run_util.h"
#include "test_util.h"

namespace sx::lang {
namespace {

using testing::error_code;
using testing::eval_run_print;

TEST(Axes, ReductionsTakeAxisAndTheOlderAxes) {
  EXPECT_EQ(eval_run_print("(sum (tensor [[1 2] [3 4]]) :axis 0)"), "(tensor [4 6] :dtype :i32)");
  EXPECT_EQ(eval_run_print("(sum (tensor [[1 2] [3 4]]) :axis [0 1])"), "(tensor 10 :dtype :i32)");
  EXPECT_EQ(eval_run_print("(sum (tensor [[1 2] [3 4]]) :axes [1] :keepdims true)"),
            "(tensor [[3]\n         [7]] :dtype :i32)");
  EXPECT_EQ(eval_run_print("(argmax (tensor [[1 5] [4 3]]) :axis -1)"), "(tensor [1 0] :dtype :i64)");
  EXPECT_EQ(error_code("(sum (ones [2]) :axis 0 :axes 0)"), "E-EVAL-006");
}

TEST(Axes, OneAxisOperationsTakeAnIntegerOrAVectorOfOne) {
  EXPECT_EQ(eval_run_print("(concat (tensor [[1]]) (tensor [[2]]) :axis [1])"), "(tensor [[1 2]] :dtype :i32)");
  EXPECT_EQ(eval_run_print("(gather (tensor [[1 2] [3 4]]) (tensor [1]) :axis 1)"),
            "(tensor [[2]\n         [4]] :dtype :i32)");
  EXPECT_EQ(error_code("(concat (ones [1]) (ones [1]) :axis [0 1])"), "E-EVAL-004");
  EXPECT_EQ(error_code("(iota [2 2] :axes 1)"), "E-EVAL-006");
}

TEST(Axes, TheLibraryTakesAxisEverywhere) {
  std::string ops = "(require \"sexpgpu/ops\") ";
  EXPECT_EQ(eval_run_print(ops + "(mean (tensor [[1.0 2.0] [3.0 4.0]]) :axis 0)"), "(tensor [2.0 3.0] :dtype :f32)");
  EXPECT_EQ(eval_run_print(ops + "(mean (tensor [[1.0 2.0] [3.0 4.0]]) :axes 1)"), "(tensor [1.5 3.5] :dtype :f32)");
  EXPECT_EQ(eval_run_print(ops + "(var (tensor [[1.0 3.0]]) :axis [0 1])"), "(tensor 1.0 :dtype :f32)");
  EXPECT_EQ(eval_run_print(ops + "(sum (softmax (zeros [2 2]) :axis [0 1]))"), "(tensor 1.0 :dtype :f32)");
  EXPECT_EQ(eval_run_print(ops + "(softmax (tensor [[0.0 0.0]]) :axis 0)"), "(tensor [[1.0 1.0]] :dtype :f32)");
}

}  // namespace
}  // namespace sx::lang
