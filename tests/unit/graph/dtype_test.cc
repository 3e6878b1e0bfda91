// Dtype names, sizes and the promotion rules, strong and weak.
#include "graph/dtype.h"

#include <gtest/gtest.h>

namespace sx::graph {
namespace {

TEST(DType, NamesAndSizesRoundTrip) {
  const std::pair<std::string_view, size_t> expected[] = {{"f32", 4}, {"bf16", 2}, {"f64", 8}, {"i32", 4},
                                                          {"i64", 8}, {"bool", 1}, {"u8", 1},  {"u16", 2}};
  for (size_t i = 0; i < std::size(kAllDTypes); ++i) {
    EXPECT_EQ(dtype_name(kAllDTypes[i]), expected[i].first);
    EXPECT_EQ(dtype_size(kAllDTypes[i]), expected[i].second);
    EXPECT_EQ(parse_dtype(expected[i].first), kAllDTypes[i]);
  }
  EXPECT_FALSE(parse_dtype("float32").has_value());
}

TEST(DType, StrongPromotion) {
  EXPECT_EQ(promote(DType::f32, DType::bf16), DType::f32);
  EXPECT_EQ(promote(DType::bf16, DType::f64), DType::f64);
  EXPECT_EQ(promote(DType::i32, DType::f32), DType::f32);
  EXPECT_EQ(promote(DType::i64, DType::bf16), DType::bf16);
  EXPECT_EQ(promote(DType::boolean, DType::u8), DType::u8);
  EXPECT_EQ(promote(DType::u8, DType::u16), DType::u16);
  EXPECT_EQ(promote(DType::u16, DType::i32), DType::i32);
  EXPECT_EQ(promote(DType::i32, DType::i64), DType::i64);
  for (DType a : kAllDTypes) {
    EXPECT_EQ(promote(a, a), a);
    EXPECT_EQ(promote(DType::boolean, a), a);
    for (DType b : kAllDTypes) EXPECT_EQ(promote(a, b), promote(b, a));
  }
}

TEST(DType, WeakScalarsDoNotWiden) {
  auto weak = [](DType d) { return TypedDType{d, true}; };
  auto strong = [](DType d) { return TypedDType{d, false}; };
  EXPECT_EQ(promote(strong(DType::bf16), weak(DType::f64)).dtype, DType::bf16);
  EXPECT_EQ(promote(weak(DType::i64), strong(DType::i32)).dtype, DType::i32);
  EXPECT_EQ(promote(weak(DType::i64), strong(DType::f32)).dtype, DType::f32);
  EXPECT_EQ(promote(strong(DType::i32), weak(DType::f64)).dtype, DType::f32);
  EXPECT_EQ(promote(strong(DType::boolean), weak(DType::i64)).dtype, DType::i32);
  EXPECT_FALSE(promote(strong(DType::f32), weak(DType::f64)).weak);
  TypedDType both = promote(weak(DType::i64), weak(DType::f64));
  EXPECT_EQ(both.dtype, DType::f64);
  EXPECT_TRUE(both.weak);
}

}  // namespace
}  // namespace sx::graph
