// flops: what each kind of node counts, and that only the nodes the outputs
// need are counted.
#include "graph/cost.h"

#include "test_util.h"

namespace sx::graph {
namespace {

TEST(Cost, CountsProductsElementsAndReads) {
  Graph g;
  Builder b(g);
  NodeId x = b.input("x", {2, 3, 4}, DType::f32);
  NodeId w = b.input("w", {4, 5}, DType::f32);
  NodeId y = b.matmul(x, w);                                 // broadcast w (0), product 2 * 2*3*5 * 4 = 240
  NodeId z = b.sum(b.tanh(y), {-1});                         // tanh 30, sum reads 30
  b.output("z", b.transpose(b.reshape(z, {3, 2}), {1, 0}));  // movement: 0
  b.tanh(x);                                                 // dead: not counted
  EXPECT_EQ(flops(g), 240 + 30 + 30);
}

}  // namespace
}  // namespace sx::graph
