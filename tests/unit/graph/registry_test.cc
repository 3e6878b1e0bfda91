// The registry: every primitive id has exactly one row, found by id and by name, and
// a node answers its primitive's id (what code dispatches on) and name (what it
// prints).
#include "test_util.h"

namespace sx::graph {
namespace {

TEST(Registry, EveryIdHasItsRowInIdOrder) {
  ASSERT_EQ(all_primitives().size(), kPrimitiveCount);
  for (size_t i = 0; i < kPrimitiveCount; ++i) {
    auto id = static_cast<PrimId>(i);
    const Primitive* p = all_primitives()[i];
    ASSERT_NE(p, nullptr) << "id " << i;
    EXPECT_EQ(index_of(p->id), i) << p->name;
    EXPECT_EQ(&primitive(id), p) << p->name;
    EXPECT_EQ(find_primitive(p->name), p) << "the name " << p->name << " finds another row";
  }
}

TEST(Registry, TheFirstAndLastIds) {
  EXPECT_EQ(primitive(PrimId::input).name, "input");
  EXPECT_EQ(primitive(PrimId::add).name, "add");
  EXPECT_EQ(primitive(PrimId::random_bernoulli).name, "random_bernoulli");
}

TEST(Registry, ANodeKnowsItsPrimitivesIdAndName) {
  Graph g;
  Builder b(g);
  NodeId x = b.input("x", {2}, DType::f32);
  NodeId y = b.add(x, x);
  EXPECT_EQ(g.node(x).op(), PrimId::input);
  EXPECT_EQ(g.node(y).op(), PrimId::add);
  EXPECT_EQ(g.node(y).op_name(), "add");
}

// Each row says what kind of primitive it is, and the kinds agree with the rest of the
// row: a composite and only a composite has a decomposition, the inputs-free rows are
// sources, and only elementwise rows are costly per element.
TEST(Registry, EachRowCarriesItsKindAndCost) {
  for (const Primitive* p : all_primitives()) {
    SCOPED_TRACE(std::string(p->name));
    EXPECT_EQ(p->composite(), p->decompose != nullptr);
    EXPECT_EQ(p->kind == PrimKind::source, p->arity == 0 || p->id == PrimId::iota);
    if (p->kind != PrimKind::elementwise) {
      EXPECT_EQ(p->cost, ElementCost::cheap);
    }
  }
  EXPECT_EQ(primitive(PrimId::matmul).kind, PrimKind::product);
  EXPECT_EQ(primitive(PrimId::scatter_add).kind, PrimKind::reduction);
  EXPECT_EQ(primitive(PrimId::gather).kind, PrimKind::movement);
  EXPECT_EQ(primitive(PrimId::random_normal).kind, PrimKind::random);
  for (PrimId costly : {PrimId::exp, PrimId::log, PrimId::sqrt, PrimId::rsqrt, PrimId::sin, PrimId::cos, PrimId::tanh,
                        PrimId::erf, PrimId::logistic, PrimId::pow}) {
    EXPECT_EQ(primitive(costly).kind, PrimKind::elementwise) << primitive(costly).name;
    EXPECT_EQ(primitive(costly).cost, ElementCost::costly) << primitive(costly).name;
  }
  EXPECT_EQ(primitive(PrimId::add).cost, ElementCost::cheap);
}

}  // namespace
}  // namespace sx::graph
