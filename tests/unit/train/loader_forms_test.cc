// The loaders' constructors in the language: arguments checked when called, paths
// resolved against the run file's folder, files checked at once, values that print as
// their call.
#include <gtest/gtest.h>

#include <string>

#include "io/test_util.h"
#include "lang/builtins/builtins.h"
#include "lang/doc.h"
#include "lang/printer.h"
#include "lang/test_util.h"
#include "train/loaders.h"
#include "train/run_settings.h"

namespace sx::train {
namespace {

using io::testing::TempDir;
using io::testing::write_file;

// A run file `run.sx` in `dir` holding `text`, evaluated with defrun (and so the
// loaders) installed.
struct RunFile {
  lang::Interpreter interp{lang::testing::test_options()};
  std::shared_ptr<RunSettings> settings = install_defrun(interp);
  lang::Ref<lang::Env> top;

  lang::Value load(const TempDir& dir, const std::string& text) {
    write_file(dir.file("run.sx"), text);
    top = interp.load_file(dir.file("run.sx"));
    lang::Symbol* data = lang::intern("data");
    lang::Value* value = top->lookup(data);
    return value ? *value : lang::Value();
  }
};

// The diagnostic of a run file defining `data` as `expression`.
lang::Diagnostic error_of(const TempDir& dir, const std::string& expression) {
  RunFile run;
  try {
    run.load(dir, "(defvar data " + expression + ")\n");
  } catch (const lang::Error& e) {
    return e.diagnostic();
  }
  ADD_FAILURE() << "no error from " << expression;
  return {};
}

TEST(LoaderForms, EachConstructorGivesASpecThatPrintsAsItsCall) {
  TempDir dir;
  write_file(dir.file("data/input.txt"), "hello");
  write_file(dir.file("train.bin"), "");
  write_file(dir.file("rows.safetensors"), "");
  write_file(dir.file("d.jsonl"), "");
  struct Case {
    std::string expression;
    LoaderKind kind;
    std::string file;
  };
  const Case cases[] = {
      {R"((text-windows "data/input.txt" :window 64))", LoaderKind::TextWindows, "data/input.txt"},
      {R"((token-windows "train.bin" :dtype :u16 :window 256))", LoaderKind::TokenWindows, "train.bin"},
      {R"((token-windows "train.bin" :dtype :i32 :window 8))", LoaderKind::TokenWindows, "train.bin"},
      {R"((records "rows.safetensors"))", LoaderKind::Records, "rows.safetensors"},
      {R"((jsonl "d.jsonl" :fields [:x :y "odd key"]))", LoaderKind::Jsonl, "d.jsonl"},
  };
  for (const auto& c : cases) {
    RunFile run;
    lang::Value value = run.load(dir, "(defvar data " + c.expression + ")\n");
    const LoaderSpec* spec = as_loader_spec(value);
    ASSERT_NE(spec, nullptr) << c.expression;
    EXPECT_EQ(spec->kind, c.kind);
    EXPECT_EQ(spec->path, dir.file(c.file));  // relative to the run file's folder
    EXPECT_EQ(lang::print(value), c.expression);
    EXPECT_EQ(lang::type_label(value), "a loader");
    EXPECT_TRUE(spec->span.known());
  }
  // The default token dtype is u16; (equal) compares specs.
  RunFile run;
  lang::Value value = run.load(dir, R"((defvar data (token-windows "train.bin" :window 4))
                                       (defvar same (equal data (token-windows "train.bin" :dtype :u16 :window 4))))");
  EXPECT_EQ(as_loader_spec(value)->format, TokenFormat::u16);
  EXPECT_TRUE(run.top->lookup(lang::intern("same"))->truthy());
  EXPECT_EQ(as_loader_spec(lang::Value::integer(3)), nullptr);
}

TEST(LoaderForms, ArgumentsAreCheckedWhenCalled) {
  TempDir dir;
  write_file(dir.file("input.txt"), "hello");
  struct Case {
    std::string expression;
    std::string code;
    std::string message;
  };
  const Case cases[] = {
      {R"((text-windows "input.txt"))", "E-RUN-020", "`text-windows` needs `:window N`"},
      {R"((text-windows "input.txt" :window 0))", "E-RUN-020",
       "`:window` is a whole number from 1 to 1073741824, not 0"},
      {R"((text-windows "input.txt" :window 2.5))", "E-EVAL-004", ""},
      {R"((text-windows "input.txt" :windw 4))", "E-EVAL-006", "`text-windows` takes no keyword `:windw`"},
      {R"((token-windows "input.txt" :dtype :u8 :window 4))", "E-RUN-020",
       "`:dtype` of token-windows is :u16, :u32 or :i32, not `:u8`"},
      {R"((jsonl "input.txt"))", "E-RUN-020", "`jsonl` needs `:fields [:key ...]`"},
      {R"((jsonl "input.txt" :fields []))", "E-RUN-020", "`:fields` names one key or more"},
      {R"((jsonl "input.txt" :fields [:x 3]))", "E-RUN-020", "`:fields` holds keywords (or strings), not an integer"},
      {R"((jsonl "input.txt" :fields [:x :x]))", "E-RUN-020", "`:fields` names `x` twice"},
      {R"((jsonl "input.txt" :fields (list :x :x)))", "E-RUN-020", "`:fields` names `x` twice"},
      {R"((jsonl "input.txt" :fields :x))", "E-EVAL-004", ""},
      {R"((records 7))", "E-EVAL-004", ""},
      {R"((records "missing.safetensors"))", "E-RUN-021", "missing.safetensors: the file does not exist"},
      {R"((text-windows "." :window 4))", "E-RUN-021", "a directory, not a file"},
      {R"((records "s3://Bad_Bucket/rows.safetensors"))", "E-LOC-001", "s3://Bad_Bucket/rows.safetensors"},
      {R"((records "https://host/rows.safetensors"))", "E-RUN-021", "https:// is not read"},
      {R"((records "file://rows.safetensors"))", "E-RUN-021", "file:///home/me/w.safetensors"},
  };
  for (const auto& c : cases) {
    auto d = error_of(dir, c.expression);
    EXPECT_EQ(d.code, c.code) << c.expression << ": " << d.message;
    EXPECT_NE(d.message.find(c.message), std::string::npos) << c.expression << ": " << d.message;
  }
  // A missing file is named as it was looked for, and the span is the path's.
  auto d = error_of(dir, R"((text-windows "nope.txt" :window 4))");
  EXPECT_EQ(d.message, dir.file("nope.txt") + ": the file does not exist");
  EXPECT_EQ(d.span.length, std::string(R"("nope.txt")").size());
}

TEST(LoaderForms, AFileUrlAndAnAbsolutePathAreTakenAsTheyAre) {
  TempDir dir;
  write_file(dir.file("input.txt"), "hello");
  RunFile run;
  auto value = run.load(dir, "(defvar data (text-windows \"file://" + dir.file("input.txt") + "\" :window 2))");
  EXPECT_EQ(as_loader_spec(value)->path, dir.file("input.txt"));
  RunFile other;
  value = other.load(dir, "(defvar data (text-windows \"" + dir.file("input.txt") + "\" :window 2))");
  EXPECT_EQ(as_loader_spec(value)->path, dir.file("input.txt"));
}

TEST(LoaderForms, TheConstructorsAreDocumentedAsEveryBuiltinIs) {
  lang::Interpreter interp(lang::testing::test_options());
  install_loaders(interp);
  EXPECT_EQ(lang::undocumented_builtins(interp), std::vector<std::string>{});
  std::string page = lang::builtins_markdown(interp);
  for (const char* name : {"text-windows", "token-windows", "records", "jsonl"}) {
    EXPECT_NE(page.find(std::string("### `") + name + "`"), std::string::npos) << name;
  }
  EXPECT_NE(page.find("## Loaders"), std::string::npos);
}

TEST(LoaderForms, OpeningAConstructedSpecReadsItsFile) {
  TempDir dir;
  write_file(dir.file("input.txt"), "abcdefghijklmnopqrstuvwxyz");
  RunFile run;
  auto value = run.load(dir, R"((defvar data (text-windows "input.txt" :window 4)))");
  auto loader = open_loader(*as_loader_spec(value));
  EXPECT_EQ(loader->size(), 22);
  // An error when opening points at the constructor's call.
  std::filesystem::remove(dir.file("input.txt"));
  try {
    open_loader(*as_loader_spec(value));
    FAIL() << "no error";
  } catch (const lang::Error& e) {
    EXPECT_EQ(e.diagnostic().code, "E-RUN-021");
    EXPECT_EQ(e.diagnostic().span.location(), dir.file("run.sx") + ":1:14");
  }
}

}  // namespace
}  // namespace sx::train
