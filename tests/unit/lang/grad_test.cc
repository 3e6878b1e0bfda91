// `grad` and `value-and-grad` over pytrees, as JAX: arguments that are lists, plists and
// vectors of tensors (nested) give gradients of the same structure; keywords, strings and
// symbols in them stay (a plist keeps its keys), other non-tensor leaves give nil.
#include <gtest/gtest.h>

#include "run_util.h"
#include "test_util.h"

namespace sx::lang {
namespace {

using testing::error_code;
using testing::eval_run_print;

TEST(GradTrees, AListOfTensorsGivesAListOfGradients) {
  EXPECT_EQ(eval_run_print("((grad (lambda (ps) (sum (* (first ps) (second ps)))))"
                           " (list (tensor [1.0 2.0]) (tensor [3.0 4.0])))"),
            "((tensor [3.0 4.0] :dtype :f32) (tensor [1.0 2.0] :dtype :f32))");
}

TEST(GradTrees, APlistKeepsItsKeysAndNumbersGetNil) {
  const char* f =
      "(defvar g ((grad (lambda (p) (* (getf p :lr) (sum (* (getf p :w) (getf p :w))))))"
      "  (list :w (tensor [1.0 2.0]) :lr 0.5 :name \"x\")))\n";
  EXPECT_EQ(eval_run_print(std::string(f) + "(getf g :w)"), "(tensor [1.0 2.0] :dtype :f32)");
  EXPECT_EQ(eval_run_print(std::string(f) + "(list (nth 0 g) (getf g :lr) (nth 4 g) (getf g :name) (length g))"),
            "(:w nil :name \"x\" 6)");
}

TEST(GradTrees, VectorsAndNestingKeepTheirShape) {
  const char* f =
      "(defvar g ((grad (lambda (t) (+ (sum (nth 0 t)) (* 3 (sum (first (nth 1 t)))))))"
      "  [(tensor [1.0 1.0]) (list (tensor 2.0) 7)]))\n";
  EXPECT_EQ(eval_run_print(std::string(f) + "(list (vector? g) (list? (nth 1 g)) (nth 1 (nth 1 g)))"),
            "(true true nil)");
  EXPECT_EQ(eval_run_print(std::string(f) + "(nth 0 g)"), "(tensor [1.0 1.0] :dtype :f32)");
  EXPECT_EQ(eval_run_print(std::string(f) + "(first (nth 1 g))"), "(tensor 3.0 :dtype :f32)");
}

TEST(GradTrees, SeveralArgumentsEachWithItsStructure) {
  // A top-level keyword argument stays too; a number gives nil, as before.
  EXPECT_EQ(eval_run_print("(let ((g ((grad (lambda (ps x k) (sum (* (first ps) x)))) (list (tensor [2.0])) "
                           "(tensor [5.0]) :k)))"
                           "  (list (first (first g)) (second g) (nth 2 g)))"),
            "((tensor [5.0] :dtype :f32) (tensor [2.0] :dtype :f32) :k)");
  EXPECT_EQ(eval_run_print("(second ((grad (lambda (x n) (sum (* x n)))) (tensor [1.0]) 3))"), "nil");
}

TEST(GradTrees, ValueAndGradOverAPlist) {
  EXPECT_EQ(eval_run_print("(let ((vg ((value-and-grad (lambda (p) (sum (* 2 (getf p :a))))) "
                           "(list :a (tensor [1.0 2.0])))))"
                           "  (list (first vg) (getf (second vg) :a)))"),
            "((tensor 6.0 :dtype :f32) (tensor [2.0 2.0] :dtype :f32))");
}

TEST(GradTrees, TheSameTensorTwiceIsTwoLeaves) {
  // Each leaf is differentiated on its own, as in JAX.
  EXPECT_EQ(eval_run_print("(let ((x (tensor [1.0])))"
                           "  ((grad (lambda (ps) (sum (* 2 (first ps))))) (list x x)))"),
            "((tensor [2.0] :dtype :f32) (tensor [0.0] :dtype :f32))");
}

TEST(GradTrees, Errors) {
  EXPECT_EQ(error_code("((grad (lambda (p) (sum (first p)))) (list 1 2))"), "E-EVAL-004");
  EXPECT_EQ(error_code("((grad (lambda (p) 1.0)) (list :a 1))"), "E-EVAL-004");
  // Nesting deeper than 1000 lists is refused, not a stack overflow.
  EXPECT_EQ(error_code("((grad (lambda (p) (sum (ones [1])))) (fold (lambda (acc i) (list acc)) (ones [1]) "
                       "(range 1001)))"),
            "E-EVAL-008");
  EXPECT_EQ(eval_run_print("(length ((grad (lambda (p) (sum (ones [1])))) (fold (lambda (acc i) (list acc)) "
                           "(ones [1]) (range 999))))"),
            "1");
}

}  // namespace
}  // namespace sx::lang
