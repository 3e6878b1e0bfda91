// The evaluator: special forms, closures, lambda lists, macros, modules, limits.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "lang/diagnostic.h"
#include "test_util.h"

namespace sx::lang {
namespace {

using testing::error_code;
using testing::eval_print;

TEST(Eval, TheIssueExample) {
  EXPECT_EQ(eval_print("(let ((f (lambda (x &key (y 2)) (+ x y)))) (list (f 1) (f 1 :y 5)))"), "(3 6)");
}

TEST(Eval, SelfEvaluatingAndVectors) {
  EXPECT_EQ(eval_print("1"), "1");
  EXPECT_EQ(eval_print(":k"), ":k");
  EXPECT_EQ(eval_print("(let ((in 3) (out 4)) [in out])"), "[3 4]");
  EXPECT_EQ(eval_print("'(a [b c])"), "(a [b c])");
}

TEST(Eval, Truth) {
  EXPECT_EQ(eval_print("(list (if nil 1 2) (if false 1 2) (if 0 1 2) (if \"\" 1 2) (if [] 1 2) (if '() 1 2))"),
            "(2 2 1 1 1 2)");
  EXPECT_EQ(eval_print("(list (and 1 2) (and 1 nil 2) (or nil false 3) (or) (and))"), "(2 nil 3 nil true)");
  EXPECT_EQ(eval_print("(let ((init-std nil) (in 4)) (or init-std (/ 1.0 (sqrt in))))"), "0.5");
}

TEST(Eval, ConditionalForms) {
  EXPECT_EQ(eval_print("(cond ((= 1 2) :a) ((= 1 1) :b) (true :c))"), ":b");
  EXPECT_EQ(eval_print("(cond ((= 1 2) :a))"), "nil");
  EXPECT_EQ(eval_print("(cond (5))"), "5");
  EXPECT_EQ(eval_print("(list (when true 1 2) (when false 1) (unless false 3) (unless true 4))"), "(2 nil 3 nil)");
}

TEST(Eval, LetIsParallelLetStarSequential) {
  EXPECT_EQ(eval_print("(let ((x 1)) (let ((x 2) (y x)) y))"), "1");
  EXPECT_EQ(eval_print("(let ((x 1)) (let* ((x 2) (y x)) y))"), "2");
  EXPECT_EQ(eval_print("(let (a (b)) (list a b))"), "(nil nil)");
}

TEST(Eval, ClosuresCaptureLexically) {
  EXPECT_EQ(eval_print("(defun adder (n) (lambda (x) (+ x n))) (let ((add2 (adder 2))) (add2 40))"), "42");
  EXPECT_EQ(eval_print("(defvar n 100) (defun get-n () n) (let ((n 1)) (get-n))"), "100");
}

TEST(Eval, RecursionAndDefun) {
  EXPECT_EQ(eval_print("(defun fact (n) \"factorial\" (if (= n 0) 1 (* n (fact (- n 1))))) (fact 20)"),
            "2432902008176640000");
  EXPECT_EQ(eval_print("(defun f () 1) f"), "#<function f>");
}

TEST(Eval, LambdaLists) {
  EXPECT_EQ(eval_print("((lambda (a &optional b (c 3)) (list a b c)) 1)"), "(1 nil 3)");
  EXPECT_EQ(eval_print("((lambda (a &optional b (c 3)) (list a b c)) 1 2 4)"), "(1 2 4)");
  EXPECT_EQ(eval_print("((lambda (a &rest r) (list a r)) 1 2 3)"), "(1 (2 3))");
  EXPECT_EQ(eval_print("((lambda (&key (a 1) b) (list a b)) :b 2)"), "(1 2)");
  EXPECT_EQ(eval_print("((lambda (x &key (y (* x 10))) y) 4)"), "40");
  EXPECT_EQ(eval_print("((lambda (&rest r &key a) (list r a)) :a 1)"), "((:a 1) 1)");
}

TEST(Eval, LambdaListErrors) {
  EXPECT_EQ(error_code("(lambda (1) 1)"), "E-EVAL-005");
  EXPECT_EQ(error_code("(lambda (a a) 1)"), "E-EVAL-005");
  EXPECT_EQ(error_code("(lambda (&key a &optional b) 1)"), "E-EVAL-005");
  EXPECT_EQ(error_code("(lambda (&rest) 1)"), "E-EVAL-005");
  EXPECT_EQ(error_code("(lambda (&rest a b) 1)"), "E-EVAL-005");
  EXPECT_EQ(error_code("(lambda (&frob a) 1)"), "E-EVAL-005");
  EXPECT_EQ(error_code("(lambda ((a 1)) 1)"), "E-EVAL-005");
}

TEST(Eval, CallErrors) {
  EXPECT_EQ(error_code("undefined-name"), "E-EVAL-001");
  EXPECT_EQ(error_code("(1 2)"), "E-EVAL-002");
  EXPECT_EQ(error_code("((lambda (x) x))"), "E-EVAL-003");
  EXPECT_EQ(error_code("((lambda (x) x) 1 2)"), "E-EVAL-003");
  EXPECT_EQ(error_code("(+ 1 :a)"), "E-EVAL-004");
  EXPECT_EQ(error_code("((lambda (&key a) a) :b 1)"), "E-EVAL-006");
  EXPECT_EQ(error_code("((lambda (&key a) a) 5)"), "E-EVAL-006");
  EXPECT_EQ(error_code("((lambda (&key a) a) :a 1 :a 2)"), "E-EVAL-006");
  EXPECT_EQ(error_code("((lambda (&key a) a) :a)"), "E-EVAL-007");
  EXPECT_EQ(error_code("(error \"boom\" 1 :x)"), "E-EVAL-010");
}

TEST(Eval, UnboundNamesSuggestANameLikeIt) {
  auto help = [](const std::string& text) {
    auto d = testing::eval_error(text);
    return d && !d->helps.empty() ? d->helps[0] : "";
  };
  EXPECT_EQ(help("(defvar learning-rate 1) learning-rat"), "a name like it is defined: `learning-rate`");
  EXPECT_EQ(help("(defvar learning-rate 1) laerning-rate"), "a name like it is defined: `learning-rate`");
  EXPECT_EQ(help("(let ((widht 2)) (+ 1 width))"), "a name like it is defined: `widht`");
  EXPECT_EQ(help("(defvar abc 1) xyz"), "define it with `defvar` or `defun`, or bind it with `let`");
}

// A name of a million characters beside a defined one as long: the suggestion's distance
// must not cost the product of their lengths (it once took more than 7 GB).
TEST(Eval, AHugeUnboundNameGetsItsDiagnosticQuickly) {
  const std::string defined(1'000'000, 'n');
  const std::string wanted = std::string(999'999, 'n') + "m";
  Interpreter interp(testing::test_options());
  Ref<Env> env = interp.new_top_level();
  auto start = std::chrono::steady_clock::now();
  try {
    interp.eval_text("(defvar " + defined + " 1)\n" + wanted + "\n", "huge.sx", *env);
    FAIL() << "no error";
  } catch (const Error& e) {
    std::string text = render(e.diagnostic(), false);
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(e.diagnostic().code, "E-EVAL-001");
    EXPECT_LT(seconds, 2.0);
    // The name is cut in the message (its first 80 characters, "..." and its length), and
    // the source line and its underline to the window a diagnostic shows.
    EXPECT_EQ(e.diagnostic().message, "unbound name `" + std::string(80, 'n') + "... (1000000 characters)`");
    EXPECT_LT(text.size(), 1000u) << text.substr(0, 1000);
  }
}

TEST(Eval, UnboundNamesOfTheStandardLibrarySayWhichModuleToRequire) {
  auto help = [](const std::string& text, InterpreterOptions options = testing::test_options()) {
    auto d = testing::eval_error(text, options);
    EXPECT_TRUE(d && d->code == "E-EVAL-001") << text;
    return d && !d->helps.empty() ? d->helps[0] : "";
  };
  EXPECT_EQ(help("(mean x)"), "the standard library defines `mean`: (require \"sexpgpu/ops\")");
  EXPECT_EQ(help("(relu x)"), "the standard library defines `relu`: (require \"sexpgpu/ops\")");
  EXPECT_EQ(help("(softmax x)"), "the standard library defines `softmax`: (require \"sexpgpu/ops\")");
  EXPECT_EQ(help("(linear 3 4)"), "the standard library defines `linear`: (require \"sexpgpu/nn\")");
  // One name, one thing: the layer is nn's; ops' function with a weight is `normalize`.
  EXPECT_EQ(help("(layer-norm 4)"), "the standard library defines `layer-norm`: (require \"sexpgpu/nn\")");
  EXPECT_EQ(help("(rms-norm 4)"), "the standard library defines `rms-norm`: (require \"sexpgpu/nn\")");
  EXPECT_EQ(help("(normalize x)"), "the standard library defines `normalize`: (require \"sexpgpu/ops\")");
  // The table is read from the module files: a module added to the library is found too.
  auto dir = std::filesystem::temp_directory_path() / ("sexpgpu-lib-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir / "sexpgpu" / "extra");
  std::ofstream(dir / "sexpgpu" / "extra" / "more.sx") << "(defun frobnicate (x) x)\n(defmacro twiddle (x) x)\n";
  std::ofstream(dir / "sexpgpu" / "broken.sx") << "(defun unread (x\n";
  std::ofstream(dir / "sexpgpu" / "other.sx") << "(defvar twiddle 1)\n";
  InterpreterOptions options;
  options.library_dirs = {dir.string()};
  EXPECT_EQ(help("(frobnicate 1)", options),
            "the standard library defines `frobnicate`: (require \"sexpgpu/extra/more\")");
  // A name two modules define names both.
  EXPECT_EQ(help("(twiddle 1)", options),
            "the standard library defines `twiddle`: (require \"sexpgpu/extra/more\") or (require \"sexpgpu/other\")");
  EXPECT_EQ(help("(mean 1)", options), "define it with `defvar` or `defun`, or bind it with `let`");
  std::filesystem::remove_all(dir);
}

TEST(Eval, UserErrorMessageAndCallChain) {
  Interpreter interp(testing::test_options());
  Ref<Env> env = interp.new_top_level();
  try {
    interp.eval_text("(defun inner (x) (error \"bad value\" x))\n(defun outer () (inner 7))\n(outer)", "t.sx", *env);
    FAIL() << "no error";
  } catch (const Error& e) {
    const Diagnostic& d = e.diagnostic();
    EXPECT_EQ(d.message, "bad value 7");
    EXPECT_EQ(d.span.location(), "t.sx:1:18");
    ASSERT_EQ(d.calls.size(), 2u);
    EXPECT_EQ(d.calls[0].function, "`inner`");
    EXPECT_EQ(d.calls[0].call.location(), "t.sx:2:17");
    EXPECT_EQ(d.calls[1].call.location(), "t.sx:3:1");
  }
}

TEST(Eval, RecursionTooDeepIsFastAndClean) {
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(error_code("(defun f (x) (f x)) (f 1)"), "E-EVAL-008");
  EXPECT_EQ(error_code("(defmacro m () '(m)) (m)"), "E-EVAL-008");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
}

TEST(Eval, IntegerOverflowIsAnError) {
  EXPECT_EQ(error_code("(+ 9223372036854775807 1)"), "E-EVAL-009");
  EXPECT_EQ(error_code("(- -9223372036854775808 1)"), "E-EVAL-009");
  EXPECT_EQ(error_code("(* 4294967296 4294967296)"), "E-EVAL-009");
  EXPECT_EQ(error_code("(- -9223372036854775808)"), "E-EVAL-009");
  EXPECT_EQ(error_code("(expt 2 63)"), "E-EVAL-009");
  EXPECT_EQ(eval_print("(expt 2 62)"), "4611686018427387904");
  EXPECT_EQ(eval_print("(+ 9223372036854775807 1.0)"), "9.223372036854776e+18");
}

TEST(Eval, Division) {
  EXPECT_EQ(eval_print("(list (/ 6 3) (/ 7 2) (/ 1.0 4) (/ 2) (quot -7 2) (rem -7 2) (mod -7 2))"),
            "(2 3.5 0.25 0.5 -3 -1 1)");
  EXPECT_EQ(error_code("(/ 1 0)"), "E-EVAL-014");
  EXPECT_EQ(eval_print("(/ 1.0 0)"), "+inf.0");
}

TEST(Eval, MalformedSpecialForms) {
  EXPECT_EQ(error_code("(if)"), "E-EVAL-011");
  EXPECT_EQ(error_code("(let (1) 1)"), "E-EVAL-011");
  EXPECT_EQ(error_code("(let x 1)"), "E-EVAL-011");
  EXPECT_EQ(error_code("(defvar)"), "E-EVAL-011");
  EXPECT_EQ(error_code("(defun f)"), "E-EVAL-011");
  EXPECT_EQ(error_code("(quote)"), "E-EVAL-011");
  EXPECT_EQ(error_code(",x"), "E-EVAL-011");
  EXPECT_EQ(error_code("(cond 1)"), "E-EVAL-011");
}

TEST(Eval, ReservedNames) {
  EXPECT_EQ(error_code("(defun if (x) x)"), "E-EVAL-016");
  EXPECT_EQ(error_code("(let ((let 1)) let)"), "E-EVAL-016");
  EXPECT_EQ(error_code("(defmodel m () (lambda (x) x))"), "E-EVAL-016");
  EXPECT_EQ(error_code("if"), "E-EVAL-016");
}

TEST(Eval, Macros) {
  EXPECT_EQ(eval_print("(defmacro swap (a b) `(list ,b ,a)) (swap 1 2)"), "(2 1)");
  EXPECT_EQ(eval_print("(defmacro my-when (c &rest body) `(if ,c (progn ,@body))) (my-when true 1 2)"), "2");
  EXPECT_EQ(eval_print("(let ((x 1) (xs '(2 3))) `[,x ,@xs 4])"), "[1 2 3 4]");
  EXPECT_EQ(eval_print("``(a ,,(+ 1 2))"), "(quasiquote (a (unquote 3)))");
}

TEST(Eval, MacroArgumentsKeepTheirSpans) {
  Interpreter interp(testing::test_options());
  Ref<Env> env = interp.new_top_level();
  try {
    interp.eval_text("(defmacro twice (e) `(progn ,e ,e))\n(twice (oops))", "t.sx", *env);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.diagnostic().code, "E-EVAL-001");
    EXPECT_EQ(e.diagnostic().span.location(), "t.sx:2:9");
  }
}

TEST(Eval, Warnings) {
  Interpreter interp(testing::test_options());
  std::vector<std::string> codes;
  interp.on_warning = [&](const Diagnostic& d) { codes.push_back(d.code); };
  Ref<Env> env = interp.new_top_level();
  interp.eval_text("(defvar x 1) (defvar x 2) (defun list () 1)", "t.sx", *env);
  EXPECT_EQ(codes, (std::vector<std::string>{"W-EVAL-002", "W-EVAL-001"}));
}

TEST(Eval, StepBudget) {
  InterpreterOptions options = testing::test_options();
  options.max_steps = 1000;
  Interpreter interp(options);
  Ref<Env> env = interp.new_top_level();
  try {
    interp.eval_text("(defun loop (n) (if (= n 0) 0 (loop (- n 1)))) (loop 5000)", "t.sx", *env);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.diagnostic().code, "E-EVAL-017");
  }
}

TEST(Eval, LongListsAndCyclesAreFreedSafely) {
  // A million-element list is destroyed without recursion; closures stored in the
  // environment they capture do not leak (the sanitizer build checks for leaks).
  EXPECT_EQ(eval_print("(defun build (n acc) (if (= n 0) acc (build (- n 1) (cons n acc)))) (length (build 5 nil))"),
            "5");
  EXPECT_EQ(eval_print("(let ((f (lambda (x) x))) (f 1))"), "1");
  Value big;
  for (int i = 0; i < 1000000; ++i) big = cons(Value::integer(i), std::move(big));
  big = Value();
}

class Modules : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("sexpgpu-modules-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_ / "sub");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void write(const std::string& name, const std::string& text) { std::ofstream(dir_ / name) << text; }
  std::string run(const std::string& main) {
    write("main.sx", main);
    Interpreter interp(testing::test_options());
    try {
      Ref<Env> env = interp.load_file((dir_ / "main.sx").string());
      return print(interp.eval_text("result", "<expr>", *env));
    } catch (const Error& e) {
      return e.diagnostic().code + ": " + e.diagnostic().message;
    }
  }
  std::filesystem::path dir_;
};

TEST_F(Modules, RelativeRequireLoadsOnceAndImports) {
  write("sub/helpers.sx", "(defvar loads (+ 1 0)) (defun double (x) (* 2 x))");
  write("sub/other.sx", "(require \"helpers\") (defun quad (x) (double (double x)))");
  EXPECT_EQ(run("(require \"sub/helpers\") (require \"sub/other.sx\") (defvar result (list (quad 1) loads))"), "(4 1)");
}

TEST_F(Modules, OnlyImportsTheNamedDefinitions) {
  write("m.sx", "(defun a () 1) (defun b () 2)");
  EXPECT_EQ(run("(require \"m\" :only (a)) (defvar result (a))"), "1");
  EXPECT_EQ(run("(require \"m\" :only (a)) (defvar result (b))").substr(0, 10), "E-EVAL-001");
  EXPECT_EQ(run("(require \"m\" :only (c)) (defvar result 1)").substr(0, 10), "E-EVAL-012");
}

TEST_F(Modules, ANameTooLongForTheSystemIsAnErrorWithTheNameCut) {
  const std::string name(5000, 'm');
  for (const std::string& required : {name, "sub/" + name + "/x", "sexpgpu/" + name}) {
    std::string error = run("(require \"" + required + "\")");
    EXPECT_EQ(error.substr(0, 10), "E-EVAL-012") << error.substr(0, 200);
    EXPECT_LT(error.size(), 400u) << error.substr(0, 200);
    EXPECT_NE(error.find(required.substr(0, 80) + "..."), std::string::npos) << error.substr(0, 200);
  }
}

TEST_F(Modules, MissingModulesAndCycles) {
  EXPECT_EQ(run("(require \"nope\")").substr(0, 10), "E-EVAL-012");
  EXPECT_EQ(run("(require \"sexpgpu/nope\")").substr(0, 10), "E-EVAL-012");
  write("a.sx", "(require \"b\")");
  write("b.sx", "(require \"a\")");
  EXPECT_EQ(run("(require \"a\")"), "E-EVAL-013: require cycle: a.sx -> b.sx -> a.sx");
}

// One name, one thing: a require never replaces a name the file has (E-EVAL-018), and
// is refused before it imports anything.
TEST_F(Modules, ARequireNeverReplacesAName) {
  write("m.sx", "(defun a () 1) (defvar v 10)");
  write("n.sx", "(defun a () 2) (defun b () 3) (defvar v 20)");
  write("same.sx", "(require \"m\") (defun c () 4)");
  EXPECT_EQ(run("(require \"m\") (require \"n\")"), "E-EVAL-018: `a` from \"n\" would replace `a` from \"m\"");
  EXPECT_EQ(run("(require \"m\") (require \"n\" :only (b v))"),
            "E-EVAL-018: `v` from \"n\" would replace `v` from \"m\"");
  EXPECT_EQ(run("(defun b () 0) (require \"n\")"),
            "E-EVAL-018: `b` from \"n\" would replace the `b` defined in this file");
  // What does not clash is fine: :only leaving the name out, one module twice, the same
  // definitions through a module that re-exports them, an equal plain value.
  EXPECT_EQ(run("(require \"m\") (require \"n\" :only (b)) (defvar result (list (a) (b) v))"), "(1 3 10)");
  EXPECT_EQ(run("(require \"m\") (require \"same\") (require \"m\") (defvar result (list (a) (c)))"), "(1 4)");
  EXPECT_EQ(run("(defvar v 10) (require \"m\" :only (v)) (defvar result v)"), "10");
  // A definition after a require may still replace an imported name: only a warning.
  EXPECT_EQ(run("(require \"m\") (defun a () 5) (defvar result (a))"), "5");
}

TEST_F(Modules, ARefusedRequireImportsNothingAndNamesBothModules) {
  write("m.sx", "(defun a () 1)");
  write("n.sx", "(defun b () 2) (defun a () 3) (defun c () 4) (defun d () 5)");
  write("o.sx", "(defun a () 6) (defun b () 7)");
  Interpreter interp(testing::test_options());
  Ref<Env> env = interp.new_top_level((dir_ / "repl.sx").string());
  try {
    interp.eval_text("(require \"m\")\n(require \"n\")", (dir_ / "repl.sx").string(), *env);
    FAIL() << "no error";
  } catch (const Error& e) {
    const Diagnostic& d = e.diagnostic();
    EXPECT_EQ(d.code, "E-EVAL-018");
    ASSERT_EQ(d.notes.size(), 1u);
    EXPECT_TRUE(d.notes[0].starts_with("\"m\" was required at ")) << d.notes[0];
    ASSERT_EQ(d.helps.size(), 1u);
    EXPECT_NE(d.helps[0].find(":only"), std::string::npos) << d.helps[0];
  }
  // Nothing of n came in, not even the names that did not clash, and a stays m's.
  EXPECT_EQ(env->lookup_local(intern("b")), nullptr);
  EXPECT_EQ(print(interp.eval_text("(a)", "<expr>", *env)), "1");
  // Every clashing name is named: the first in the message, the others in a note.
  try {
    interp.eval_text("(require \"n\" :only (b))\n(require \"o\")", (dir_ / "repl.sx").string(), *env);
    FAIL() << "no error";
  } catch (const Error& e) {
    const Diagnostic& d = e.diagnostic();
    EXPECT_EQ(d.message, "`a` from \"o\" would replace `a` from \"m\"");
    ASSERT_EQ(d.notes.size(), 2u);
    EXPECT_EQ(d.notes[1], "\"o\" would also replace `b`");
  }
}

TEST(Diagnostics, RenderMatchesTheDesign) {
  SourceMap sources;
  const SourceFile& file = sources.add("model.sx", "(defmodel m ()\n  (defparam weight (normal (shape x) :std s)))\n");
  Diagnostic d;
  d.code = "E-PARAM-003";
  d.message = "the initializer of `weight` reads `x`";
  d.span = Span{&file, 34, 25};
  d.helps.push_back("build the initializer from shapes and constants only");
  EXPECT_EQ(render(d, false),
            "error[E-PARAM-003]: the initializer of `weight` reads `x`\n"
            "  --> model.sx:2:20\n"
            "   |\n"
            " 2 |   (defparam weight (normal (shape x) :std s)))\n"
            "   |                    ^^^^^^^^^^^^^^^^^^^^^^^^^\n"
            "   = help: build the initializer from shapes and constants only\n");
}

// A diagnostic can outlive the interpreter whose sources its spans point into (a command
// that made its session inside the call that failed), or point past a file's end: it is
// rendered without the source line, never by reading what is not there.
// A diagnostic can outlive the interpreter whose files it points into (evaluate and
// export report after their session ends): its spans keep the text, and it still shows
// its line. A span past its file's text shows none.
TEST(Diagnostics, ASpanOutlivingItsSourcesOrPastTheirTextRenders) {
  Diagnostic d;
  d.code = "E-CKPT-006";
  d.message = "params.safetensors holds no `model.head.weight`";
  d.helps.push_back("export the checkpoint with the file its run trained");
  {
    SourceMap sources;
    const SourceFile& file = sources.add("run.sx", "(defparam weight (zeros [2 2]))\n");
    d.span = Span{&file, 1, 8};
    d.calls.push_back({"`f`", Span{&file, 0, 31}});
  }
  const std::string rendered = render(d, false);
  EXPECT_NE(rendered.find("--> run.sx:1:2"), std::string::npos) << rendered;
  EXPECT_NE(rendered.find("(defparam weight (zeros [2 2]))"), std::string::npos) << rendered;
  EXPECT_NE(rendered.find("  = note: in `f`, called at run.sx:1:1"), std::string::npos) << rendered;

  SourceMap sources;
  const SourceFile& file = sources.add("run.sx", "(defparam weight (zeros [2 2]))\n");
  d.span = Span{&file, 1000, 8};
  d.calls.clear();
  d.calls.push_back({"`f`", Span{&file, 0, 31}});
  EXPECT_EQ(render(d, false),
            "error[E-CKPT-006]: params.safetensors holds no `model.head.weight`\n"
            "  = help: export the checkpoint with the file its run trained\n"
            "  = note: in `f`, called at run.sx:1:1\n");
}

}  // namespace
}  // namespace sx::lang
