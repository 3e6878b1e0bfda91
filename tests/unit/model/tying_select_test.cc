// The page's "Weight tying" (one parameter, its gradient summing both uses; a model
// used twice inside one root is one model named by its first path) and selectors:
// (select :tag ...), :path globs, :not, :all, :any; frozen parameters match none.
#include "model_test_util.h"

namespace sx::model::testing {
namespace {

// The page's tied-lm, and a probe of the same shape whose function returns, for a
// function of the table tensor that reads it in both places, the gradient through both
// uses and through each use alone.
const std::string kTied = R"(
(defmodel tied-lm (vocab dim)
  (defparam table (normal [vocab dim] :std 0.02))
  (lambda (ids) (matmul (index table ids) (transpose table [1 0]))))
(defvar model (tied-lm 5 3))

(defmodel tied-probe (vocab dim)
  (defparam table (normal [vocab dim] :std 0.5))
  (lambda (which)
    (let ((ids (tensor [0 2 2 4])))
      (cond ((equal which :both) ((grad (lambda (t) (sum (matmul (index t ids) (transpose t [1 0]))))) table))
            ((equal which :lookup) ((grad (lambda (t) (sum (matmul (index t ids) (transpose table [1 0]))))) table))
            ((equal which :output) ((grad (lambda (t) (sum (matmul (index table ids) (transpose t [1 0]))))) table))
            (true table)))))
(defvar probe (tied-probe 5 3))
)";

// "model.table is one parameter".
TEST(Tying, TheSameParameterUsedTwiceIsOneParameter) {
  RunFile f;
  f.load(kTied);
  EXPECT_EQ(f.paths(), (std::vector<std::string>{"model.table", "probe.table"}));
  EXPECT_EQ(graph::shape_str(f.param("model.table").decl->shape), graph::shape_str({5, 3}));
  EXPECT_EQ(graph::shape_str(f.run("(model (tensor [1 3]))").shape()), graph::shape_str({2, 5}));
  // The table reads only one input for both uses.
  size_t table_inputs = 0;
  for (const auto& input : f.interp.tracer()->graph().inputs) table_inputs += input.name == "model.table";
  EXPECT_EQ(table_inputs, 1u);
}

// "its gradient sums both uses".
TEST(Tying, TheGradientOfATiedParameterSumsBothUses) {
  RunFile f;
  f.load(kTied);
  auto table = f.run("(probe :table)").to_doubles();
  auto both = f.run("(probe :both)").to_doubles();
  auto lookup = f.run("(probe :lookup)").to_doubles();
  auto output = f.run("(probe :output)").to_doubles();
  ASSERT_EQ(both.size(), 15u);
  ASSERT_EQ(table, f.value("probe.table"));
  // Closed form: sum(T[ids] T^T) = (sum_i T[ids_i]) . (sum_r T[r]); d/dT[r] =
  // count(r in ids) * colsum(T) + sum_i T[ids_i].
  const int ids[] = {0, 2, 2, 4};
  std::vector<double> colsum(3, 0), picked(3, 0);
  for (int r = 0; r < 5; ++r) {
    for (int c = 0; c < 3; ++c) colsum[c] += table[r * 3 + c];
  }
  for (int id : ids) {
    for (int c = 0; c < 3; ++c) picked[c] += table[id * 3 + c];
  }
  for (int r = 0; r < 5; ++r) {
    int count = 0;
    for (int id : ids) count += id == r;
    for (int c = 0; c < 3; ++c) {
      EXPECT_NEAR(lookup[r * 3 + c], count * colsum[c], 1e-4) << r << "," << c;
      EXPECT_NEAR(output[r * 3 + c], picked[c], 1e-4) << r << "," << c;
      EXPECT_NEAR(both[r * 3 + c], lookup[r * 3 + c] + output[r * 3 + c], 1e-4) << r << "," << c;
    }
  }
}

// docs/models.md: "A model used twice inside one root is one model, named by the first path in
// declaration order."
TEST(Tying, TheSameModelUsedTwiceInOneRootIsOneModelNamedByTheFirstPath) {
  RunFile f;
  f.load(std::string(kLinear) + R"(
(defmodel user (inner) (lambda (x) (inner x)))
(defmodel net ()
  (let* ((layers (list (linear 2 2) (linear 2 2)))
         (first-layer (first layers))
         (twice (list first-layer first-layer))
         (dec (user first-layer)))
    (lambda (x) (dec (fold (lambda (h l) (l h)) x twice)))))
(defvar model (net))
)");
  EXPECT_EQ(f.paths(), (std::vector<std::string>{"model.layers.0.weight", "model.layers.0.b", "model.layers.1.weight",
                                                 "model.layers.1.b"}));
  EXPECT_TRUE(f.warnings.empty());
  EXPECT_EQ(graph::shape_str(f.run("(model (ones [1 2]))").shape()), graph::shape_str({1, 2}));
}

// A parameter handed to a sub-model is still the one parameter of its declaring model.
TEST(Tying, AParameterSharedWithASubModelIsOneParameter) {
  RunFile f;
  f.load(R"(
(defmodel head (table) (lambda (h) (matmul h (transpose table [1 0]))))
(defmodel lm (vocab dim)
  (defparam emb (normal [vocab dim] :std 0.02))
  (let ((out (head emb)))
    (lambda (ids) (out (index emb ids)))))
(defvar model (lm 7 4))
)");
  EXPECT_EQ(f.paths(), (std::vector<std::string>{"model.emb"}));
  EXPECT_EQ(graph::shape_str(f.run("(model (tensor [1 2 3]))").shape()), graph::shape_str({3, 7}));
}

// Selectors over a table with tags, nesting, a frozen parameter and a second root.
const std::string kSelectable = R"(
(defmodel norm (dim) (defparam scale (ones [dim]) :tags [:no-decay]) (lambda (x) (* x scale)))
(defmodel attn (dim)
  (defparam q (normal [dim dim]) :tags (list :decay))
  (let ((norm (norm dim))) (lambda (x) (norm (matmul x q)))))
(defmodel block (dim)
  (defparam w (normal [dim dim]) :tags ["decay" :matrix])
  (let ((norm (norm dim)) (attn (attn dim)))
    (lambda (x) (attn (norm (matmul x w))))))
(defmodel net (dim)
  (defparam embed (normal [dim]) :tags [:no-decay])
  (defparam frozen (normal [dim dim]) :tags [:decay] :trainable false)
  (let ((blocks (repeat 2 (lambda (i) (block dim)))))
    (lambda (x) (fold (lambda (h b) (b h)) x blocks))))
(defmodel probe () (defparam w (zeros [1])) (lambda (x) x))
(defvar teacher (probe))
(defvar model (net 2))
)";

using Paths = std::vector<std::string>;

TEST(Select, TheTableToSelectFrom) {
  RunFile f;
  f.load(kSelectable);
  EXPECT_EQ(f.paths(), (Paths{"model.embed", "model.frozen", "model.blocks.0.w", "model.blocks.0.norm.scale",
                              "model.blocks.0.attn.q", "model.blocks.0.attn.norm.scale", "model.blocks.1.w",
                              "model.blocks.1.norm.scale", "model.blocks.1.attn.q", "model.blocks.1.attn.norm.scale",
                              "teacher.w"}));
}

// "(select :tag :name) finds the parameter"; tags written as keywords, symbols or strings.
TEST(Select, TagFindsTheTaggedParameters) {
  RunFile f;
  f.load(kSelectable);
  EXPECT_EQ(f.selected("(select :tag :decay)"),
            (Paths{"model.blocks.0.w", "model.blocks.0.attn.q", "model.blocks.1.w", "model.blocks.1.attn.q"}));
  EXPECT_EQ(f.selected("(select :tag :matrix)"), (Paths{"model.blocks.0.w", "model.blocks.1.w"}));
  EXPECT_EQ(f.selected("(select :tag \"matrix\")"), (Paths{"model.blocks.0.w", "model.blocks.1.w"}));
  EXPECT_EQ(f.selected("(select :tag :no-decay)"),
            (Paths{"model.embed", "model.blocks.0.norm.scale", "model.blocks.0.attn.norm.scale",
                   "model.blocks.1.norm.scale", "model.blocks.1.attn.norm.scale"}));
  EXPECT_EQ(f.selected("(select :tag :nothing)"), Paths{});
}

// (select :path "model.blocks.*.norm.*"): `*` matches within one segment.
TEST(Select, PathStarMatchesWithinOneSegment) {
  RunFile f;
  f.load(kSelectable);
  EXPECT_EQ(f.selected("(select :path \"model.blocks.*.norm.*\")"),
            (Paths{"model.blocks.0.norm.scale", "model.blocks.1.norm.scale"}));
  EXPECT_EQ(f.selected("(select :path \"model.*\")"), (Paths{"model.embed"}));
  EXPECT_EQ(f.selected("(select :path \"*.w\")"), (Paths{"teacher.w"}));
  EXPECT_EQ(f.selected("(select :path \"model.b*s.1.w\")"), (Paths{"model.blocks.1.w"}));
  EXPECT_EQ(f.selected("(select :path \"model.blocks.*\")"), Paths{});
  EXPECT_EQ(f.selected("(select :path \"model.blocks.0.w\")"), (Paths{"model.blocks.0.w"}));
  EXPECT_EQ(f.selected("(select :path \"model.blocks.0\")"), Paths{});
}

// `**` matches across segments.
TEST(Select, PathDoubleStarMatchesAcrossSegments) {
  RunFile f;
  f.load(kSelectable);
  EXPECT_EQ(f.selected("(select :path \"model.**.scale\")"),
            (Paths{"model.blocks.0.norm.scale", "model.blocks.0.attn.norm.scale", "model.blocks.1.norm.scale",
                   "model.blocks.1.attn.norm.scale"}));
  EXPECT_EQ(f.selected("(select :path \"model.blocks.1.**\")"),
            (Paths{"model.blocks.1.w", "model.blocks.1.norm.scale", "model.blocks.1.attn.q",
                   "model.blocks.1.attn.norm.scale"}));
  EXPECT_EQ(f.selected("(select :path \"**\")").size(), 10u);
  EXPECT_TRUE(path_matches("model.**", "model.a.b.c"));
  EXPECT_TRUE(path_matches("model.*.c", "model.b.c"));
  EXPECT_FALSE(path_matches("model.*.c", "model.a.b.c"));
  EXPECT_TRUE(path_matches("model.**.c", "model.a.b.c"));
  EXPECT_FALSE(path_matches("model.*", "model"));
}

TEST(Select, NotAllAndAnyCombineSelectors) {
  RunFile f;
  f.load(kSelectable);
  EXPECT_EQ(f.selected("(select :not (select :tag :decay))"),
            (Paths{"model.embed", "model.blocks.0.norm.scale", "model.blocks.0.attn.norm.scale",
                   "model.blocks.1.norm.scale", "model.blocks.1.attn.norm.scale", "teacher.w"}));
  EXPECT_EQ(f.selected("(select :all (select :path \"model.blocks.**\") (select :tag :no-decay))"),
            (Paths{"model.blocks.0.norm.scale", "model.blocks.0.attn.norm.scale", "model.blocks.1.norm.scale",
                   "model.blocks.1.attn.norm.scale"}));
  EXPECT_EQ(f.selected("(select :any (select :tag :matrix) (select :path \"teacher.*\"))"),
            (Paths{"model.blocks.0.w", "model.blocks.1.w", "teacher.w"}));
  EXPECT_EQ(f.selected("(select :all (select :tag :decay) (select :not (select :tag :matrix)))"),
            (Paths{"model.blocks.0.attn.q", "model.blocks.1.attn.q"}));
}

// "a selector never matches" a frozen parameter: not by tag, path, :not or :any.
TEST(Select, FrozenParametersMatchNoSelector) {
  RunFile f;
  f.load(kSelectable);
  auto has_frozen = [](const Paths& paths) {
    return std::find(paths.begin(), paths.end(), "model.frozen") != paths.end();
  };
  EXPECT_FALSE(has_frozen(f.selected("(select :tag :decay)")));
  EXPECT_EQ(f.selected("(select :path \"model.frozen\")"), Paths{});
  EXPECT_FALSE(has_frozen(f.selected("(select :path \"**\")")));
  EXPECT_FALSE(has_frozen(f.selected("(select :not (select :tag :decay))")));
  EXPECT_FALSE(has_frozen(f.selected("(select :not (select :path \"model.frozen\"))")));
  EXPECT_FALSE(has_frozen(f.selected("(select :any (select :path \"model.frozen\") (select :tag :decay))")));
}

TEST(Select, SelectorsPrintAsWritten) {
  RunFile f;
  f.load(kSelectable);
  EXPECT_EQ(lang::print(f.eval("(select :all (select :tag :decay) (select :not (select :path \"model.*\")))")),
            "(select :all (select :tag :decay) (select :not (select :path \"model.*\")))");
}

}  // namespace
}  // namespace sx::model::testing
