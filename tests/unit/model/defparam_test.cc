// The page's "defparam" rules: inside a model only (E-PARAM-002); a closed initializer
// (E-PARAM-003) whose shape and dtype become the parameter's; the options and their
// errors (E-PARAM-006, E-PARAM-007); random initializers keyed by seed and path.
#include <stdlib.h>

#include "model_test_util.h"

namespace sx::model::testing {
namespace {

using graph::DType;

std::string one_param(const std::string& defparam) {
  return "(defmodel m () " + defparam + " (lambda (x) x))\n(defvar model (m))\n";
}

// "declares persistent state, inside a model only (E-PARAM-002)".
TEST(Defparam, OutsideAModelIsEParam002) {
  auto d = load_error("(defparam w (zeros [4]))");
  EXPECT_EQ(d.code, "E-PARAM-002");
  EXPECT_EQ(spanned(d), "(defparam w (zeros [4]))");
  // In a plain function called at the top level: no constructor is running.
  EXPECT_EQ(error_code("(defun f () (defparam w (zeros [4]))) (f)"), "E-PARAM-002");
  // In the function a model returns, applied after its constructor returned.
  EXPECT_EQ(error_code("(defmodel m () (lambda (x) (defparam w (zeros [4])))) (defvar model (m)) (model 1)"),
            "E-PARAM-002");
}

TEST(Defparam, InsideAFunctionTheConstructorCallsIsInsideTheModel) {
  RunFile f;
  f.load(R"(
(defun make-scale (n) (defparam scale (ones [n])) scale)
(defmodel m () (let ((s (make-scale 3))) (lambda (x) (* x s))))
(defvar model (m))
)");
  EXPECT_EQ(f.paths(), (std::vector<std::string>{"model.scale"}));
}

// "The initializer is a closed graph of its own: ... never another value (E-PARAM-003)."
// A tensor handed to the constructor that is another model's parameter is another value.
TEST(Defparam, InitializerReadingATensorIsEParam003) {
  auto d = load_error(R"(
(defmodel base () (defparam table (normal [4])) (lambda (x) (if (keyword? x) table x)))
(defvar base-model (base))
(defmodel m (x) (defparam w (* x 2)) (lambda (y) y))
(defvar model (m (base-model :table)))
)");
  EXPECT_EQ(d.code, "E-PARAM-003");
  EXPECT_EQ(spanned(d), "(* x 2)");
  EXPECT_NE(d.message.find("`w`"), std::string::npos) << d.message;
  // Another parameter of the same model is another value too.
  EXPECT_EQ(error_code(one_param("(defparam w (zeros [4])) (defparam v (* w 2))")), "E-PARAM-003");
  EXPECT_EQ(error_code(one_param("(defparam w (zeros [4])) (defparam v (+ (normal (shape w)) w))")), "E-PARAM-003");
  // Its shape is a shape: allowed.
  EXPECT_EQ(error_code(one_param("(defparam w (zeros [4])) (defparam v (normal (shape w)))")), "");
}

TEST(Defparam, InitializerThatIsNotATensorIsEParam003) {
  EXPECT_EQ(error_code(one_param("(defparam w \"zeros\")")), "E-PARAM-003");
  EXPECT_EQ(error_code(one_param("(defparam w [1 2])")), "E-PARAM-003");
}

// `(shape x)` is a shape, a vector of numbers: allowed.
TEST(Defparam, InitializerMayUseTheShapeOfATensor) {
  RunFile f;
  f.load(R"(
(defmodel m (x) (defparam w (normal (shape x) :std 0.1)) (lambda (y) (* y w)))
(defvar model (m (ones [3 5])))
)");
  EXPECT_EQ(graph::shape_str(f.param("model.w").decl->shape), graph::shape_str({3, 5}));
}

TEST(Defparam, InitializerMayComputeFromConstantsAndRandomNodes) {
  RunFile f;
  f.load(one_param("(defparam w (+ (* (uniform [2 2]) 0.5) (ones [2 2]) 1))"));
  for (double v : f.value("model.w")) {
    EXPECT_GE(v, 2.0);
    EXPECT_LT(v, 2.5);
  }
}

// "The parameter's shape and dtype are its output's."
TEST(Defparam, InitializerShapeAndDtypeBecomeTheParameters) {
  RunFile f;
  f.load(R"(
(defmodel m ()
  (defparam a (normal [3 5] :std 0.02))
  (defparam h (normal [7] :dtype :bf16))
  (defparam z (zeros [2 2] :dtype :bf16))
  (defparam s 1.5)
  (lambda (x) x))
(defvar model (m))
)");
  EXPECT_EQ(graph::shape_str(f.param("model.a").decl->shape), graph::shape_str({3, 5}));
  EXPECT_EQ(f.param("model.a").decl->dtype, DType::f32);
  EXPECT_EQ(graph::shape_str(f.param("model.h").decl->shape), graph::shape_str({7}));
  EXPECT_EQ(f.param("model.h").decl->dtype, DType::bf16);
  EXPECT_EQ(f.param("model.z").decl->dtype, DType::bf16);
  EXPECT_EQ(graph::shape_str(f.param("model.s").decl->shape), graph::shape_str({}));
  EXPECT_EQ(f.param("model.s").decl->dtype, DType::f32);
  auto values = f.values();
  EXPECT_EQ(values["model.h"].dtype(), DType::bf16);
  EXPECT_EQ(graph::shape_str(values["model.a"].shape()), graph::shape_str({3, 5}));
  EXPECT_EQ(values["model.s"].to_doubles(), (std::vector<double>{1.5}));
  // The value in the model's graph has the parameter's shape and dtype.
  EXPECT_EQ(lang::print(f.eval(
                "(defmodel probe () (defparam p (zeros [2 3] :dtype :bf16)) (lambda (x) (dtype p))) ((probe) 0)")),
            ":bf16");
}

TEST(Defparam, NormalUniformAndTruncatedNormalHaveTheirStatistics) {
  RunFile f;
  f.load(R"(
(defmodel m ()
  (defparam n (normal [4096] :mean 1.0 :std 0.5))
  (defparam u (uniform [4096] :low -3 :high -1))
  (defparam t (truncated-normal [4096] :mean 0.0 :std 0.1))
  (lambda (x) x))
(defvar model (m))
)");
  auto n = f.value("model.n");
  EXPECT_NEAR(mean_of(n), 1.0, 0.05);
  EXPECT_NEAR(std_of(n), 0.5, 0.05);
  auto u = f.value("model.u");
  for (double v : u) {
    EXPECT_GE(v, -3.0);
    EXPECT_LE(v, -1.0);
  }
  EXPECT_NEAR(mean_of(u), -2.0, 0.05);
  auto t = f.value("model.t");
  for (double v : t) EXPECT_LE(std::abs(v), 0.2 + 1e-6);
  EXPECT_NEAR(std_of(t), 0.088, 0.01);  // a normal truncated at 2 std has std 0.88 sigma
}

// Options: "All evaluate their argument expressions."
TEST(Defparam, OptionsAreRecordedAndEvaluated) {
  RunFile f;
  f.load(R"(
(defvar frozen false)
(defmodel m (prefix)
  (defparam a (zeros [2]) :tags [:decay :embed])
  (defparam b (zeros [2]) :tags (list (keyword "no-decay")) :numerics :high)
  (defparam c (zeros [2]) :trainable frozen)
  (defparam d (zeros [2]) :load [(str prefix ".safetensors") (str "layer." prefix)] :trainable (not true))
  (lambda (x) x))
(defvar model (m "w"))
)");
  EXPECT_EQ(f.param("model.a").decl->tags, (std::vector<std::string>{"decay", "embed"}));
  EXPECT_FALSE(f.param("model.a").decl->numerics_high);
  EXPECT_TRUE(f.param("model.a").decl->trainable);
  EXPECT_FALSE(f.param("model.a").decl->load.has_value());
  EXPECT_EQ(f.param("model.b").decl->tags, (std::vector<std::string>{"no-decay"}));
  EXPECT_TRUE(f.param("model.b").decl->numerics_high);
  EXPECT_FALSE(f.param("model.c").decl->trainable);
  const auto& d = *f.param("model.d").decl;
  ASSERT_TRUE(d.load.has_value());
  EXPECT_EQ(d.load->first, "w.safetensors");
  EXPECT_EQ(d.load->second, "layer.w");
  EXPECT_FALSE(d.trainable);
}

// "The initializer still states the shape and dtype" of a :load parameter; `:load` is
// recorded, and initial_values leaves it to the loader.
TEST(Defparam, LoadedParameterKeepsItsInitializerShapeAndItsFile) {
  RunFile f;
  f.load(R"(
(defmodel frozen-attention (width weights prefix)
  (defparam q (zeros [width width])
    :trainable false
    :load [weights (str prefix "q_proj.weight")])
  (lambda (x) (matmul x (transpose q [1 0]))))
(defvar teacher
  (frozen-attention 8 "s3://my-bucket/llama/model.safetensors.index.json"
                    "model.layers.0.self_attn."))
(defmodel m () (defparam w (zeros [1])) (lambda (x) x))
(defvar model (m))
)");
  EXPECT_EQ(f.paths(), (std::vector<std::string>{"model.w", "teacher.q"}));
  const auto& q = *f.param("teacher.q").decl;
  EXPECT_EQ(graph::shape_str(q.shape), graph::shape_str({8, 8}));
  EXPECT_FALSE(q.trainable);
  ASSERT_TRUE(q.load.has_value());
  EXPECT_EQ(q.load->first, "s3://my-bucket/llama/model.safetensors.index.json");
  EXPECT_EQ(q.load->second, "model.layers.0.self_attn.q_proj.weight");
  // Reading it asks S3, here without credentials: refused, naming what is missing.
  std::string saved = getenv("AWS_ACCESS_KEY_ID") ? getenv("AWS_ACCESS_KEY_ID") : "";
  unsetenv("AWS_ACCESS_KEY_ID");
  try {
    f.values();
    FAIL() << "an s3:// file was read without credentials";
  } catch (const lang::Error& e) {
    EXPECT_EQ(e.diagnostic().code, "E-LOC-003");
    EXPECT_NE(e.diagnostic().message.find("AWS_ACCESS_KEY_ID"), std::string::npos) << e.diagnostic().message;
  }
  if (!saved.empty()) setenv("AWS_ACCESS_KEY_ID", saved.c_str(), 1);
}

// "Any other option, or a :numerics other than :high, is E-PARAM-006".
TEST(Defparam, UnknownOptionIsEParam006) {
  auto d = load_error(one_param("(defparam w (zeros [2]) :decay 0.1)"));
  EXPECT_EQ(d.code, "E-PARAM-006");
  EXPECT_EQ(spanned(d), ":decay");
  EXPECT_EQ(error_code(one_param("(defparam w (zeros [2]) :tag [:a])")), "E-PARAM-006");
  EXPECT_EQ(error_code(one_param("(defparam w (zeros [2]) trainable false)")), "E-PARAM-006");
  // An option without its value.
  EXPECT_EQ(error_code(one_param("(defparam w (zeros [2]) :trainable)")), "E-PARAM-006");
}

TEST(Defparam, NumericsOtherThanHighIsEParam006) {
  auto d = load_error(one_param("(defparam w (zeros [2]) :numerics :low)"));
  EXPECT_EQ(d.code, "E-PARAM-006");
  EXPECT_EQ(spanned(d), ":low");
  EXPECT_EQ(error_code(one_param("(defparam w (zeros [2]) :numerics :bf16)")), "E-PARAM-006");
  EXPECT_EQ(error_code(one_param("(defparam w (zeros [2]) :numerics \"high\")")), "E-PARAM-006");
  EXPECT_EQ(error_code(one_param("(defparam w (zeros [2]) :numerics true)")), "E-PARAM-006");
}

// "a :trainable that is not a boolean ... is E-PARAM-007".
TEST(Defparam, TrainableNotABooleanIsEParam007) {
  auto d = load_error(one_param("(defparam w (zeros [2]) :trainable 0)"));
  EXPECT_EQ(d.code, "E-PARAM-007");
  EXPECT_EQ(spanned(d), "0");
  EXPECT_EQ(error_code(one_param("(defparam w (zeros [2]) :trainable \"false\")")), "E-PARAM-007");
  EXPECT_EQ(error_code(one_param("(defparam w (zeros [2]) :trainable nil)")), "E-PARAM-007");
  EXPECT_EQ(error_code(one_param("(defparam w (zeros [2]) :trainable :false)")), "E-PARAM-007");
}

// "... or a :load that is not a file and a tensor name, is E-PARAM-007."
TEST(Defparam, LoadNotAFileAndATensorIsEParam007) {
  auto d = load_error(one_param("(defparam w (zeros [2]) :load \"w.safetensors\")"));
  EXPECT_EQ(d.code, "E-PARAM-007");
  EXPECT_EQ(spanned(d), "\"w.safetensors\"");
  EXPECT_EQ(error_code(one_param("(defparam w (zeros [2]) :load [\"w.safetensors\"])")), "E-PARAM-007");
  EXPECT_EQ(error_code(one_param("(defparam w (zeros [2]) :load [\"a\" \"b\" \"c\"])")), "E-PARAM-007");
  EXPECT_EQ(error_code(one_param("(defparam w (zeros [2]) :load [\"w.safetensors\" 3])")), "E-PARAM-007");
  EXPECT_EQ(error_code(one_param("(defparam w (zeros [2]) :load [:file \"w\"])")), "E-PARAM-007");
  EXPECT_EQ(error_code(one_param("(defparam w (zeros [2]) :load nil)")), "E-PARAM-007");
}

// "Random initializers fold in defrun :seed".
TEST(Defparam, RandomInitializersFoldInTheRunSeed) {
  auto weight_with = [](const std::string& defrun) {
    RunFile f;
    f.load(defrun + std::string(kLinear) + "(defvar model (linear 8 8))");
    return f.value("model.weight");
  };
  auto s1 = weight_with("(defrun :seed 1)");
  auto s1_again = weight_with("(defrun :seed 1)");
  auto s2 = weight_with("(defrun :seed 2)");
  EXPECT_EQ(s1, s1_again);
  EXPECT_NE(s1, s2);
  // Without a defrun the seed is 0, and it is a seed like any other.
  auto none = weight_with("");
  EXPECT_EQ(none, weight_with("(defrun :seed 0)"));
  EXPECT_NE(none, s1);
  // The run's defrun may come after the model.
  RunFile late;
  late.load(std::string(kLinear) + "(defvar model (linear 8 8)) (defrun :seed 2)");
  EXPECT_EQ(late.value("model.weight"), s2);
}

// "gensym names never affect the initial values" (a parameter declared with a gensym).
TEST(Defparam, GensymNamesNeverAffectValues) {
  const std::string text = R"(
(defmacro gensym-param (init) `(defparam ,(gensym "w") ,init))
(defmodel m () (gensym-param (normal [16])) (lambda (x) x))
(defvar model (m))
)";
  RunFile a;
  a.load(text);
  // Another file that makes gensyms first, so the parameter's gensym differs.
  RunFile c;
  c.load("(gensym) (gensym \"w\") (gensym \"w\")" + text);
  ASSERT_EQ(a.paths(), (std::vector<std::string>{"model.param.0"}));
  ASSERT_EQ(c.paths(), (std::vector<std::string>{"model.param.0"}));
  EXPECT_NE(a.param("model.param.0").decl->name, c.param("model.param.0").decl->name);
  EXPECT_EQ(a.value("model.param.0"), c.value("model.param.0"));
}

// The stream is keyed by (seed, path): reordering declarations or adding an
// unrelated parameter changes no other parameter's initial value.
TEST(Defparam, ValuesAreKeyedByPathNotDeclarationOrder) {
  RunFile ab;
  ab.load(R"(
(defmodel m () (defparam a (normal [16])) (defparam b (uniform [16])) (lambda (x) x))
(defvar model (m))
)");
  RunFile ba;
  ba.load(R"(
(defmodel m () (defparam b (uniform [16])) (defparam a (normal [16])) (lambda (x) x))
(defvar model (m))
)");
  RunFile extra;
  extra.load(R"(
(defmodel m ()
  (defparam first (truncated-normal [3 3]))
  (defparam a (normal [16]))
  (defparam mid (normal [16]))
  (defparam b (uniform [16]))
  (lambda (x) x))
(defvar other (m))
(defvar model (m))
)");
  EXPECT_EQ(ab.value("model.a"), ba.value("model.a"));
  EXPECT_EQ(ab.value("model.b"), ba.value("model.b"));
  EXPECT_EQ(ab.value("model.a"), extra.value("model.a"));
  EXPECT_EQ(ab.value("model.b"), extra.value("model.b"));
  // The same initializer at another path draws another stream.
  EXPECT_NE(extra.value("model.a"), extra.value("model.mid"));
  EXPECT_NE(extra.value("model.a"), extra.value("other.a"));
}

TEST(Defparam, RandomKeysComeFromStreamKey) {
  EXPECT_EQ(stream_key(1, "model.w", 0), stream_key(1, "model.w", 0));
  EXPECT_NE(stream_key(1, "model.w", 0), stream_key(2, "model.w", 0));
  EXPECT_NE(stream_key(1, "model.w", 0), stream_key(1, "model.v", 0));
  EXPECT_NE(stream_key(1, "model.w", 0), stream_key(1, "model.w", 1));
  RunFile f;
  f.load(one_param("(defparam w (+ (normal [4]) (uniform [4])))"));
  EXPECT_EQ(f.param("model.w").decl->init.inputs.size(), 2u);
}

}  // namespace
}  // namespace sx::model::testing
