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

}  // namespace
}  // namespace sx::graph
