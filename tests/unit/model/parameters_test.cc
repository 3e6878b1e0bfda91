// `(parameters model)`: the model's parameter tensors as a plist keyed by their paths
// within the model, and `grad` over it (issue 10 item 8).
#include "model_test_util.h"

namespace sx::model::testing {
namespace {

const std::string kNet = R"(
(defmodel norm (dim) (defparam scale (ones [dim]) :tags [:no-decay]) (lambda (x) (* x scale)))
(defmodel block (dim)
  (defparam w (ones [dim dim]))
  (let ((norm (norm dim)))
    (lambda (x) (norm (matmul x w)))))
(defmodel net (dim)
  (defparam embed (ones [dim]))
  (defparam frozen (ones [dim dim]) :trainable false)
  (let ((blocks (repeat 2 (lambda (i) (block dim)))))
    (lambda (x) (fold (lambda (h b) (b h)) (+ x embed) blocks))))
(defvar model (net 2))
)";

// The plist's keys, as text.
std::vector<std::string> keys(RunFile& f, const std::string& expr) {
  std::vector<std::string> out;
  auto items = lang::list_items(f.eval(expr));
  for (size_t i = 0; i < items.size(); i += 2) out.push_back(lang::print(items[i]));
  return out;
}

TEST(Parameters, KeyedByPathWithinTheModelInTableOrder) {
  RunFile f;
  f.load(kNet);
  std::vector<std::string> want;
  for (const auto& path : f.paths()) want.push_back(":" + path.substr(std::string("model.").size()));
  EXPECT_EQ(keys(f, "(parameters model)"), want);
  EXPECT_EQ(want.front(), ":embed");
  EXPECT_EQ(want.back(), ":blocks.1.norm.scale");
  // A sub-model's own paths start from it.
  EXPECT_EQ(keys(f, "(parameters (nth 0 (list (block 3))))"), (std::vector<std::string>{":w", ":norm.scale"}));
}

TEST(Parameters, TheValuesAreTheParameters) {
  RunFile f;
  f.load(kNet);
  lang::Value plist = f.eval("(parameters model)");
  auto items = lang::list_items(plist);
  for (size_t i = 0; i < items.size(); i += 2) {
    const auto* t = lang::as_tensor(items[i + 1]);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->node, f.param("model." + items[i].as<lang::Symbol>()->name).decl->node);
  }
}

TEST(Parameters, TrainableOnlyLeavesFrozenOnesOut) {
  RunFile f;
  f.load(kNet);
  auto all = keys(f, "(parameters model)");
  auto trainable = keys(f, "(parameters model :trainable true)");
  EXPECT_EQ(all.size(), trainable.size() + 1);
  EXPECT_EQ(std::find(trainable.begin(), trainable.end(), ":frozen"), trainable.end());
  EXPECT_EQ(keys(f, "(parameters model :trainable false)"), all);
}

TEST(Parameters, GradOverThemGivesThePlistOfGradients) {
  RunFile f;
  f.load(kNet);
  f.eval(
      "(defvar grads ((grad (lambda (ps) (sum (* (getf ps :embed) (getf ps :blocks.0.norm.scale))))) "
      "(parameters model)))");
  EXPECT_EQ(keys(f, "grads"), keys(f, "(parameters model)"));
  EXPECT_EQ(f.run("(getf grads :embed)").to_doubles(), (std::vector<double>{1, 1}));
  EXPECT_EQ(f.run("(getf grads :blocks.0.w)").to_doubles(), (std::vector<double>{0, 0, 0, 0}));
  // Through the model itself: the parameters are differentiated where they are, so a
  // function that calls the model gets their gradients (model(x) = (x + embed) W0 s0 W1 s1).
  f.eval("(defvar x (tensor [[1.0 2.0]]))");
  f.eval("(defvar through ((grad (lambda (ps) (sum (model x)))) (parameters model)))");
  EXPECT_EQ(f.run("(getf through :embed)").to_doubles(), (std::vector<double>{4, 4}));
  EXPECT_EQ(f.run("(getf through :blocks.1.norm.scale)").to_doubles(), (std::vector<double>{10, 10}));
  EXPECT_EQ(f.run("(getf through :blocks.0.w)").to_doubles(), (std::vector<double>{4, 4, 6, 6}));
  EXPECT_EQ(f.run("(getf through :frozen)").to_doubles(), (std::vector<double>{0, 0, 0, 0}));
  // The same through value-and-grad.
  EXPECT_EQ(f.run("(first ((value-and-grad (lambda (ps) (sum (model x)))) (parameters model)))").to_doubles(),
            (std::vector<double>{20}));
}

TEST(Parameters, Errors) {
  EXPECT_EQ(error_code(kNet + "(parameters 3)"), "E-EVAL-004");
  EXPECT_EQ(error_code(kNet + "(parameters model :trainable 1)"), "E-EVAL-004");
  EXPECT_EQ(error_code(kNet + "(parameters model :frozen true)"), "E-EVAL-006");
}

}  // namespace
}  // namespace sx::model::testing
