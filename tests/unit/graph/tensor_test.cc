// Host tensors: values given as doubles (constants, `full`, `tensor` literals) convert
// to the dtype exactly as the cast primitive converts, at the edges too.
#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "test_util.h"

namespace sx::graph {
namespace {

using testing::eval;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Values at and around every integer dtype's limits, and the specials.
const std::vector<double> kEdges = {kNaN,
                                    kInf,
                                    -kInf,
                                    0.0,
                                    -0.0,
                                    2.7,
                                    -2.7,
                                    0.5,
                                    -0.5,
                                    -1.0,
                                    1e10,
                                    -1e10,
                                    3e9,
                                    255.0,
                                    255.5,
                                    256.0,
                                    65535.0,
                                    65536.0,
                                    2147483647.0,
                                    2147483647.5,
                                    2147483648.0,
                                    -2147483648.0,
                                    -2147483648.5,
                                    -2147483649.0,
                                    9223372036854775807.0,  // 2^63, just past i64's limit
                                    -9223372036854775808.0,
                                    -9223372036854777856.0,  // the double below -2^63
                                    1e300,
                                    -1e300};

// The cast primitive's result for `values` (held in f64) cast to `dtype`.
Tensor cast_of(const std::vector<double>& values, DType dtype) {
  auto n = static_cast<int64_t>(values.size());
  return eval([&](Builder& b) { return b.cast(b.constant(Tensor::from_doubles(DType::f64, {n}, values)), dtype); });
}

TEST(Tensor, FromDoublesConvertsAsCastDoes) {
  for (DType dtype : kAllDTypes) {
    auto n = static_cast<int64_t>(kEdges.size());
    Tensor direct = Tensor::from_doubles(dtype, {n}, kEdges);
    Tensor cast = cast_of(kEdges, dtype);
    ASSERT_EQ(direct.bytes().size(), cast.bytes().size());
    for (int64_t i = 0; i < n; ++i) {
      size_t size = dtype_size(dtype), at = static_cast<size_t>(i) * size;
      bool same =
          std::equal(direct.bytes().begin() + at, direct.bytes().begin() + at + size, cast.bytes().begin() + at);
      EXPECT_TRUE(same) << dtype_name(dtype) << " of " << kEdges[static_cast<size_t>(i)] << ": from_doubles gives "
                        << direct.value(i) << ", cast gives " << cast.value(i);
    }
  }
}

template <class T>
std::vector<T> elements(const Tensor& t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.numel());
}

TEST(Tensor, FloatsSaturateToIntegers) {
  using I32 = std::numeric_limits<int32_t>;
  using I64 = std::numeric_limits<int64_t>;
  std::vector<double> values = {kNaN, kInf, -kInf, 2147483648.0, -2147483649.0, 1e10, 3e9, 2.7, -2.7, -0.5};
  EXPECT_EQ(
      elements<int32_t>(Tensor::from_doubles(DType::i32, {10}, values)),
      (std::vector<int32_t>{0, I32::max(), I32::min(), I32::max(), I32::min(), I32::max(), I32::max(), 2, -2, 0}));
  EXPECT_EQ(elements<int64_t>(testing::tensor(DType::i64, {4}, {kNaN, kInf, -kInf, 9223372036854775807.0})),
            (std::vector<int64_t>{0, I64::max(), I64::min(), I64::max()}));
  EXPECT_EQ(elements<uint8_t>(testing::tensor(DType::u8, {6}, {kNaN, -1.0, 255.5, 256.0, 1e10, -kInf})),
            (std::vector<uint8_t>{0, 0, 255, 255, 255, 0}));
  EXPECT_EQ(elements<uint16_t>(testing::tensor(DType::u16, {5}, {kNaN, -1.0, 65535.9, 65536.0, kInf})),
            (std::vector<uint16_t>{0, 0, 65535, 65535, 65535}));
  // bool: anything but zero is true, NaN included (as `cast` and C++ have it).
  EXPECT_EQ(elements<bool>(testing::tensor(DType::boolean, {5}, {0.0, -0.0, 0.5, kNaN, -kInf})),
            (std::vector<bool>{false, false, true, true, true}));
  // Tensor::scalar, what `full` and `pad` use, converts the same way.
  EXPECT_EQ(Tensor::scalar(DType::i32, 1e10).data<int32_t>()[0], I32::max());
  EXPECT_EQ(Tensor::scalar(DType::i32, -1e10).data<int32_t>()[0], I32::min());
}

TEST(Tensor, ElementsStartOnACacheLine) {
  // The cpu device's products read a weight's rows in parts of two cache lines each
  // (gemm.cc): a row of a multiple of 16 floats starts a line only if the tensor does.
  const std::vector<uint8_t> bytes(4 * 48, 1);
  for (const Tensor& t : {Tensor(DType::f32, {3, 16}), Tensor(DType::f32, {3, 16}, bytes),
                          Tensor::from_doubles(DType::bf16, {5}, std::vector<double>(5, 1.0))}) {
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.bytes().data()) % 64, 0u);
  }
  EXPECT_EQ(Tensor(DType::f32, {3, 16}, bytes).bytes()[47], 1);
}

// The flags of the mapping that holds `p`, from /proc/self/smaps (its "VmFlags:" line),
// or "" where there is none to read.
std::string mapping_flags(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const auto at = reinterpret_cast<uintptr_t>(p);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    uintptr_t start = 0, end = 0;
    char dash = 0;
    std::istringstream header(line);
    if (header >> std::hex >> start >> dash >> end && dash == '-' && line.find(':') > line.find(' ')) {
      inside = start <= at && at < end;
    } else if (inside && line.starts_with("VmFlags:")) {
      return line + " ";
    }
  }
  return "";
}

TEST(Tensor, LargeOnesLieOnHugePagesWhereLinuxGivesThem) {
  // Large tensors (the cpu device's arena is allocated the same way) start on a huge
  // page and ask Linux for huge pages: their mapping's flags carry "hg".
  const Tensor large(DType::f32, {3, 1 << 20});
  EXPECT_EQ(reinterpret_cast<uintptr_t>(large.bytes().data()) % kHugePage, 0u);
  if (!std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled")) GTEST_SKIP() << "a kernel without huge pages";
  const std::string flags = mapping_flags(large.bytes().data());
  if (flags.empty()) GTEST_SKIP() << "no /proc/self/smaps to read the mapping's flags from";
  EXPECT_NE(flags.find(" hg "), std::string::npos) << flags;
  const Tensor small(DType::f32, {16});
  EXPECT_EQ(reinterpret_cast<uintptr_t>(small.bytes().data()) % 64, 0u);
}

}  // namespace
}  // namespace sx::graph
