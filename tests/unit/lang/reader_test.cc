// The reader: every kind of form, spans, and every E-READ error.
#include "lang/reader.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "lang/printer.h"

namespace sx::lang {
namespace {

std::vector<Form> read(const std::string& text, SourceMap& sources) { return read_forms(sources.add("t.sx", text)); }

std::string read_print(const std::string& text) {
  SourceMap sources;
  std::string out;
  for (const auto& form : read(text, sources)) out += (out.empty() ? "" : " ") + print(form.value);
  return out;
}

std::string read_error(const std::string& text, const ReaderLimits& limits = {}) {
  SourceMap sources;
  try {
    read_forms(sources.add("t.sx", text), limits);
  } catch (const Error& e) {
    return e.diagnostic().code;
  }
  return "";
}

TEST(Reader, Atoms) {
  EXPECT_EQ(read_print("1 -2 +3 1.5 -0.25 .5 3e-4 1e20"), "1 -2 3 1.5 -0.25 0.5 0.0003 1e+20");
  EXPECT_EQ(read_print("x :k \"s\" true false nil"), "x :k \"s\" true false nil");
  EXPECT_EQ(read_print("- + ... ->x a.b"), "- + ... ->x a.b");
  EXPECT_EQ(read_print("9223372036854775807 -9223372036854775808"), "9223372036854775807 -9223372036854775808");
}

TEST(Reader, ListsVectorsAndQuotes) {
  EXPECT_EQ(read_print("(a (b c) [1 2] ())"), "(a (b c) [1 2] nil)");
  EXPECT_EQ(read_print("'x `(a ,b ,@c)"), "(quote x) (quasiquote (a (unquote b) (unquote-splicing c)))");
  EXPECT_EQ(read_print("; comment\n(a ; inner\n b)"), "(a b)");
}

TEST(Reader, StringEscapes) {
  EXPECT_EQ(read_print(R"("a\nb\t\"q\"\\ \u{41}\u{e9}")"), "\"a\\nb\\t\\\"q\\\"\\\\ A\xC3\xA9\"");
  EXPECT_EQ(read_print("\"multi\nline\""), "\"multi\\nline\"");
}

TEST(Reader, FloatsPrintShortestAndReadBack) {
  for (const char* text : {"0.1", "1.0", "2.5e-08", "123456789.125", "1e+300", "-0.0"}) {
    EXPECT_EQ(read_print(text), read_print(read_print(text))) << text;
  }
  EXPECT_EQ(read_print("0.1"), "0.1");
}

TEST(Reader, NonFiniteFloatsReadAsThePrinterWritesThem) {
  EXPECT_EQ(read_print("+inf.0 -inf.0 +nan.0"), "+inf.0 -inf.0 +nan.0");
  SourceMap sources;
  auto forms = read("+inf.0 -inf.0 +nan.0 inf -inf nan", sources);
  ASSERT_EQ(forms.size(), 6u);
  EXPECT_EQ(forms[0].value.as_float(), std::numeric_limits<double>::infinity());
  EXPECT_EQ(forms[1].value.as_float(), -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(forms[2].value.as_float()));
  // The names stay names: `inf` and `nan` are bound to the floats, `-inf` is just a symbol.
  for (size_t i = 3; i < 6; ++i) EXPECT_TRUE(forms[i].value.is(Type::Symbol)) << i;
}

TEST(Reader, SpansPointAtEachForm) {
  SourceMap sources;
  auto forms = read("(f  x)\n  [a b]", sources);
  ASSERT_EQ(forms.size(), 2u);
  EXPECT_EQ(forms[0].span.location(), "t.sx:1:1");
  EXPECT_EQ(forms[0].span.length, 6u);
  auto* cell = as_cons(forms[0].value);
  EXPECT_EQ(next(cell)->car_span.location(), "t.sx:1:5");
  EXPECT_EQ(forms[1].span.location(), "t.sx:2:3");
  EXPECT_EQ(forms[1].value.as<Vector>()->span_of(1).location(), "t.sx:2:6");
}

// A source made with SourceFile::make (a REPL entry) lives as long as a span points into
// it: a form kept from it, or an error about it, still shows where it came from.
TEST(Reader, SpansKeepTheirSourceAlive) {
  Value kept;
  {
    auto forms = read_forms(*SourceFile::make("<repl:1>", "(defun f (x)\n  (g x))"));
    kept = forms[0].value;
  }
  Cons* last = as_cons(kept);
  while (next(last)) last = next(last);
  EXPECT_EQ(last->car_span.location(), "<repl:1>:2:3");
  EXPECT_EQ(last->car_span.file->line_text(2), "  (g x))");

  Diagnostic diagnostic;
  try {
    read_forms(*SourceFile::make("<repl:2>", "(f \"unterminated"));
  } catch (const Error& e) {
    diagnostic = e.diagnostic();
  }
  ASSERT_TRUE(diagnostic.span.known());
  EXPECT_EQ(diagnostic.span.file->path(), "<repl:2>");
  EXPECT_NE(render(diagnostic, false).find("(f \"unterminated"), std::string::npos);
}

TEST(Reader, ColumnsCountCodePoints) {
  SourceMap sources;
  auto forms = read("(\"é\" x)", sources);
  EXPECT_EQ(next(as_cons(forms[0].value))->car_span.location(), "t.sx:1:6");
}

TEST(Reader, ByteOrderMarkOnlyAtTheStartIsSkipped) {
  const std::string bom = "\xEF\xBB\xBF";
  SourceMap sources;
  auto forms = read(bom + "(f x)\ny", sources);
  ASSERT_EQ(forms.size(), 2u);
  EXPECT_EQ(print(forms[0].value), "(f x)");
  EXPECT_EQ(forms[0].span.location(), "t.sx:1:1");
  EXPECT_EQ(next(as_cons(forms[0].value))->car_span.location(), "t.sx:1:4");
  EXPECT_EQ(read_print(bom), "");
  // Anywhere else it is a character like any other, here a name of its own.
  EXPECT_EQ(read_print("x " + bom), "x " + bom);
}

TEST(Reader, Errors) {
  EXPECT_EQ(read_error("(a b"), "E-READ-001");
  EXPECT_EQ(read_error("[a b"), "E-READ-001");
  EXPECT_EQ(read_error("\"abc"), "E-READ-002");
  EXPECT_EQ(read_error("a)"), "E-READ-003");
  EXPECT_EQ(read_error("(a]"), "E-READ-003");
  EXPECT_EQ(read_error("1.2.3"), "E-READ-004");
  EXPECT_EQ(read_error("12abc"), "E-READ-004");
  EXPECT_EQ(read_error("99999999999999999999"), "E-READ-004");
  EXPECT_EQ(read_error("\"\\q\""), "E-READ-005");
  EXPECT_EQ(read_error("\"\\u{110000}\""), "E-READ-005");
  EXPECT_EQ(read_error("\"\\u{D800}\""), "E-READ-005");
  EXPECT_EQ(read_error("{a}"), "E-READ-006");
  EXPECT_EQ(read_error("a\x01"), "E-READ-006");
  EXPECT_EQ(read_error(":"), "E-READ-006");
  EXPECT_EQ(read_error("\xff"), "E-READ-008");
  EXPECT_EQ(read_error("\"\xc3\x28\""), "E-READ-008");
  EXPECT_EQ(read_error("'"), "E-READ-011");
  EXPECT_EQ(read_error("(a ')"), "E-READ-011");
}

TEST(Reader, NestingLimitFailsFast) {
  EXPECT_EQ(read_error(std::string(200000, '(')), "E-READ-007");
  EXPECT_EQ(read_error(std::string(200000, '\'') + "x"), "E-READ-007");
  EXPECT_EQ(read_error(std::string(999, '[') + std::string(999, ']')), "");
}

TEST(Reader, SizeLimits) {
  ReaderLimits limits;
  limits.max_line_bytes = 100;
  EXPECT_EQ(read_error(std::string(101, 'a'), limits), "E-READ-009");
  EXPECT_EQ(read_error(std::string(100, 'a'), limits), "");
  limits.max_file_bytes = 10;
  EXPECT_EQ(read_error("(a b c d e f)", limits), "E-READ-009");
}

TEST(Reader, IncompleteInputIsRecognised) {
  SourceMap sources;
  auto incomplete = [&](const std::string& text) {
    try {
      read_forms(sources.add("t.sx", text));
    } catch (const Error& e) {
      return is_incomplete_input(e, text);
    }
    return false;
  };
  EXPECT_TRUE(incomplete("(a\n"));
  EXPECT_TRUE(incomplete("\"abc"));
  EXPECT_TRUE(incomplete("'\n"));
  EXPECT_FALSE(incomplete("a)"));
  EXPECT_FALSE(incomplete("(a ')"));
}

}  // namespace
}  // namespace sx::lang
