// read-json, tensor-names, data-path and coded-error, and sexpgpu/hf's naming of the
// parameters it loads, on files written here (the comparison with transformers itself is
// tests/hf).
#include <fstream>

#include "graph/shape.h"
#include "io/safetensors.h"
#include "model/load.h"
#include "model_test_util.h"

namespace sx::model::testing {
namespace {

struct Folder {
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("sexpgpu-json-" + std::to_string(::getpid()) + "-" +
                                                ::testing::UnitTest::GetInstance()->current_test_info()->name());
  Folder() { std::filesystem::create_directories(dir); }
  ~Folder() { std::filesystem::remove_all(dir); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(dir / name) << text;
    return (dir / name).string();
  }
};

std::string code_of(RunFile& f, const std::string& text) {
  try {
    f.load(text);
  } catch (const lang::Error& e) {
    return e.diagnostic().code + ": " + e.diagnostic().message;
  }
  return "";
}

TEST(ReadJson, GivesPlistsVectorsAndAtoms) {
  Folder folder;
  std::string path = folder.write("c.json", R"({"b": [1, 2.5, "x", null, true, false], "a": {"n": -3}, "big": 1e300})");
  RunFile f;
  f.load("(defvar c (read-json \"" + path + "\"))");
  EXPECT_EQ(lang::print(f.eval("(getf c :b)")), "[1 2.5 \"x\" nil true false]");
  EXPECT_EQ(lang::print(f.eval("(getf (getf c :a) :n)")), "-3");
  EXPECT_EQ(lang::print(f.eval("(float? (getf c :big))")), "true");
  EXPECT_EQ(lang::print(f.eval("(read-json \"" + (folder.dir / "none.json").string() + "\" :missing 7)")), "7");
}

TEST(ReadJson, RefusesWhatItCannotRead) {
  Folder folder;
  RunFile f;
  std::string missing = (folder.dir / "none.json").string();
  EXPECT_TRUE(code_of(f, "(read-json \"" + missing + "\")").starts_with("E-LOAD-002")) << missing;
  EXPECT_TRUE(code_of(f, "(read-json \"" + folder.write("bad.json", "{\"a\": ") + "\")").starts_with("E-JSON-001"));
  EXPECT_TRUE(code_of(f, "(read-json \"" + folder.write("twice.json", "{\"a\": 1, \"a\": 2}") + "\")")
                  .starts_with("E-JSON-001"));
  std::string deep(100, '[');
  EXPECT_TRUE(code_of(f, "(read-json \"" + folder.write("deep.json", deep) + "\")").starts_with("E-JSON-001"));
  EXPECT_TRUE(code_of(f, "(read-json \"ftp://host/c.json\")").starts_with("E-LOAD-013"));
  // Sparse: its size is past the limit without its bytes on the disk.
  std::string huge = folder.write("huge.json", "{}");
  std::filesystem::resize_file(huge, (64 << 20) + 1);
  EXPECT_TRUE(code_of(f, "(read-json \"" + huge + "\")").starts_with("E-JSON-002"));
}

TEST(ReadJson, RelativePathsAreTheCallingFilesAndDataPathIsAbsolute) {
  Folder folder;
  folder.write("c.json", "{\"k\": 1}");
  std::string run = folder.write("run.sx", "(defvar c (read-json \"c.json\")) (defvar p (data-path \"w/x/\"))");
  RunFile f;
  f.load_file(run);
  EXPECT_EQ(lang::print(f.eval("c")), "(:k 1)");
  EXPECT_EQ(lang::print(f.eval("p")), "\"" + (folder.dir / "w" / "x").string() + "\"");
  EXPECT_EQ(lang::print(f.eval("(data-path \"s3://b/k\")")), "\"s3://b/k\"");
}

TEST(CodedError, StopsWithTheCodeGiven) {
  RunFile f;
  EXPECT_EQ(code_of(f, "(coded-error \"E-HF-001\" \"no builder for\" \"t5\")"), "E-HF-001: no builder for \"t5\"");
  EXPECT_TRUE(code_of(f, "(coded-error \"oops\" \"x\")").starts_with("E-EVAL-004"));
}

// A one-block GPT-2 whose tensors are numbered (every element of the i-th is i), saved as
// a GPT2LMHeadModel saves them (under "transformer."), with its config.json.
std::string tiny_gpt2(const Folder& folder) {
  folder.write("config.json",
               R"({"model_type": "gpt2", "vocab_size": 8, "n_positions": 4, "n_embd": 4, "n_layer": 1, "n_head": 2})");
  const std::vector<std::pair<std::string, graph::Shape>> shapes = {{"wte.weight", {8, 4}},
                                                                    {"wpe.weight", {4, 4}},
                                                                    {"ln_f.weight", {4}},
                                                                    {"ln_f.bias", {4}},
                                                                    {"h.0.ln_1.weight", {4}},
                                                                    {"h.0.ln_1.bias", {4}},
                                                                    {"h.0.ln_2.weight", {4}},
                                                                    {"h.0.ln_2.bias", {4}},
                                                                    {"h.0.attn.c_attn.weight", {4, 12}},
                                                                    {"h.0.attn.c_attn.bias", {12}},
                                                                    {"h.0.attn.c_proj.weight", {4, 4}},
                                                                    {"h.0.attn.c_proj.bias", {4}},
                                                                    {"h.0.mlp.c_fc.weight", {4, 16}},
                                                                    {"h.0.mlp.c_fc.bias", {16}},
                                                                    {"h.0.mlp.c_proj.weight", {16, 4}},
                                                                    {"h.0.mlp.c_proj.bias", {4}}};
  std::vector<std::pair<std::string, graph::Tensor>> tensors;
  for (size_t i = 0; i < shapes.size(); ++i) {
    std::vector<double> values(static_cast<size_t>(graph::numel(shapes[i].second)), static_cast<double>(i));
    tensors.emplace_back("transformer." + shapes[i].first,
                         graph::Tensor::from_doubles(graph::DType::f32, shapes[i].second, values));
  }
  io::write_safetensors((folder.dir / "model.safetensors").string(), tensors);
  return folder.dir.string();
}

TEST(HfModel, NamesEachParameterByItsTensorAndFreezesIt) {
  Folder folder;
  std::string dir = tiny_gpt2(folder);
  RunFile f;
  f.load("(require \"sexpgpu/hf\") (defvar model (hf-model \"" + dir + "\"))");
  const Parameter& table = f.param("model.wte.weight");
  ASSERT_TRUE(table.decl->load);
  EXPECT_EQ(table.decl->load->second, "transformer.wte.weight");
  EXPECT_FALSE(table.decl->trainable);
  EXPECT_EQ(f.param("model.h.0.attn.c-attn.weight").decl->load->second, "transformer.h.0.attn.c_attn.weight");
  check_loads(f.table);
  EXPECT_EQ(f.value("model.wpe.weight"), std::vector<double>(16, 1.0));
  EXPECT_EQ(graph::shape_str(f.run("(model (tensor [[1 2 3]]))").shape()), "[1, 3, 8]");
}

TEST(HfModel, NestedInAModelAndTrainable) {
  Folder folder;
  std::string dir = tiny_gpt2(folder);
  RunFile f;
  f.load(
      "(require \"sexpgpu/hf\") (require \"sexpgpu/nn\" :only (linear))"
      "(defmodel classifier (dir) (let ((encoder (hf-model dir :trainable true)) (head (linear 8 2)))"
      "  (lambda (ids) (head (encoder ids)))))"
      "(defvar model (classifier \"" +
      dir + "\"))");
  const Parameter& ln = f.param("model.encoder.h.0.ln-1.bias");
  EXPECT_EQ(ln.decl->load->second, "transformer.h.0.ln_1.bias");
  EXPECT_TRUE(ln.decl->trainable);
  EXPECT_FALSE(f.param("model.head.weight").decl->load);
  check_loads(f.table);
}

TEST(HfModel, RefusesAnUnknownModelType) {
  Folder folder;
  folder.write("config.json", R"({"model_type": "t5"})");
  RunFile f;
  EXPECT_EQ(code_of(f, "(require \"sexpgpu/hf\") (defvar model (hf-model \"" + folder.dir.string() + "\"))"),
            "E-HF-001: hf-model does not build model_type `t5`");
}

}  // namespace
}  // namespace sx::model::testing
