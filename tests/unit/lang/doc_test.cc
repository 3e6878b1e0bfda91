// (doc NAME) and (help), the documentation in every builtin's row, and docs/builtins.md
// as generated from those rows.
#include "lang/doc.h"

#include <gtest/gtest.h>

#include <string>

#include "lang/builtins/builtins.h"
#include "test_util.h"

namespace sx::lang {
namespace {

using testing::error_code;
using testing::eval_print;

// The text (doc ...) gives, as the REPL shows it.
std::string doc_of(const std::string& text) { return eval_print(text); }

TEST(Doc, BuiltinShowsItsLambdaListSummaryAndExample) {
  std::string text = doc_of("(doc map)");
  EXPECT_TRUE(text.starts_with("(map f seq &rest seqs)\n")) << text;
  EXPECT_NE(text.find("A builtin function (Lists, vectors and plists)."), std::string::npos) << text;
  EXPECT_NE(text.find("stopping at the shortest"), std::string::npos) << text;
  EXPECT_NE(text.find("  Example:\n    (map + [1 2 3] [10 20 30])\n    ;; => [11 22 33]"), std::string::npos) << text;
  // help is doc; a quoted symbol and a string name the same.
  EXPECT_EQ(doc_of("(help map)"), text);
  EXPECT_EQ(doc_of("(doc 'map)"), text);
  EXPECT_EQ(doc_of("(doc \"map\")"), text);
  EXPECT_EQ(eval_print("(type-of (doc map))"), ":documentation");
}

TEST(Doc, DefunShowsItsDocstring) {
  std::string text = doc_of(
      "(defun scale (x &key (by 2))\n"
      "  \"x times by.\n"
      "   Works on tensors too.\"\n"
      "  (* x by))\n"
      "(doc scale)");
  EXPECT_EQ(text,
            "(scale x &key (by 2))\n"
            "  A function, defined at <test>:1:1.\n"
            "  x times by.\n"
            "  Works on tensors too.");
  // The docstring is documentation, not the body's value.
  EXPECT_EQ(eval_print("(defun f (x) \"doc\" (* 2 x)) (f 3)"), "6");
  // A lone string is the body, as before.
  EXPECT_EQ(eval_print("(defun g () \"only\") (g)"), "\"only\"");
  EXPECT_NE(doc_of("(defun g () \"only\") (doc g)").find("No documentation"), std::string::npos);
}

TEST(Doc, MacrosLambdasAndValues) {
  EXPECT_TRUE(doc_of("(defmacro twice (form) \"Twice form.\" `(list ,form ,form)) (doc twice)")
                  .starts_with("(twice form)\n  A macro, defined at"));
  EXPECT_TRUE(doc_of("(doc (lambda (a &optional b) \"Doc.\" a))").starts_with("(lambda a &optional b)"));
  EXPECT_EQ(doc_of("(doc pi)"), "`pi` is a float: 3.141592653589793");
  EXPECT_EQ(doc_of("(defvar width 128) (doc width)"), "`width` is an integer: 128");
}

TEST(Doc, SpecialForms) {
  std::string text = doc_of("(doc if)");
  EXPECT_TRUE(text.starts_with("(if test then [else])\n  A special form")) << text;
  EXPECT_NE(text.find(";; => :yes"), std::string::npos) << text;
  EXPECT_TRUE(doc_of("(doc doc)").starts_with("(doc NAME)"));
}

TEST(Doc, StandardLibraryNamesSayWhereTheyComeFrom) {
  std::string text = doc_of("(doc softmax)");
  EXPECT_TRUE(text.starts_with("(softmax x &key (axis -1))\n  A function, defined at sexpgpu/ops.sx:")) << text;
  EXPECT_NE(text.find("(require \"sexpgpu/ops\") to use it."), std::string::npos) << text;
  // Looking it up defines nothing.
  EXPECT_EQ(error_code("(doc softmax) (softmax 1)"), "E-EVAL-001");
}

TEST(Doc, Errors) {
  EXPECT_EQ(error_code("(doc no-such-name)"), "E-EVAL-001");
  EXPECT_EQ(error_code("(doc map first)"), "E-EVAL-011");
}

TEST(Doc, HelpListsEveryBuiltinAndHowToLeave) {
  std::string text = doc_of("(help)");
  EXPECT_NE(text.find("(doc NAME)"), std::string::npos);
  EXPECT_NE(text.find("(quit)"), std::string::npos);
  Interpreter interp(testing::test_options());
  for (const auto& [symbol, value] : interp.builtins().bindings()) {
    if (value.is(Type::Function)) {
      EXPECT_NE(text.find(" " + symbol->name), std::string::npos) << symbol->name;
    }
  }
  EXPECT_EQ(doc_of("(doc)"), text);
}

// Every builtin row says how it is called (a lambda list, which is also what its calls are
// checked against: signature_test.cc), what it does, and gives an example.
TEST(Doc, EveryBuiltinRowIsDocumented) {
  Interpreter interp(testing::test_options());
  EXPECT_EQ(undocumented_builtins(interp), std::vector<std::string>{});
  for (const auto& [symbol, value] : interp.builtins().bindings()) {
    if (!value.is(Type::Function)) continue;
    const auto* builtin = dynamic_cast<const Builtin*>(value.as<Function>());
    ASSERT_NE(builtin, nullptr) << symbol->name;
    SCOPED_TRACE(symbol->name + " " + builtin->doc.params);
    // The example is one or more forms, then ";; => VALUE" or ";; error[CODE]".
    const std::string& example = builtin->doc.example;
    size_t last_line = example.rfind('\n');
    ASSERT_NE(last_line, std::string::npos) << example;
    EXPECT_TRUE(example.substr(last_line + 1).starts_with(";; => ") ||
                example.substr(last_line + 1).starts_with(";; error["))
        << example;
    EXPECT_NE(example.find("(" + symbol->name), std::string::npos) << "the example does not call it: " << example;
  }
}

TEST(Doc, MarkdownListsEveryBuiltinWithItsExample) {
  Interpreter interp(testing::test_options());
  std::string page = builtins_markdown(interp);
  EXPECT_TRUE(page.starts_with("# Builtins\n"));
  EXPECT_NE(page.find("## Numbers\n"), std::string::npos);
  EXPECT_NE(page.find("### `map`\n\n`(map f seq &rest seqs)`\n"), std::string::npos);
  EXPECT_NE(page.find("```lisp\n(map + [1 2 3] [10 20 30])\n;; => [11 22 33]\n```\n"), std::string::npos);
  EXPECT_NE(page.find("| `pi` | `3.141592653589793` |"), std::string::npos);
  EXPECT_NE(page.find("### `defun`"), std::string::npos);
  for (const auto& [symbol, value] : interp.builtins().bindings()) {
    if (value.is(Type::Function)) {
      EXPECT_NE(page.find("### `" + symbol->name + "`"), std::string::npos) << symbol->name;
    }
  }
}

}  // namespace
}  // namespace sx::lang
