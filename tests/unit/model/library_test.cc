// What a newcomer reaches for first around models: (doc NAME) of a model constructor, and
// save-tensors writing a file that :load reads back.
#include "io/safetensors.h"
#include "model/load.h"
#include "model_test_util.h"

namespace sx::model::testing {
namespace {

TEST(Library, DocOfAModelConstructorShowsItsDefmodel) {
  RunFile f;
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
