// The page's "defmodel" rules: a constructor creates fresh parameters and returns a
// model; applying the model is calling it; the body ends in a function (E-PARAM-004).
#include "model_test_util.h"

namespace sx::model::testing {
namespace {

using graph::DType;

// "(defmodel linear ...) (defvar model (linear 32 8))": a model is a set of parameters
// plus the function that uses them, weights stored [in, out].
TEST(Defmodel, PageLinearExampleDeclaresWeightAndBias) {
  RunFile f;
  f.load(std::string(kLinear) + "(defvar model (linear 32 8))");
  EXPECT_EQ(f.paths(), (std::vector<std::string>{"model.weight", "model.b"}));
  const auto& w = f.param("model.weight");
  EXPECT_EQ(graph::shape_str(w.decl->shape), graph::shape_str({32, 8}));
  EXPECT_EQ(w.decl->dtype, DType::f32);
  EXPECT_TRUE(w.decl->trainable);
  EXPECT_EQ(graph::shape_str(f.param("model.b").decl->shape), graph::shape_str({8}));
  // The initializer as written is kept.
  EXPECT_EQ(w.decl->init_source, "(normal [in out] :std (or init-std (/ 1.0 (sqrt in))))");

  auto weight = f.value("model.weight");
  ASSERT_EQ(weight.size(), 256u);
  EXPECT_NEAR(mean_of(weight), 0.0, 0.05);
  EXPECT_NEAR(std_of(weight), 1.0 / std::sqrt(32.0), 0.03);
  for (double b : f.value("model.b")) EXPECT_EQ(b, 0.0);
}

TEST(Defmodel, ApplyingAModelIsCallingIt) {
  RunFile f;
  f.load(std::string(kLinear) + "(defvar model (linear 32 8))");
  graph::Tensor y = f.run("(model (ones [2 32]))");
  EXPECT_EQ(graph::shape_str(y.shape()), graph::shape_str({2, 8}));
  // Each output column is the column sum of the weight (ones times weight, plus zero bias).
  auto w = f.value("model.weight");
  auto out = y.to_doubles();
  for (int col = 0; col < 8; ++col) {
    double sum = 0;
    for (int row = 0; row < 32; ++row) sum += w[row * 8 + col];
    EXPECT_NEAR(out[col], sum, 1e-4);
    EXPECT_NEAR(out[8 + col], sum, 1e-4);
  }
}

TEST(Defmodel, KeywordArgumentsBranchTheBody) {
  RunFile f;
  f.load(std::string(kLinear) + "(defvar model (linear 4 3 :bias false :init-std 0.5))");
  EXPECT_EQ(f.paths(), (std::vector<std::string>{"model.weight"}));
  EXPECT_EQ(graph::shape_str(f.run("(model (ones [1 4]))").shape()), graph::shape_str({1, 3}));
}

// "The body is ordinary Lisp: let sub-models, loop, branch on shapes."
TEST(Defmodel, BodyIsOrdinaryLispLetLoopAndBranchOnShapes) {
  RunFile f;
  f.load(std::string(kLinear) + R"(
(defmodel mlp (sizes)
  (let ((layers (map (lambda (io) (linear (first io) (second io)))
                     (zip (take (- (length sizes) 1) sizes) (drop 1 sizes)))))
    (lambda (x)
      (fold (lambda (h layer) (if (= (last (shape h)) 1) h (layer h))) x layers))))
(defvar model (mlp [4 8 2]))
)");
  EXPECT_EQ(f.paths(), (std::vector<std::string>{"model.layers.0.weight", "model.layers.0.b", "model.layers.1.weight",
                                                 "model.layers.1.b"}));
  EXPECT_EQ(graph::shape_str(f.run("(model (ones [3 4]))").shape()), graph::shape_str({3, 2}));
}

// "Each call to a constructor creates its own parameters."
TEST(Defmodel, EachCallCreatesFreshParameters) {
  RunFile f;
  f.load(std::string(kLinear) + R"(
(defmodel pair ()
  (let ((a (linear 4 4)) (b (linear 4 4)))
    (lambda (x) (b (a x)))))
(defvar model (pair))
(defvar other (linear 4 4))
)");
  EXPECT_EQ(f.paths(), (std::vector<std::string>{"model.a.weight", "model.a.b", "model.b.weight", "model.b.b",
                                                 "other.weight", "other.b"}));
  // Six distinct parameters, three distinct weight tensors.
  EXPECT_NE(f.param("model.a.weight").decl, f.param("model.b.weight").decl);
  EXPECT_NE(f.param("model.a.weight").decl->node, f.param("model.b.weight").decl->node);
  auto values = f.values();
  EXPECT_NE(values["model.a.weight"], values["model.b.weight"]);
  EXPECT_NE(values["model.a.weight"], values["other.weight"]);
  EXPECT_NE(values["model.b.weight"], values["other.weight"]);
  EXPECT_EQ(f.state->models.size(), 4u);
}

// Two calls at the top level give two models, and applying one reads only its own.
TEST(Defmodel, TwoInstancesComputeDifferentOutputs) {
  RunFile f;
  f.load(std::string(kLinear) + "(defvar model (linear 4 4)) (defvar twin (linear 4 4))");
  auto a = f.run("(model (ones [1 4]))").to_doubles();
  auto b = f.run("(twin (ones [1 4]))").to_doubles();
  EXPECT_NE(a, b);
}

// "Importing a definition imports no state": a module that defines a constructor
// declares no parameter until the run file calls it.
TEST(Defmodel, ImportingADefinitionImportsNoState) {
  auto dir = std::filesystem::temp_directory_path() / ("sx_model_import_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  {
    std::ofstream(dir / "layers.sx") << kLinear;
    std::ofstream(dir / "run.sx") << "(require \"layers\")\n(defvar model (linear 2 2 :bias false))\n";
  }
  RunFile f;
  f.load_file((dir / "run.sx").string());
  EXPECT_EQ(f.paths(), (std::vector<std::string>{"model.weight"}));
  EXPECT_EQ(f.state->models.size(), 1u);
  std::filesystem::remove_all(dir);
}

// "The body must end in a function, a builtin or another model (E-PARAM-004)".
TEST(Defmodel, BodyNotEndingInAFunctionIsEParam004) {
  auto d = load_error(R"(
(defmodel scale (n) (defparam s (ones [n])) s)
(defvar model (scale 4))
)");
  EXPECT_EQ(d.code, "E-PARAM-004");
  EXPECT_NE(d.message.find("scale"), std::string::npos) << d.message;
  EXPECT_EQ(error_code("(defmodel m () 3) (defvar model (m))"), "E-PARAM-004");
  EXPECT_EQ(error_code("(defmodel m () nil) (defvar model (m))"), "E-PARAM-004");
  EXPECT_EQ(error_code("(defmodel m () \"lambda\") (defvar model (m))"), "E-PARAM-004");
  EXPECT_EQ(error_code("(defmodel m () (list (lambda (x) x))) (defvar model (m))"), "E-PARAM-004");
}

TEST(Defmodel, BodyMayEndInALambdaOrABuiltin) {
  EXPECT_EQ(error_code("(defmodel m () (lambda (x) x)) (defvar model (m))"), "");
  RunFile f;
  f.load("(defmodel m () abs) (defvar model (m))");
  EXPECT_EQ(lang::print(f.eval("(model -3)")), "3");
}

// "... or another model": applying the outer model applies the one its body ended in.
TEST(Defmodel, BodyEndingInAnotherModelAppliesThatModel) {
  RunFile f;
  f.load(std::string(kLinear) + "(defmodel wrap () (named \"inner\" (linear 2 3))) (defvar model (wrap))");
  EXPECT_EQ(f.paths(), (std::vector<std::string>{"model.inner.weight", "model.inner.b"}));
  EXPECT_EQ(graph::shape_str(f.run("(model (ones [1 2]))").shape()), graph::shape_str({1, 3}));
  EXPECT_TRUE(f.warnings.empty());
}

// The error stops at the constructor call and the call is shown.
TEST(Defmodel, EParam004NamesTheCall) {
  auto d = load_error("(defmodel m () 3)\n(defvar model (m))");
  ASSERT_EQ(d.code, "E-PARAM-004");
  ASSERT_FALSE(d.call_where.empty());
  EXPECT_EQ(d.call_where[0], "(m)");
}

}  // namespace
}  // namespace sx::model::testing
