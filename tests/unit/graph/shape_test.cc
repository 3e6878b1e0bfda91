// The one shape formatter: every part writes shapes with graph::shape_str, in the
// spelling of whoever reads them (messages, the language, JSON).
#include "test_util.h"

namespace sx::graph {
namespace {

TEST(ShapeText, OneFormatterWithTheSeparatorOfItsReader) {
  EXPECT_EQ(shape_str({2, 3}), "[2, 3]");
  EXPECT_EQ(shape_str({}), "[]");
  EXPECT_EQ(shape_str({2, 3}, " "), "[2 3]");  // as the language writes it
  EXPECT_EQ(shape_str({2, 3}, ","), "[2,3]");  // compact JSON
  EXPECT_EQ(shape_str({7}, " "), "[7]");
  EXPECT_EQ(list_str({0, -1}), "[0, -1]");
}

}  // namespace
}  // namespace sx::graph
