// The page's "Roots" and "Paths": which models are roots, the order of parameters,
// canonical paths from binding names, `named`, anon.N with W-PARAM-001, param.N, and the
// errors E-PARAM-005, E-PARAM-008, E-PARAM-009 and E-PARAM-010.
#include "model_test_util.h"

namespace sx::model::testing {
namespace {

const std::string kBigram = std::string(kLinear) + R"(
(defmodel bigram (vocab dim)
  (defparam table (normal [vocab dim] :std 0.02))
  (let ((head (linear dim vocab :bias false)))
    (lambda (ids) (head (index table ids)))))
)";

// The page's roots example, `with-loaded` replaced by a plain constructor call.
TEST(Roots, EveryModelBoundAtTheTopIsARootModelFirst) {
  RunFile f;
  f.load(kBigram + R"(
(defvar teacher (bigram 32 8))
(defvar model (bigram 32 8))

(defun prepare (batch)
  (let ((ids (field batch :ids)))
    (list :inputs ids :targets ids :teacher (teacher ids))))
(defvar logits (teacher (tensor [1 2 3])))
)");
  EXPECT_EQ(f.paths(),
            (std::vector<std::string>{"model.table", "model.head.weight", "teacher.table", "teacher.head.weight"}));
  // "read by any graph": the top-level graph reading the teacher is not E-PARAM-009.
  EXPECT_EQ(graph::shape_str(f.run("logits").shape()), graph::shape_str({3, 32}));
  EXPECT_TRUE(f.param("teacher.table").decl->trainable);
}

// "The parameters are model.* first, then each other root in the order the file binds it".
TEST(Roots, OtherRootsInBindingOrder) {
  RunFile f;
  f.load(std::string(kLinear) + R"(
(defvar zeta (linear 1 1 :bias false))
(defvar alpha (linear 1 1 :bias false))
(defvar model (linear 1 1 :bias false))
(defvar mid (linear 1 1 :bias false))
)");
  EXPECT_EQ(f.paths(), (std::vector<std::string>{"model.weight", "zeta.weight", "alpha.weight", "mid.weight"}));
}

// "... imports first": a model a required module binds at its top is a root under the
// imported name, after model and before the file's own roots.
TEST(Roots, ImportedRootsComeBeforeTheFilesOwn) {
  auto dir = std::filesystem::temp_directory_path() / ("sx_model_roots_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  {
    std::ofstream(dir / "layers.sx") << kLinear;
    std::ofstream(dir / "shared.sx") << "(require \"layers\")\n(defvar encoder (linear 2 2 :bias false))\n";
    std::ofstream(dir / "run.sx") << "(require \"layers\")\n"
                                     "(defvar early (linear 2 2 :bias false))\n"
                                     "(require \"shared\")\n"
                                     "(defvar model (linear 2 2 :bias false))\n"
                                     "(defvar late (linear 2 2 :bias false))\n";
  }
  RunFile f;
  f.load_file((dir / "run.sx").string());
  EXPECT_EQ(f.paths(), (std::vector<std::string>{"model.weight", "encoder.weight", "early.weight", "late.weight"}));
  std::filesystem::remove_all(dir);
}

// A model the file binds is the file's own root even when a library function built it:
// "in the order the file binds it" (only models imported by `require` go first).
TEST(Roots, AModelBuiltByAnImportedFunctionIsTheFilesOwnRoot) {
  auto dir = std::filesystem::temp_directory_path() / ("sx_model_factory_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  {
    std::ofstream(dir / "factory.sx") << kLinear << "(defun make-layer () (linear 2 2 :bias false))\n";
    std::ofstream(dir / "run.sx") << "(require \"factory\")\n"
                                     "(defvar first-root (linear 2 2 :bias false))\n"
                                     "(defvar second-root (make-layer))\n"
                                     "(defvar model (linear 2 2 :bias false))\n";
  }
  RunFile f;
  f.load_file((dir / "run.sx").string());
  EXPECT_EQ(f.paths(), (std::vector<std::string>{"model.weight", "first-root.weight", "second-root.weight"}));
  std::filesystem::remove_all(dir);
}

// "The root is the top-level name the model is bound to, whatever `named` or an earlier
// `let` called it".
TEST(Roots, TheRootIsTheTopLevelNameWhateverNamedOrLetSaid) {
  RunFile f;
  f.load(std::string(kLinear) + R"(
(defvar model (named "net" (linear 2 2 :bias false)))
(defvar other (let ((inner (linear 2 2 :bias false))) inner))
)");
  EXPECT_EQ(f.paths(), (std::vector<std::string>{"model.weight", "other.weight"}));
}

// "A list or vector of models bound at the top level is not one, and its models are not
// either".
TEST(Roots, AListOfModelsAtTheTopIsNotARoot) {
  RunFile f;
  f.load(std::string(kLinear) + R"(
(defvar model (linear 2 2 :bias false))
(defvar layers (list (linear 2 2) (linear 2 2)))
(defvar more [(linear 2 2)])
)");
  EXPECT_EQ(f.paths(), (std::vector<std::string>{"model.weight"}));
  EXPECT_TRUE(f.warnings.empty());
}

TEST(Roots, ReadingAParameterOfAListedModelIsEParam009) {
  auto d = load_error(std::string(kLinear) + R"(
(defvar model (linear 2 2 :bias false))
(defvar layers (list (linear 2 2) (linear 2 2)))
(defvar y ((first layers) (ones [1 2])))
)");
  EXPECT_EQ(d.code, "E-PARAM-009");
  EXPECT_NE(d.message.find("linear"), std::string::npos) << d.message;
  EXPECT_NE(spanned(d).find("matmul"), std::string::npos) << spanned(d);
  EXPECT_EQ(
      error_code(std::string(kLinear) +
                 "(defvar model (linear 2 2)) (defvar more [(linear 2 2)]) (defvar y ((first more) (ones [1 2])))"),
      "E-PARAM-009");
}

// "A model built inside a let ... at the top ... has no root. A graph that reads one of its
// parameters is E-PARAM-009".
TEST(Roots, AModelBuiltInATopLevelLetAndReadIsEParam009) {
  auto d = load_error(std::string(kLinear) + R"(
(defvar model (linear 2 2 :bias false))
(defvar y (let ((m (linear 2 2))) (m (ones [1 2]))))
)");
  EXPECT_EQ(d.code, "E-PARAM-009");
  ASSERT_FALSE(d.notes.empty());
  EXPECT_NE(d.notes[0].find("run.sx:8"), std::string::npos) << d.notes[0];
  // Built by a function: no root either.
  EXPECT_EQ(error_code(std::string(kLinear) +
                       "(defvar model (linear 2 2)) (defun make () (linear 2 2)) (defvar y ((make) (ones [1 2])))"),
            "E-PARAM-009");
}

TEST(Roots, AModelWithoutARootThatNothingReadsIsNoError) {
  RunFile f;
  f.load(std::string(kLinear) + R"(
(defvar model (linear 2 2 :bias false))
(defvar unused (let ((m (linear 2 2))) 1))
)");
  EXPECT_EQ(f.paths(), (std::vector<std::string>{"model.weight"}));
}

// "The same model bound to two top-level names ... is E-PARAM-008, naming both."
TEST(Roots, OneModelBoundToTwoNamesIsEParam008NamingBoth) {
  auto d = load_error(std::string(kLinear) + R"(
(defvar model (linear 2 2))
(defvar alias model)
)");
  EXPECT_EQ(d.code, "E-PARAM-008");
  EXPECT_NE(d.message.find("`model`"), std::string::npos) << d.message;
  EXPECT_NE(d.message.find("`alias`"), std::string::npos) << d.message;
}

// "... or a model reachable from two roots": a sub-model of `model` that its function
// hands out and the file binds again has two roots; the message names both.
TEST(Roots, ASubModelAlsoBoundAtTheTopIsEParam008NamingBothRoots) {
  auto d = load_error(std::string(kLinear) + R"(
(defmodel wrap ()
  (let ((inner (linear 2 2)))
    (lambda (x) (if (keyword? x) inner (inner x)))))
(defvar model (wrap))
(defvar leaked (model :inner))
)");
  EXPECT_EQ(d.code, "E-PARAM-008");
  EXPECT_NE(d.message.find("`leaked`"), std::string::npos) << d.message;
  EXPECT_NE(d.message.find("`model`"), std::string::npos)
      << "the message does not name the root `model`: " << d.message;
}

// The page's path example: (let ((blocks (repeat 12 (lambda (i) (block dim heads))))) ...)
// gives model.blocks.3.attn.q.weight.
const std::string kTransformer = std::string(kLinear) + R"(
(defmodel attention (dim heads)
  (let ((q (linear dim dim :bias false))
        (k (linear dim dim :bias false))
        (v (linear dim dim :bias false)))
    (lambda (x) (+ (q x) (k x) (v x)))))
(defmodel block (dim heads)
  (defparam norm (ones [dim]))
  (let ((attn (attention dim heads)))
    (lambda (x) (* (attn x) norm))))
(defmodel transformer (dim heads)
  (let ((blocks (repeat 12 (lambda (i) (block dim heads)))))
    (lambda (x) (fold (lambda (h b) (b h)) x blocks))))
(defvar model (transformer 4 2))
)";

TEST(Paths, PageExampleBlocksThreeAttnQWeight) {
  RunFile f;
  f.load(kTransformer);
  ASSERT_EQ(f.table.params.size(), 12u * 4u);
  EXPECT_NE(f.table.find("model.blocks.3.attn.q.weight"), nullptr);
  EXPECT_EQ(f.table.params[0].path, "model.blocks.0.norm");
  EXPECT_EQ(f.table.params[1].path, "model.blocks.0.attn.q.weight");
  EXPECT_EQ(f.table.params[2].path, "model.blocks.0.attn.k.weight");
  EXPECT_EQ(f.table.params[3].path, "model.blocks.0.attn.v.weight");
  EXPECT_EQ(f.table.params[4 * 3 + 1].path, "model.blocks.3.attn.q.weight");
  EXPECT_EQ(f.table.params.back().path, "model.blocks.11.attn.v.weight");
  EXPECT_TRUE(f.warnings.empty());
  // The trace graph's inputs are renamed to the paths.
  bool found = false;
  for (const auto& input : f.interp.tracer()->graph().inputs) found |= input.name == "model.blocks.3.attn.q.weight";
  EXPECT_TRUE(found);
  EXPECT_EQ(graph::shape_str(f.run("(model (ones [1 4]))").shape()), graph::shape_str({1, 4}));
}

// "inside a defmodel, a model bound by let takes its binding name" (let* too; the first
// name wins when the same model is bound again).
TEST(Paths, LetBoundSubModelsTakeTheBindingName) {
  RunFile f;
  f.load(std::string(kLinear) + R"(
(defmodel net ()
  (let* ((encoder (linear 2 2 :bias false))
         (decoder (linear 2 2 :bias false))
         (again encoder))
    (lambda (x) (decoder (again x)))))
(defvar model (net))
)");
  EXPECT_EQ(f.paths(), (std::vector<std::string>{"model.encoder.weight", "model.decoder.weight"}));
}

// "a list or vector of models takes one index per element".
TEST(Paths, ListsAndVectorsOfModelsTakeIndices) {
  RunFile f;
  f.load(std::string(kLinear) + R"(
(defmodel net ()
  (let ((layers (list (linear 2 2 :bias false) (linear 2 2 :bias false)))
        (heads (vector (linear 2 2 :bias false) (linear 2 2 :bias false) (linear 2 2 :bias false))))
    (lambda (x) x)))
(defvar model (net))
)");
  EXPECT_EQ(f.paths(),
            (std::vector<std::string>{"model.layers.0.weight", "model.layers.1.weight", "model.heads.0.weight",
                                      "model.heads.1.weight", "model.heads.2.weight"}));
}

// "a defparam takes its own name".
TEST(Paths, DefparamTakesItsOwnName) {
  RunFile f;
  f.load("(defmodel m () (defparam gamma (ones [2])) (defparam beta (zeros [2])) (lambda (x) x)) (defvar model (m))");
  EXPECT_EQ(f.paths(), (std::vector<std::string>{"model.gamma", "model.beta"}));
}

// "(named "segment" value) overrides the segment of a model or parameter".
TEST(Paths, NamedOverridesTheSegment) {
  RunFile f;
  f.load(std::string(kLinear) + R"(
(defmodel net ()
  (let ((a (named "enc" (linear 2 2 :bias false))))
    (named "emb" (defparam table (zeros [3 2])))
    (named "head" (linear 2 2 :bias false))
    (lambda (x) (a x))))
(defvar model (net))
)");
  EXPECT_EQ(f.paths(), (std::vector<std::string>{"model.enc.weight", "model.emb", "model.head.weight"}));
  EXPECT_TRUE(f.warnings.empty());
}

// "(E-PARAM-005 on anything else)".
TEST(Paths, NamedOnAnythingElseIsEParam005) {
  auto d = load_error("(defvar x (named \"x\" 3))");
  EXPECT_EQ(d.code, "E-PARAM-005");
  EXPECT_EQ(spanned(d), "3");
  EXPECT_EQ(error_code("(defvar x (named \"x\" (ones [2])))"), "E-PARAM-005");
  EXPECT_EQ(error_code("(defvar x (named \"x\" (lambda (x) x)))"), "E-PARAM-005");
  // A segment that is not a non-empty string without dots.
  EXPECT_EQ(error_code(std::string(kLinear) + "(defvar model (named \"a.b\" (linear 2 2)))"), "E-PARAM-005");
  EXPECT_EQ(error_code(std::string(kLinear) + "(defvar model (named \"\" (linear 2 2)))"), "E-PARAM-005");
  EXPECT_EQ(error_code(std::string(kLinear) + "(defvar model (named :enc (linear 2 2)))"), "E-PARAM-005");
}

// "A model never bound to a name gets anon.N and the warning W-PARAM-001."
TEST(Paths, AnUnboundSubModelIsAnonNWithWParam001) {
  RunFile f;
  f.load(std::string(kLinear) + R"(
(defmodel net ()
  (let ((named-one (linear 2 2 :bias false)))
    (linear 2 2 :bias false)
    (let ((make (lambda () (linear 2 2 :bias false))))
      (make))
    (lambda (x) (named-one x))))
(defvar model (net))
)");
  EXPECT_EQ(f.paths(),
            (std::vector<std::string>{"model.named-one.weight", "model.anon.0.weight", "model.anon.1.weight"}));
  ASSERT_EQ(f.warnings.size(), 2u);
  EXPECT_EQ(f.warnings[0].code, "W-PARAM-001");
  EXPECT_EQ(f.warnings[0].severity, lang::Severity::Warning);
  EXPECT_EQ(spanned(f.warnings[0]), "(linear 2 2 :bias false)");
  EXPECT_NE(f.warnings[0].message.find("model.anon.0"), std::string::npos) << f.warnings[0].message;
  EXPECT_NE(f.warnings[1].message.find("model.anon.1"), std::string::npos) << f.warnings[1].message;
}

// "Gensym bindings never name models".
TEST(Paths, GensymBindingsNeverNameModels) {
  RunFile f;
  f.load(std::string(kLinear) + R"(
(defmacro with-layer (init body) (let ((g (gensym "layer"))) `(let ((,g ,init)) ,body)))
(defmodel net ()
  (with-layer (linear 2 2 :bias false) (lambda (x) x)))
(defvar model (net))
)");
  EXPECT_EQ(f.paths(), (std::vector<std::string>{"model.anon.0.weight"}));
  ASSERT_EQ(f.warnings.size(), 1u);
  EXPECT_EQ(f.warnings[0].code, "W-PARAM-001");
}

// "a parameter declared with a gensym gets a stable param.N within its model".
TEST(Paths, GensymParametersAreParamNWithinTheirModel) {
  RunFile f;
  f.load(R"(
(defmacro gensym-param (init) `(defparam ,(gensym) ,init))
(defmodel inner () (gensym-param (zeros [1])) (defparam own (zeros [1])) (gensym-param (zeros [2])) (lambda (x) x))
(defmodel outer ()
  (gensym-param (zeros [3]))
  (let ((sub (inner))) (lambda (x) (sub x))))
(defvar model (outer))
)");
  EXPECT_EQ(f.paths(),
            (std::vector<std::string>{"model.param.0", "model.sub.param.0", "model.sub.own", "model.sub.param.1"}));
}

// E-PARAM-010: two parameters with one path.
TEST(Paths, TwoParametersWithOnePathIsEParam010) {
  auto d = load_error(std::string(kLinear) + R"(
(defmodel net ()
  (let ((a (linear 2 2 :bias false)))
    (let ((a (linear 2 2 :bias false)))
      (lambda (x) (a x)))))
(defvar model (net))
)");
  EXPECT_EQ(d.code, "E-PARAM-010");
  EXPECT_NE(d.message.find("model.a.weight"), std::string::npos) << d.message;
  EXPECT_EQ(error_code(R"(
(defmodel m () (defparam w (zeros [1])) (named "w" (defparam v (zeros [1]))) (lambda (x) x))
(defvar model (m))
)"),
            "E-PARAM-010");
}

}  // namespace
}  // namespace sx::model::testing
