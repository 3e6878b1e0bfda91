// The builtin functions: lists, vectors, plists, higher-order functions, strings, symbols,
// keywords, type predicates. Each builtin's results, edge cases and error codes.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include "lang/diagnostic.h"
#include "test_util.h"

namespace sx::lang {
namespace {

using testing::error_code;
using testing::eval_print;

// The error code `text` raises under a step budget of `max_steps`, or "".
std::string error_code_with_budget(const std::string& text, uint64_t max_steps) {
  InterpreterOptions options = testing::test_options();
  options.max_steps = max_steps;
  auto d = testing::eval_error(text, options);
  return d ? d->code : "";
}

// The message of the error `text` raises.
std::string error_message(const std::string& text) {
  auto d = testing::eval_error(text);
  return d ? d->message : "";
}

// --- Lists and vectors ------------------------------------------------------------------

TEST(Builtins, ListAndVector) {
  EXPECT_EQ(eval_print("(list 1 2.5 :k \"s\")"), "(1 2.5 :k \"s\")");
  EXPECT_EQ(eval_print("(list)"), "nil");
  EXPECT_EQ(eval_print("(vector 1 (+ 1 1))"), "[1 2]");
  EXPECT_EQ(eval_print("(vector)"), "[]");
}

TEST(Builtins, Cons) {
  EXPECT_EQ(eval_print("(cons 1 '(2 3))"), "(1 2 3)");
  EXPECT_EQ(eval_print("(cons 1 nil)"), "(1)");
  EXPECT_EQ(eval_print("(cons '(a) '())"), "((a))");
  EXPECT_EQ(error_code("(cons 1 2)"), "E-EVAL-004");
  EXPECT_EQ(error_code("(cons 1 [2])"), "E-EVAL-004");
  EXPECT_EQ(error_code("(cons 1)"), "E-EVAL-003");
}

TEST(Builtins, FirstSecondThirdLast) {
  EXPECT_EQ(eval_print("(list (first '(1 2 3)) (second '(1 2 3)) (third '(1 2 3)) (last '(1 2 3)))"), "(1 2 3 3)");
  EXPECT_EQ(eval_print("(list (first [1 2 3]) (second [1 2 3]) (third [1 2 3]) (last [1 2 3]))"), "(1 2 3 3)");
  EXPECT_EQ(eval_print("(list (first nil) (second '(1)) (third [1 2]) (last []) (last nil))"), "(nil nil nil nil nil)");
  EXPECT_EQ(error_code("(first 1)"), "E-EVAL-004");
  EXPECT_EQ(error_code("(second \"ab\")"), "E-EVAL-004");
  EXPECT_EQ(error_code("(last :k)"), "E-EVAL-004");
  EXPECT_EQ(error_code("(first)"), "E-EVAL-003");
}

TEST(Builtins, Rest) {
  EXPECT_EQ(eval_print("(rest '(1 2 3))"), "(2 3)");
  EXPECT_EQ(eval_print("(rest '(1))"), "nil");
  EXPECT_EQ(eval_print("(rest nil)"), "nil");
  EXPECT_EQ(eval_print("(rest [1 2 3])"), "[2 3]");
  EXPECT_EQ(eval_print("(rest [])"), "[]");
  EXPECT_EQ(error_code("(rest 5)"), "E-EVAL-004");
}

TEST(Builtins, Nth) {
  EXPECT_EQ(eval_print("(nth 0 '(a b c))"), "a");
  EXPECT_EQ(eval_print("(nth 2 '(a b c))"), "c");
  EXPECT_EQ(eval_print("(nth 1 '[a b c])"), "b");
  EXPECT_EQ(error_code("(nth 3 '(a b c))"), "E-EVAL-015");
  EXPECT_EQ(error_code("(nth 3 [1 2 3])"), "E-EVAL-015");
  EXPECT_EQ(error_code("(nth -1 '(1 2))"), "E-EVAL-015");
  EXPECT_EQ(error_code("(nth 0 nil)"), "E-EVAL-015");
  EXPECT_EQ(error_message("(nth 5 [1 2 3])"), "index 5 is out of range for `nth` of length 3");
  EXPECT_EQ(error_message("(nth 4 '(1 2))"), "index 4 is out of range for `nth` of length 2");
  EXPECT_EQ(error_code("(nth 1.0 '(1 2))"), "E-EVAL-004");
  EXPECT_EQ(error_code("(nth 0 \"abc\")"), "E-EVAL-004");
  // The arguments the other way round get a message that says so.
  EXPECT_EQ(error_code("(nth [1 2] 0)"), "E-EVAL-004");
  EXPECT_EQ(error_message("(nth [1 2] 0)"), "`nth` takes the index first: (nth index seq)");
}

TEST(Builtins, Length) {
  EXPECT_EQ(eval_print("(list (length '(1 2 3)) (length nil) (length [1 2]) (length []))"), "(3 0 2 0)");
  EXPECT_EQ(eval_print("(length \"abc\")"), "3");
  EXPECT_EQ(eval_print("(length \"h\u00e9llo\")"), "5");  // code points, not bytes
  EXPECT_EQ(eval_print("(length \"\")"), "0");
  EXPECT_EQ(error_code("(length 5)"), "E-EVAL-004");
  EXPECT_EQ(error_code("(length :k)"), "E-EVAL-004");
}

TEST(Builtins, Empty) {
  EXPECT_EQ(eval_print("(list (empty? nil) (empty? '()) (empty? []) (empty? \"\"))"), "(true true true true)");
  EXPECT_EQ(eval_print("(list (empty? '(1)) (empty? [nil]) (empty? \" \"))"), "(false false false)");
  EXPECT_EQ(error_code("(empty? 0)"), "E-EVAL-004");
}

TEST(Builtins, Concat) {
  EXPECT_EQ(eval_print("(concat '(1 2) '(3) nil '(4 5))"), "(1 2 3 4 5)");
  EXPECT_EQ(eval_print("(concat [1] [] [2 3])"), "[1 2 3]");
  EXPECT_EQ(eval_print("(concat)"), "nil");
  EXPECT_EQ(eval_print("(concat '(1))"), "(1)");
  EXPECT_EQ(eval_print("(concat [])"), "[]");
  EXPECT_EQ(error_code("(concat '(1) [2])"), "E-EVAL-004");
  EXPECT_EQ(error_code("(concat [1] '(2))"), "E-EVAL-004");
  EXPECT_EQ(error_code("(concat '(1) 2)"), "E-EVAL-004");
  EXPECT_EQ(error_code("(concat \"a\" \"b\")"), "E-EVAL-004");
}

TEST(Builtins, Reverse) {
  EXPECT_EQ(eval_print("(reverse '(1 2 3))"), "(3 2 1)");
  EXPECT_EQ(eval_print("(reverse [1 2 3])"), "[3 2 1]");
  EXPECT_EQ(eval_print("(reverse nil)"), "nil");
  EXPECT_EQ(eval_print("(reverse [])"), "[]");
  EXPECT_EQ(error_code("(reverse \"abc\")"), "E-EVAL-004");
}

TEST(Builtins, TakeAndDrop) {
  EXPECT_EQ(eval_print("(take 2 '(1 2 3))"), "(1 2)");
  EXPECT_EQ(eval_print("(take 2 [1 2 3])"), "[1 2]");
  EXPECT_EQ(eval_print("(take 0 '(1 2 3))"), "nil");
  EXPECT_EQ(eval_print("(take 10 '(1 2 3))"), "(1 2 3)");
  EXPECT_EQ(eval_print("(drop 2 '(1 2 3))"), "(3)");
  EXPECT_EQ(eval_print("(drop 1 [1 2 3])"), "[2 3]");
  EXPECT_EQ(eval_print("(drop 0 '(1 2))"), "(1 2)");
  EXPECT_EQ(eval_print("(drop 10 [1 2 3])"), "[]");
  EXPECT_EQ(error_code("(take -1 '(1))"), "E-EVAL-004");
  EXPECT_EQ(error_code("(drop 1.5 '(1))"), "E-EVAL-004");
  EXPECT_EQ(error_code("(take 1 5)"), "E-EVAL-004");
}

TEST(Builtins, Subseq) {
  EXPECT_EQ(eval_print("(subseq '(0 1 2 3 4) 1 3)"), "(1 2)");
  EXPECT_EQ(eval_print("(subseq [0 1 2 3 4] 2)"), "[2 3 4]");
  EXPECT_EQ(eval_print("(subseq [0 1 2] 3)"), "[]");
  EXPECT_EQ(eval_print("(subseq '(0 1 2) 1 1)"), "nil");
  EXPECT_EQ(eval_print("(subseq \"h\u00e9llo\" 1 3)"), "\"\u00e9l\"");
  EXPECT_EQ(error_code("(subseq [0 1 2] 4)"), "E-EVAL-015");
  EXPECT_EQ(error_code("(subseq [0 1 2] 0 4)"), "E-EVAL-015");
  EXPECT_EQ(error_code("(subseq [0 1 2] -1)"), "E-EVAL-015");
  EXPECT_EQ(error_code("(subseq [0 1 2] 2 1)"), "E-EVAL-015");
  EXPECT_EQ(error_code("(subseq 5 0)"), "E-EVAL-004");
}

// --- Higher-order functions ---------------------------------------------------------------

TEST(Builtins, Map) {
  EXPECT_EQ(eval_print("(map + '(1 2) [10 20 30])"), "(11 22)");
  EXPECT_EQ(eval_print("(map (lambda (x) (* x x)) '(1 2 3))"), "(1 4 9)");
  EXPECT_EQ(eval_print("(map (lambda (x) (* x 2)) [1 2 3])"), "[2 4 6]");  // a vector in, a vector out
  EXPECT_EQ(eval_print("(map + [1 2] '(10 20 30))"), "[11 22]");           // the first sequence's kind
  EXPECT_EQ(eval_print("(map list '(1 2) '(a b) '(x y z))"), "((1 a x) (2 b y))");
  EXPECT_EQ(eval_print("(map + nil '(1 2))"), "nil");
  EXPECT_EQ(eval_print("(map + [])"), "[]");
  EXPECT_EQ(error_code("(map 1 '(1 2))"), "E-EVAL-004");
  EXPECT_EQ(error_code("(map + 5)"), "E-EVAL-004");
  EXPECT_EQ(error_code("(map +)"), "E-EVAL-003");
  EXPECT_EQ(error_code("(map (lambda (x) (error \"boom\")) '(1))"), "E-EVAL-010");
  EXPECT_EQ(error_code("(map (lambda (x y) x) '(1))"), "E-EVAL-003");
}

TEST(Builtins, Filter) {
  EXPECT_EQ(eval_print("(filter (lambda (x) (> x 1)) '(1 2 3))"), "(2 3)");
  EXPECT_EQ(eval_print("(filter (lambda (x) (> x 1)) [3 1 2])"), "[3 2]");
  EXPECT_EQ(eval_print("(filter int? '(1 nil 2.0 3))"), "(1 3)");
  EXPECT_EQ(eval_print("(filter identity '(1 nil false 0))"), "(1 0)");
  EXPECT_EQ(eval_print("(filter nil? nil)"), "nil");
  EXPECT_EQ(error_code("(filter '(1) '(1))"), "E-EVAL-004");
  EXPECT_EQ(error_code("(filter int? 3)"), "E-EVAL-004");
}

TEST(Builtins, Fold) {
  EXPECT_EQ(eval_print("(fold + 0 '(1 2 3))"), "6");
  EXPECT_EQ(eval_print("(fold (lambda (acc x) (cons x acc)) nil [1 2 3])"), "(3 2 1)");
  EXPECT_EQ(eval_print("(fold - 10 '(1 2))"), "7");  // (- (- 10 1) 2): the accumulator first
  EXPECT_EQ(eval_print("(fold + 42 nil)"), "42");
  EXPECT_EQ(error_code("(fold + 0 5)"), "E-EVAL-004");
  EXPECT_EQ(error_code("(fold 0 0 '(1))"), "E-EVAL-004");
  EXPECT_EQ(error_code("(fold + 0)"), "E-EVAL-003");
}

TEST(Builtins, Range) {
  EXPECT_EQ(eval_print("(range 3)"), "(0 1 2)");
  EXPECT_EQ(eval_print("(range 0)"), "nil");
  EXPECT_EQ(eval_print("(range -2)"), "nil");
  EXPECT_EQ(eval_print("(range 2 5)"), "(2 3 4)");
  EXPECT_EQ(eval_print("(range 5 2)"), "nil");
  EXPECT_EQ(eval_print("(range 0 10 3)"), "(0 3 6 9)");
  EXPECT_EQ(eval_print("(range 10 0 -3)"), "(10 7 4 1)");
  EXPECT_EQ(eval_print("(range 0 5 -1)"), "nil");
  EXPECT_EQ(eval_print("(range 0.0 1.0 0.25)"), "(0.0 0.25 0.5 0.75)");
  EXPECT_EQ(eval_print("(range 2.5)"), "(0.0 1.0 2.0)");
  EXPECT_EQ(eval_print("(range 1 2 0.5)"), "(1.0 1.5)");
  EXPECT_EQ(eval_print("(range 1.0 0.0 -0.5)"), "(1.0 0.5)");
  // The ends of the integers: no overflow in the length or the items.
  EXPECT_EQ(eval_print("(range (- 0 9223372036854775807 1) 9223372036854775807 9223372036854775807)"),
            "(-9223372036854775808 -1 9223372036854775806)");
  EXPECT_EQ(error_code("(range 0 5 0)"), "E-EVAL-004");
  EXPECT_EQ(error_code("(range 0.0 5.0 0.0)"), "E-EVAL-004");
  EXPECT_EQ(error_code("(range 0.0 inf)"), "E-EVAL-004");
  EXPECT_EQ(error_code("(range 0.0 nan)"), "E-EVAL-004");
  EXPECT_EQ(error_code("(range \"3\")"), "E-EVAL-004");
  EXPECT_EQ(error_code("(range)"), "E-EVAL-003");
  EXPECT_EQ(error_code("(range 1 2 3 4)"), "E-EVAL-003");
}

TEST(Builtins, Repeat) {
  EXPECT_EQ(eval_print("(repeat 3 (lambda (i) (* i i)))"), "(0 1 4)");
  EXPECT_EQ(eval_print("(repeat 0 (lambda (i) i))"), "nil");
  // The seed's stack of blocks.
  EXPECT_EQ(eval_print("(defun block (d h) (list :block d h)) (repeat 2 (lambda (i) (block 64 4)))"),
            "((:block 64 4) (:block 64 4))");
  EXPECT_EQ(error_code("(repeat -1 identity)"), "E-EVAL-004");
  EXPECT_EQ(error_code("(repeat 2 5)"), "E-EVAL-004");
  EXPECT_EQ(error_code("(repeat 2.0 identity)"), "E-EVAL-004");
}

TEST(Builtins, Apply) {
  EXPECT_EQ(eval_print("(apply + '(1 2 3))"), "6");
  EXPECT_EQ(eval_print("(apply + 1 2 '(3 4))"), "10");
  EXPECT_EQ(eval_print("(apply list 1 [2 3])"), "(1 2 3)");
  EXPECT_EQ(eval_print("(apply + nil)"), "0");
  EXPECT_EQ(eval_print("(apply (lambda (x &key (y 2)) (+ x y)) 1 '(:y 5))"), "6");
  EXPECT_EQ(error_code("(apply + 1 2)"), "E-EVAL-004");
  EXPECT_EQ(error_code("(apply 5 '(1))"), "E-EVAL-004");
  EXPECT_EQ(error_code("(apply (lambda (x) x) '(1 2))"), "E-EVAL-003");
}

TEST(Builtins, ZipAndEnumerate) {
  EXPECT_EQ(eval_print("(zip '(1 2 3) '(a b))"), "((1 a) (2 b))");
  EXPECT_EQ(eval_print("(zip [1 2] '(a b))"), "[[1 a] [2 b]]");
  EXPECT_EQ(eval_print("(zip '(1 2))"), "((1) (2))");
  EXPECT_EQ(eval_print("(zip nil '(1))"), "nil");
  EXPECT_EQ(error_code("(zip '(1) 2)"), "E-EVAL-004");
  EXPECT_EQ(error_code("(zip)"), "E-EVAL-003");
  EXPECT_EQ(eval_print("(enumerate '(a b))"), "((0 a) (1 b))");
  EXPECT_EQ(eval_print("(enumerate '[a])"), "[[0 a]]");
  EXPECT_EQ(eval_print("(enumerate nil)"), "nil");
  EXPECT_EQ(error_code("(enumerate 1)"), "E-EVAL-004");
}

TEST(Builtins, Sort) {
  EXPECT_EQ(eval_print("(sort '(3 1 2))"), "(1 2 3)");
  EXPECT_EQ(eval_print("(sort [3 1.5 2])"), "[1.5 2 3]");
  EXPECT_EQ(eval_print("(sort '(\"b\" \"a\" \"c\"))"), "(\"a\" \"b\" \"c\")");
  EXPECT_EQ(eval_print("(sort '(:b :a))"), "(:a :b)");
  EXPECT_EQ(eval_print("(sort '(b c a))"), "(a b c)");
  EXPECT_EQ(eval_print("(sort [3 1 2] >)"), "[3 2 1]");
  EXPECT_EQ(eval_print("(sort nil)"), "nil");
  EXPECT_EQ(eval_print("(sort [])"), "[]");
  EXPECT_EQ(eval_print("(sort '(5))"), "(5)");
  // Stable: equal keys keep their order.
  EXPECT_EQ(eval_print("(sort '((1 a) (0 b) (1 c) (0 d) (1 e)) (lambda (x y) (< (first x) (first y))))"),
            "((0 b) (0 d) (1 a) (1 c) (1 e))");
  EXPECT_EQ(eval_print("(sort (range 20 0 -1))"), eval_print("(range 1 21)"));
  // A comparison that contradicts itself gives some order, never a crash.
  EXPECT_EQ(eval_print("(length (sort (range 50) (lambda (x y) true)))"), "50");
  EXPECT_EQ(error_code("(sort '(1 \"a\"))"), "E-EVAL-004");
  EXPECT_EQ(error_code("(sort '((1) (2)))"), "E-EVAL-004");
  EXPECT_EQ(error_code("(sort 5)"), "E-EVAL-004");
  EXPECT_EQ(error_code("(sort '(1 2) 5)"), "E-EVAL-004");
  EXPECT_EQ(error_code("(sort '(1 2) (lambda (x y) (error \"no\")))"), "E-EVAL-010");
}

TEST(Builtins, PositionAndContains) {
  EXPECT_EQ(eval_print("(position '(a b c) 'b)"), "1");
  EXPECT_EQ(eval_print("(position '[1 2 (3)] '(3))"), "2");  // compared with `equal`
  EXPECT_EQ(eval_print("(position '(1 2) 3)"), "nil");
  EXPECT_EQ(eval_print("(position '(1 2) 1.0)"), "nil");
  EXPECT_EQ(eval_print("(position \"h\u00e9llo\" \"l\")"), "2");  // code points
  EXPECT_EQ(eval_print("(position \"abc\" \"z\")"), "nil");
  EXPECT_EQ(eval_print("(list (contains? '(1 2) 2) (contains? [1 2] 3) (contains? nil 1))"), "(true false false)");
  EXPECT_EQ(eval_print("(list (contains? \"hello\" \"ell\") (contains? \"hello\" \"x\"))"), "(true false)");
  EXPECT_EQ(error_code("(contains? 5 5)"), "E-EVAL-004");
  EXPECT_EQ(error_code("(contains? \"abc\" 1)"), "E-EVAL-004");
  EXPECT_EQ(error_code("(position :k 1)"), "E-EVAL-004");
}

TEST(Builtins, VecAndToList) {
  EXPECT_EQ(eval_print("(vec '(1 2))"), "[1 2]");
  EXPECT_EQ(eval_print("(vec nil)"), "[]");
  EXPECT_EQ(eval_print("(vec [1])"), "[1]");
  EXPECT_EQ(eval_print("(to-list [1 2])"), "(1 2)");
  EXPECT_EQ(eval_print("(to-list [])"), "nil");
  EXPECT_EQ(eval_print("(to-list '(1))"), "(1)");
  EXPECT_EQ(error_code("(vec \"ab\")"), "E-EVAL-004");
  EXPECT_EQ(error_code("(to-list 1)"), "E-EVAL-004");
}

TEST(Builtins, BuildingChargesTheStepBudget) {
  EXPECT_EQ(error_code_with_budget("(range 1000)", 100), "E-EVAL-017");
  EXPECT_EQ(error_code_with_budget("(range 10)", 100), "");
  EXPECT_EQ(error_code_with_budget("(range 0.0 1000.0)", 100), "E-EVAL-017");
  EXPECT_EQ(error_code_with_budget("(repeat 1000 identity)", 100), "E-EVAL-017");
  // A range too long to build stops at the budget instead of exhausting memory.
  EXPECT_EQ(error_code_with_budget("(range 4000000000000000000)", 1000), "E-EVAL-017");
  EXPECT_EQ(error_code_with_budget("(defvar x (range 40)) (concat x x x)", 100), "E-EVAL-017");
  EXPECT_EQ(error_code_with_budget("(defvar x (range 40)) (map identity (concat x x))", 200), "E-EVAL-017");
  // Strings cost a step per KiB they build, spliced items a step each: doubling either
  // 40 times stops at the budget, long before the memory limit.
  for (const char* doubled : {"(str s s)", "(format \"{}{}\" s s)", "(join (list s s))", "(replace s \"x\" \"xx\")"}) {
    auto double_string = fmt::format("(defun d (s n) (if (= n 0) (length s) (d {} (- n 1))))", doubled);
    EXPECT_EQ(error_code_with_budget(double_string + " (d \"x\" 40)", 1000), "E-EVAL-017") << doubled;
    EXPECT_EQ(error_code_with_budget(double_string + " (d \"x\" 12)", 1000), "") << doubled;
  }
  const char* double_list = "(defun d (xs n) (if (= n 0) (length xs) (d `(,@xs ,@xs) (- n 1))))";
  EXPECT_EQ(error_code_with_budget(fmt::format("{} (d (list 1) 40)", double_list), 1000), "E-EVAL-017");
  EXPECT_EQ(error_code_with_budget(fmt::format("{} (d (list 1) 5)", double_list), 1000), "");
}

// --- Plists -------------------------------------------------------------------------------

TEST(Builtins, Getf) {
  EXPECT_EQ(eval_print("(getf '(:a 1 :b 2) :b)"), "2");
  EXPECT_EQ(eval_print("(getf '(:a 1 :b 2) :c)"), "nil");
  EXPECT_EQ(eval_print("(getf '(:a 1 :b 2) :c 7)"), "7");
  EXPECT_EQ(eval_print("(getf '(:a nil) :a 7)"), "nil");  // present, with the value nil
  EXPECT_EQ(eval_print("(getf nil :a)"), "nil");
  EXPECT_EQ(eval_print("(getf '(:a 1 :a 2) :a)"), "1");  // the first wins
  EXPECT_EQ(eval_print("(getf (list :inputs [1 2] :targets 3) :inputs)"), "[1 2]");
  EXPECT_EQ(error_code("(getf '(:a 1 :b) :a)"), "E-EVAL-004");
  EXPECT_EQ(error_code("(getf [:a 1] :a)"), "E-EVAL-004");
  EXPECT_EQ(error_code("(getf '(:a 1))"), "E-EVAL-003");
}

TEST(Builtins, Put) {
  EXPECT_EQ(eval_print("(put '(:a 1 :b 2) :b 5)"), "(:a 1 :b 5)");
  EXPECT_EQ(eval_print("(put '(:a 1) :b 2)"), "(:a 1 :b 2)");
  EXPECT_EQ(eval_print("(put nil :a 1)"), "(:a 1)");
  // A new plist: the old one is unchanged.
  EXPECT_EQ(eval_print("(defvar p '(:a 1)) (put p :a 2) p"), "(:a 1)");
  EXPECT_EQ(error_code("(put '(:a) :a 1)"), "E-EVAL-004");
  EXPECT_EQ(error_code("(put 5 :a 1)"), "E-EVAL-004");
}

TEST(Builtins, Keys) {
  EXPECT_EQ(eval_print("(keys '(:a 1 :b 2))"), "(:a :b)");
  EXPECT_EQ(eval_print("(keys nil)"), "nil");
  EXPECT_EQ(error_code("(keys '(:a 1 :b))"), "E-EVAL-004");
  EXPECT_EQ(error_code("(keys [:a 1])"), "E-EVAL-004");
}

// --- Strings, symbols, keywords -------------------------------------------------------------

TEST(Builtins, Str) {
  EXPECT_EQ(eval_print("(str \"a\" 1 :k 'sym 2.5 nil true)"), "\"a1:ksym2.5niltrue\"");
  EXPECT_EQ(eval_print("(str)"), "\"\"");
  EXPECT_EQ(eval_print("(str \"q\" '(\"x\" 1) [2])"), "\"q(x 1)[2]\"");
  EXPECT_EQ(eval_print("(str \"prefix.\" \"q_proj.weight\")"), "\"prefix.q_proj.weight\"");
}

TEST(Builtins, Format) {
  EXPECT_EQ(eval_print("(format \"x = {} and {}\" 1 \"s\")"), "\"x = 1 and s\"");
  EXPECT_EQ(eval_print("(format \"no holes\")"), "\"no holes\"");
  EXPECT_EQ(eval_print("(format \"{{}} {} }}{{\" 3)"), "\"{} 3 }{\"");
  EXPECT_EQ(eval_print("(format \"{}{}\" [1 2] :k)"), "\"[1 2]:k\"");
  EXPECT_EQ(eval_print("(format \"{}\" \"{}\")"), "\"{}\"");  // values are not patterns
  EXPECT_EQ(eval_print("(format \"\u00e9{}\u00e9\" 1.5)"), "\"\u00e91.5\u00e9\"");
  EXPECT_EQ(error_code("(format \"{} {}\" 1)"), "E-EVAL-004");
  EXPECT_EQ(error_message("(format \"{} {}\" 1)"), "the format string has 2 placeholders but 1 value was given");
  EXPECT_EQ(error_message("(format \"{}\" 1 2)"), "the format string has 1 placeholder but 2 values were given");
  EXPECT_EQ(error_code("(format \"a { b\")"), "E-EVAL-004");
  EXPECT_EQ(error_code("(format \"a } b\")"), "E-EVAL-004");
  EXPECT_EQ(error_code("(format \"{\")"), "E-EVAL-004");
  EXPECT_EQ(error_code("(format 5)"), "E-EVAL-004");
  EXPECT_EQ(error_code("(format)"), "E-EVAL-003");
}

TEST(Builtins, StringLengthAndSubstring) {
  EXPECT_EQ(eval_print("(string-length \"h\u00e9llo\")"), "5");
  EXPECT_EQ(eval_print("(string-length \"\")"), "0");
  EXPECT_EQ(error_code("(string-length '(1))"), "E-EVAL-004");
  EXPECT_EQ(eval_print("(substring \"h\u00e9llo\" 1 3)"), "\"\u00e9l\"");
  EXPECT_EQ(eval_print("(substring \"hello\" 2)"), "\"llo\"");
  EXPECT_EQ(eval_print("(substring \"hello\" 5)"), "\"\"");
  EXPECT_EQ(eval_print("(substring \"hello\" 0 0)"), "\"\"");
  EXPECT_EQ(eval_print("(substring \"\u00e9\u00e9\" 1)"), "\"\u00e9\"");
  EXPECT_EQ(error_code("(substring \"hello\" 6)"), "E-EVAL-015");
  EXPECT_EQ(error_code("(substring \"hello\" -1)"), "E-EVAL-015");
  EXPECT_EQ(error_code("(substring \"hello\" 0 9)"), "E-EVAL-015");
  EXPECT_EQ(error_code("(substring \"hello\" 3 2)"), "E-EVAL-015");
  EXPECT_EQ(error_message("(substring \"hello\" 7)"),
            "index 7 is out of range for `substring` of a string of length 5");
  EXPECT_EQ(error_code("(substring 'hello 1)"), "E-EVAL-004");
  EXPECT_EQ(error_code("(substring \"hello\" 1.0)"), "E-EVAL-004");
}

TEST(Builtins, Split) {
  EXPECT_EQ(eval_print("(split \"a,b,,c\" \",\")"), "(\"a\" \"b\" \"\" \"c\")");
  EXPECT_EQ(eval_print("(split \"teacher.blocks.3.attn\" \".\")"), "(\"teacher\" \"blocks\" \"3\" \"attn\")");
  EXPECT_EQ(eval_print("(split \"a::b\" \"::\")"), "(\"a\" \"b\")");
  EXPECT_EQ(eval_print("(split \"abc\" \",\")"), "(\"abc\")");
  EXPECT_EQ(eval_print("(split \"\" \",\")"), "(\"\")");
  EXPECT_EQ(eval_print("(split \"  a b\\t\\nc \")"), "(\"a\" \"b\" \"c\")");
  EXPECT_EQ(eval_print("(split \"   \")"), "nil");
  EXPECT_EQ(eval_print("(split \"h\u00e9\" \"\")"), "(\"h\" \"\u00e9\")");
  EXPECT_EQ(error_code("(split 5 \",\")"), "E-EVAL-004");
  EXPECT_EQ(error_code("(split \"a\" 5)"), "E-EVAL-004");
}

TEST(Builtins, Join) {
  EXPECT_EQ(eval_print("(join '(\"a\" \"b\" \"c\") \", \")"), "\"a, b, c\"");
  EXPECT_EQ(eval_print("(join [\"a\" \"b\"])"), "\"ab\"");
  EXPECT_EQ(eval_print("(join '(1 :k 2.5) \"-\")"), "\"1-:k-2.5\"");
  EXPECT_EQ(eval_print("(join nil \",\")"), "\"\"");
  EXPECT_EQ(eval_print("(join (split \"a.b.c\" \".\") \"/\")"), "\"a/b/c\"");
  EXPECT_EQ(error_code("(join \"abc\" \",\")"), "E-EVAL-004");
  EXPECT_EQ(error_code("(join '(\"a\") 1)"), "E-EVAL-004");
}

TEST(Builtins, CaseAndAffixes) {
  EXPECT_EQ(eval_print("(upcase \"Hello, w\u00e9rld 1\")"), "\"HELLO, W\u00e9RLD 1\"");  // ASCII only
  EXPECT_EQ(eval_print("(downcase \"HeLLo\")"), "\"hello\"");
  EXPECT_EQ(error_code("(upcase :k)"), "E-EVAL-004");
  EXPECT_EQ(eval_print("(list (starts-with? \"model.layers\" \"model.\") (starts-with? \"ab\" \"abc\"))"),
            "(true false)");
  EXPECT_EQ(eval_print("(list (ends-with? \"q_proj.weight\" \".weight\") (ends-with? \"a\" \"b\"))"), "(true false)");
  EXPECT_EQ(eval_print("(list (starts-with? \"a\" \"\") (ends-with? \"\" \"\"))"), "(true true)");
  EXPECT_EQ(error_code("(starts-with? \"a\" 'a)"), "E-EVAL-004");
  EXPECT_EQ(error_code("(ends-with? 1 \"a\")"), "E-EVAL-004");
}

TEST(Builtins, ReplaceAndTrim) {
  EXPECT_EQ(eval_print("(replace \"teacher.blocks.3\" \"blocks\" \"layers\")"), "\"teacher.layers.3\"");
  EXPECT_EQ(eval_print("(replace \"a.b.c\" \".\" \"::\")"), "\"a::b::c\"");
  EXPECT_EQ(eval_print("(replace \"aaa\" \"aa\" \"b\")"), "\"ba\"");
  EXPECT_EQ(eval_print("(replace \"abc\" \"x\" \"y\")"), "\"abc\"");
  EXPECT_EQ(error_code("(replace \"abc\" \"\" \"y\")"), "E-EVAL-004");
  EXPECT_EQ(eval_print("(trim \"  a b \\n\")"), "\"a b\"");
  EXPECT_EQ(eval_print("(trim \"   \")"), "\"\"");
  EXPECT_EQ(error_code("(trim 1)"), "E-EVAL-004");
}

TEST(Builtins, NameSymbolKeyword) {
  EXPECT_EQ(eval_print("(name :k)"), "\"k\"");
  EXPECT_EQ(eval_print("(name 'sym)"), "\"sym\"");
  EXPECT_EQ(eval_print("(name \"s\")"), "\"s\"");
  EXPECT_EQ(error_code("(name 1)"), "E-EVAL-004");
  EXPECT_EQ(eval_print("(symbol \"abc\")"), "abc");
  EXPECT_EQ(eval_print("(equal (symbol \"abc\") 'abc)"), "true");  // interned
  EXPECT_EQ(eval_print("(symbol? (symbol \"x\"))"), "true");
  EXPECT_EQ(eval_print("(keyword \"k\")"), ":k");
  EXPECT_EQ(eval_print("(keyword \":k\")"), ":k");
  EXPECT_EQ(eval_print("(equal (keyword \"dtype\") :dtype)"), "true");
  EXPECT_EQ(eval_print("(keyword (name 'x))"), ":x");
  EXPECT_EQ(error_code("(symbol \"\")"), "E-EVAL-004");
  EXPECT_EQ(error_code("(symbol \"a b\")"), "E-EVAL-004");
  EXPECT_EQ(error_code("(symbol :k)"), "E-EVAL-004");
  EXPECT_EQ(error_code("(keyword \"\")"), "E-EVAL-004");
  EXPECT_EQ(error_code("(keyword \":\")"), "E-EVAL-004");
  EXPECT_EQ(error_code("(keyword \"a:b\")"), "E-EVAL-004");
  EXPECT_EQ(error_code("(keyword 'k)"), "E-EVAL-004");
}

TEST(Builtins, ParseNumber) {
  EXPECT_EQ(eval_print("(parse-number \"12\")"), "12");
  EXPECT_EQ(eval_print("(parse-number \"-3\")"), "-3");
  EXPECT_EQ(eval_print("(parse-number \"+7\")"), "7");
  EXPECT_EQ(eval_print("(parse-number \"1.5\")"), "1.5");
  EXPECT_EQ(eval_print("(parse-number \"-.5\")"), "-0.5");
  EXPECT_EQ(eval_print("(parse-number \"3e-4\")"), "0.0003");
  EXPECT_EQ(eval_print("(parse-number \"1e3\")"), "1000.0");
  EXPECT_EQ(eval_print("(int? (parse-number \"9223372036854775807\"))"), "true");
  for (const char* junk : {"", "abc", "12abc", " 12", "12 ", "1.2.3", "-", "+", ".", "inf", "nan", "0x10", "--1"}) {
    EXPECT_EQ(error_code(std::string("(parse-number \"") + junk + "\")"), "E-EVAL-004") << junk;
  }
  EXPECT_EQ(error_code("(parse-number \"99999999999999999999\")"), "E-EVAL-009");
  EXPECT_EQ(error_code("(parse-number 12)"), "E-EVAL-004");
}

TEST(Builtins, Gensym) {
  EXPECT_EQ(eval_print("(symbol? (gensym))"), "true");
  EXPECT_TRUE(eval_print("(gensym)").starts_with("g__"));
  EXPECT_TRUE(eval_print("(gensym \"tmp\")").starts_with("tmp__"));
  EXPECT_EQ(eval_print("(equal (gensym) (gensym))"), "false");
  EXPECT_EQ(eval_print("(let ((g (gensym))) (equal g g))"), "true");
  // Uninterned: the symbol read from its printed name is a different symbol.
  EXPECT_EQ(eval_print("(let ((g (gensym))) (equal g (symbol (name g))))"), "false");
  EXPECT_EQ(eval_print("(list (gensym? (gensym)) (gensym? 'g__1) (gensym? \"g\") (gensym? 1))"),
            "(true false false false)");
  // The use gensym exists for: a macro's hygienic temporary.
  EXPECT_EQ(eval_print("(defmacro twice (form) (let ((v (gensym))) `(let ((,v ,form)) (+ ,v ,v))))"
                       "(let ((x 5)) (twice x))"),
            "10");
  EXPECT_EQ(error_code("(gensym 5)"), "E-EVAL-004");
  EXPECT_EQ(error_code("(gensym \"a\" \"b\")"), "E-EVAL-003");
}

// --- Misc: equality, predicates, type-of ---------------------------------------------------

TEST(Builtins, EqualNotIdentity) {
  EXPECT_EQ(eval_print("(list (equal '(1 [2 \"x\"]) (list 1 (vector 2 \"x\"))) (equal 1 1.0) (equal nil '()))"),
            "(true false true)");
  EXPECT_EQ(eval_print("(list (equal :a :a) (equal 'a 'a) (equal [1] '(1)))"), "(true true false)");
  EXPECT_EQ(eval_print("(list (not nil) (not false) (not 0) (not \"\") (not []))"), "(true true false false false)");
  EXPECT_EQ(eval_print("(identity '(1 2))"), "(1 2)");
  EXPECT_EQ(error_code("(not)"), "E-EVAL-003");
  EXPECT_EQ(error_code("(identity 1 2)"), "E-EVAL-003");
}

TEST(Builtins, TypePredicates) {
  EXPECT_EQ(eval_print("(map nil? '(nil false 0 ()))"), "(true false false true)");
  EXPECT_EQ(eval_print("(map bool? '(true false nil 1))"), "(true true false false)");
  EXPECT_EQ(eval_print("(map int? '(1 1.0 \"1\"))"), "(true false false)");
  EXPECT_EQ(eval_print("(map float? (list 1 1.0 inf))"), "(false true true)");
  EXPECT_EQ(eval_print("(map number? '(1 1.0 :k))"), "(true true false)");
  EXPECT_EQ(eval_print("(map string? '(\"\" s :s))"), "(true false false)");
  EXPECT_EQ(eval_print("(map symbol? '(s :s \"s\" nil))"), "(true false false false)");
  EXPECT_EQ(eval_print("(map keyword? '(s :s))"), "(false true)");
  EXPECT_EQ(eval_print("(map list? '(nil (1) [1] \"l\"))"), "(true true false false)");
  EXPECT_EQ(eval_print("(map vector? '([] (1) nil))"), "(true false false)");
  EXPECT_EQ(eval_print("(list (function? +) (function? (lambda (x) x)) (function? 'f) (function? nil))"),
            "(true true false false)");
  EXPECT_EQ(eval_print("(defun f (x) x) (function? f)"), "true");
  EXPECT_EQ(error_code("(int?)"), "E-EVAL-003");
  EXPECT_EQ(error_code("(list? 1 2)"), "E-EVAL-003");
}

TEST(Builtins, TypeOf) {
  EXPECT_EQ(eval_print("(map type-of (list 1 1.5 \"s\" '(1) [1] + :k 's true nil))"),
            "(:int :float :string :list :vector :function :keyword :symbol :bool :nil)");
  EXPECT_EQ(eval_print("(type-of (lambda (x) x))"), ":function");
  EXPECT_EQ(eval_print("(type-of '())"), ":nil");
  EXPECT_EQ(eval_print("(type-of false)"), ":bool");
}

TEST(Builtins, ErrorAndPrint) {
  EXPECT_EQ(error_code("(error \"bad\" 1)"), "E-EVAL-010");
  EXPECT_EQ(error_message("(error \"bad value:\" \"s\" 1)"), "bad value: \"s\" 1");
  EXPECT_EQ(error_code("(error 1)"), "E-EVAL-004");
  ::testing::internal::CaptureStdout();
  std::string value = eval_print("(print \"a\" 1 :k)");
  EXPECT_EQ(::testing::internal::GetCapturedStdout(), "a 1 :k\n");
  EXPECT_EQ(value, ":k");
}

}  // namespace
}  // namespace sx::lang
