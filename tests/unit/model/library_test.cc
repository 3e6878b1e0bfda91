// What a newcomer reaches for first in sexpgpu/nn and around models: an mlp whose output
// width is its own (:out), (doc NAME) of a model constructor, and save-tensors writing a
// file that :load reads back.
#include "io/safetensors.h"
#include "model/load.h"
#include "model_test_util.h"

namespace sx::model::testing {
namespace {

graph::Shape shape_of(RunFile& f, const std::string& path) { return f.param(path).decl->shape; }

TEST(Library, MlpTakesItsOutputWidth) {
  RunFile f;
  f.load("(require \"sexpgpu/nn\") (defvar model (mlp 4 8 :out 3 :activation relu))");
  EXPECT_EQ(graph::shape_str(shape_of(f, "model.up.weight")), "[4, 8]");
  EXPECT_EQ(graph::shape_str(shape_of(f, "model.down.weight")), "[8, 3]");
  EXPECT_EQ(graph::shape_str(shape_of(f, "model.down.b")), "[3]");
  EXPECT_EQ(graph::shape_str(f.run("(model (ones [5 4]))").shape()), "[5, 3]");
  // Without :out it maps dim back to dim, as before.
  RunFile g;
  g.load("(require \"sexpgpu/nn\") (defvar model (mlp 4 8))");
  EXPECT_EQ(graph::shape_str(shape_of(g, "model.down.weight")), "[8, 4]");
}

TEST(Library, DocOfAModelConstructorShowsItsDefmodel) {
  RunFile f;
  f.load("(require \"sexpgpu/nn\")");
  std::string text = lang::print(f.eval("(doc mlp)"));
  EXPECT_TRUE(text.starts_with("(mlp dim hidden &key (out dim) (activation gelu))\n")) << text;
  EXPECT_NE(text.find("A model constructor (defmodel), defined at sexpgpu/nn.sx:"), std::string::npos) << text;
  EXPECT_NE(text.find("(mlp 784 128 :out 10) is a classifier"), std::string::npos) << text;
  f.load("(defmodel scale (n) \"Times a learned [n] vector.\" (defparam s (ones [n])) (lambda (x) (* x s)))");
  EXPECT_EQ(lang::print(f.eval("(doc scale)")),
            "(scale n)\n  A model constructor (defmodel), defined at run.sx:1:1.\n  Times a learned [n] vector.");
}

TEST(Library, SaveTensorsWritesWhatLoadReads) {
  auto dir = std::filesystem::temp_directory_path() / ("sexpgpu-save-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string path = (dir / "saved.safetensors").string();
  {
    RunFile f;
    f.load("(defvar written (save-tensors \"" + path +
           "\" (list :w (tensor [[1.0 2.0] [3.0 4.0]]) \"ids\" (tensor [7 8] :dtype :i64))))");
    EXPECT_EQ(lang::print(f.eval("written")), "\"" + path + "\"");
  }
  auto file = io::SafetensorsFile::open(path);
  ASSERT_EQ(file->tensors().size(), 2u);
  EXPECT_EQ(file->tensors()[0].name, "w");
  EXPECT_EQ(file->tensors()[1].dtype, "I64");
  RunFile f;
  f.load("(defmodel m () (defparam w (zeros [2 2]) :load [\"" + path + "\" \"w\"]) (lambda (x) (matmul x w)))" +
         "(defvar model (m))");
  check_loads(f.table);
  EXPECT_EQ(f.value("model.w"), (std::vector<double>{1, 2, 3, 4}));
  // Only tensors, named by keywords or strings; a computed tensor needs a device.
  RunFile g;
  auto code = [&](const std::string& text) {
    try {
      g.load(text);
    } catch (const lang::Error& e) {
      return e.diagnostic().code;
    }
    return std::string();
  };
  EXPECT_EQ(code("(save-tensors \"" + path + "\" (list :w 3))"), "E-EVAL-004");
  EXPECT_EQ(code("(save-tensors \"" + path + "\" (list :w))"), "E-EVAL-004");
  EXPECT_EQ(code("(save-tensors \"" + path + "\" (list :w (sum (ones [2]))))"), "E-EVAL-004");
  EXPECT_EQ(code("(save-tensors \"" + path + "\" (list :w (tensor [1]) :w (tensor [2])))"), "E-EVAL-004");
  EXPECT_EQ(
      code("(save-tensors \"" + (dir / "no" / "such" / "dir.safetensors").string() + "\" (list :w (tensor [1])))"),
      "E-LOAD-002");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace sx::model::testing
