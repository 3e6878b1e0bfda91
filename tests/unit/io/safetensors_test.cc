// Writing safetensors files and reading them back: the same bits, aligned data, the
// header in the given order, the atomic rename, and the f32/bf16 conversions of read_tensor.
#include "io/safetensors.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "test_util.h"

namespace sx::io {
namespace {

using graph::DType;
using graph::Tensor;
using testing::TempDir;

// A tensor of every dtype, with values from its index.
std::vector<std::pair<std::string, Tensor>> every_dtype() {
  std::vector<std::pair<std::string, Tensor>> out;
  for (DType dtype : graph::kAllDTypes) {
    graph::Shape shape{2, 3};
    std::vector<double> values;
    for (int i = 0; i < 6; ++i) values.push_back(dtype == DType::boolean ? i % 2 : i * 1.25 - 2);
    if (graph::is_unsigned(dtype)) {
      for (double& v : values) v = std::fabs(v) * 3;
    }
    out.emplace_back(std::string("t_") + std::string(graph::dtype_name(dtype)),
                     Tensor::from_doubles(dtype, shape, values));
  }
  out.emplace_back("scalar", Tensor::scalar(DType::f32, -0.0));
  out.emplace_back("empty", Tensor(DType::bf16, {3, 0, 2}));
  out.emplace_back("odd", Tensor::from_doubles(DType::u8, {3}, std::vector<double>{1, 2, 3}));
  out.emplace_back("after_odd", Tensor::from_doubles(DType::f64, {2}, std::vector<double>{1e300, -1e-300}));
  return out;
}

TEST(Write, RoundTripSameBits) {
  TempDir dir;
  const std::string path = dir.file("all.safetensors");
  auto tensors = every_dtype();
  std::map<std::string, std::string> metadata{{"format", "pt"}, {"step", "20"}, {"unicode", "\u00e9\u4e2d"}};
  write_safetensors(path, tensors, metadata);
  auto file = SafetensorsFile::open(path);
  EXPECT_EQ(file->path(), path);
  EXPECT_EQ(file->file_size(), std::filesystem::file_size(path));
  EXPECT_EQ(file->metadata(), metadata);
  EXPECT_EQ(file->data_offset() % 8, 0u);
  ASSERT_EQ(file->tensors().size(), tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& [name, tensor] = tensors[i];
    const TensorInfo& info = file->tensors()[i];  // header order is the given order
    EXPECT_EQ(info.name, name);
    EXPECT_EQ(info.dtype, safetensors_dtype_name(tensor.dtype()));
    EXPECT_EQ(info.shape, std::vector<int64_t>(tensor.shape().begin(), tensor.shape().end()));
    auto bytes = file->bytes(info);
    EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), tensor.bytes().begin(), tensor.bytes().end())) << name;
    EXPECT_EQ(file->find(name), &info);
  }
  // The data section holds the tensors in the given order.
  EXPECT_EQ(file->tensors().front().begin, 0u);
  EXPECT_EQ(file->tensors().back().end, file->file_size() - file->data_offset());
}

TEST(Write, HeaderPaddedWithSpaces) {
  TempDir dir;
  const std::string path = dir.file("one.safetensors");
  write_safetensors(path, {{"w", Tensor::from_doubles(DType::f32, {1}, std::vector<double>{1})}});
  std::string bytes = testing::read_file(path);
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ((8 + n) % 8, 0u);
  std::string header = bytes.substr(8, n);
  EXPECT_EQ(header.substr(0, header.find_last_not_of(' ') + 1),
            R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})");
  EXPECT_EQ(bytes.size(), 8 + n + 4);
}

TEST(Write, NoTensorsAtAll) {
  TempDir dir;
  const std::string path = dir.file("none.safetensors");
  write_safetensors(path, {});
  auto file = SafetensorsFile::open(path);
  EXPECT_TRUE(file->tensors().empty());
  EXPECT_TRUE(file->metadata().empty());
}

TEST(Write, ReplacesAtomicallyAndLeavesNoTemporary) {
  TempDir dir;
  const std::string path = dir.file("w.safetensors");
  write_safetensors(path, {{"a", Tensor(DType::f32, {2})}});
  write_safetensors(path, {{"b", Tensor(DType::f32, {3})}});
  auto file = SafetensorsFile::open(path);
  ASSERT_EQ(file->tensors().size(), 1u);
  EXPECT_EQ(file->tensors()[0].name, "b");
  size_t entries = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir.path())) ++entries;
  EXPECT_EQ(entries, 1u);
}

TEST(Write, RefusesBadInput) {
  TempDir dir;
  const std::string path = dir.file("bad.safetensors");
  EXPECT_THROW(write_safetensors(path, {{"a", Tensor(DType::f32, {1})}, {"a", Tensor(DType::f32, {1})}}),
               std::invalid_argument);
  EXPECT_THROW(write_safetensors(path, {{"__metadata__", Tensor(DType::f32, {1})}}), std::invalid_argument);
  EXPECT_THROW(write_safetensors(path, {{"\xff", Tensor(DType::f32, {1})}}), std::invalid_argument);
  EXPECT_FALSE(std::filesystem::exists(path));
  try {
    write_safetensors(dir.file("no/such/folder/x.safetensors"), {});
    ADD_FAILURE() << "wrote into a missing folder";
  } catch (const LoadError& e) {
    EXPECT_EQ(e.code(), "E-LOAD-002");
    EXPECT_NE(std::string(e.what()).find("x.safetensors: cannot write it"), std::string::npos) << e.what();
  }
}

TEST(ReadTensor, F32ToBf16RoundsToNearestEven) {
  TempDir dir;
  const std::string path = dir.file("r.safetensors");
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> values = {
      1.0f,
      std::bit_cast<float>(0x3f808000u),  // exactly halfway, even below: rounds down to 0x3f80
      std::bit_cast<float>(0x3f818000u),  // exactly halfway, odd below: rounds up to 0x3f82
      std::bit_cast<float>(0x3f808001u),  // just past halfway: rounds up
      -2.5f,
      0.0f,
      -0.0f,
      inf,
      -inf,
      std::numeric_limits<float>::quiet_NaN(),
      std::bit_cast<float>(0x7f7fffffu),  // the largest float rounds up to infinity
      1e-40f,                             // a subnormal
  };
  Tensor source(DType::f32, {static_cast<int64_t>(values.size())});
  std::memcpy(source.data<float>(), values.data(), values.size() * 4);
  write_safetensors(path, {{"w", source}});
  auto file = SafetensorsFile::open(path);
  Tensor as_bf16 = read_tensor(*file, *file->find("w"), DType::bf16);
  EXPECT_EQ(as_bf16.dtype(), DType::bf16);
  const uint16_t expected[] = {0x3f80, 0x3f80, 0x3f82, 0x3f81, 0xc020, 0x0000, 0x8000, 0x7f80, 0xff80, 0, 0x7f80, 0};
  for (size_t i = 0; i < values.size(); ++i) {
    uint16_t got = as_bf16.data<graph::Bf16>()[i].bits;
    if (std::isnan(values[i])) {
      EXPECT_TRUE(std::isnan(static_cast<float>(as_bf16.data<graph::Bf16>()[i]))) << i;
    } else if (i == values.size() - 1) {
      EXPECT_EQ(got, graph::Bf16(values[i]).bits);
    } else {
      EXPECT_EQ(got, expected[i]) << i;
    }
  }
  // Same dtype: copied, not converted.
  Tensor as_f32 = read_tensor(*file, *file->find("w"), DType::f32);
  EXPECT_EQ(as_f32, source);
}

TEST(ReadTensor, Bf16ToF32IsExact) {
  TempDir dir;
  const std::string path = dir.file("b.safetensors");
  Tensor source(DType::bf16, {4});
  const uint16_t bits[] = {0x3f80, 0xc049, 0x7fc0, 0x0001};
  std::memcpy(source.data<uint16_t>(), bits, sizeof bits);
  write_safetensors(path, {{"b", source}});
  auto file = SafetensorsFile::open(path);
  Tensor wide = read_tensor(*file, *file->find("b"), DType::f32);
  for (int i = 0; i < 4; ++i) {
    uint32_t got;
    std::memcpy(&got, &wide.data<float>()[i], 4);
    EXPECT_EQ(got, static_cast<uint32_t>(bits[i]) << 16);
  }
  EXPECT_EQ(read_tensor(*file, *file->find("b"), DType::bf16), source);
}

TEST(ReadTensor, RefusesOtherDTypesNamingBoth) {
  TempDir dir;
  const std::string path = dir.file("d.safetensors");
  write_safetensors(path, {{"ids", Tensor(DType::i64, {2})}, {"w", Tensor(DType::f32, {2})}});
  auto file = SafetensorsFile::open(path);
  try {
    read_tensor(*file, *file->find("ids"), DType::f32);
    FAIL();
  } catch (const LoadError& e) {
    EXPECT_EQ(e.code(), "E-LOAD-008");
    EXPECT_EQ(std::string(e.what()), path +
                                         ": tensor `ids` is stored as I64, which does not load into f32: only F32 "
                                         "and BF16 tensors load, into f32 or bf16");
  }
  try {
    read_tensor(*file, *file->find("w"), DType::f64);
    FAIL();
  } catch (const LoadError& e) {
    EXPECT_EQ(e.code(), "E-LOAD-008");
    EXPECT_EQ(std::string(e.what()),
              path + ": tensor `w` (F32) cannot load into f64: tensors load into f32 or bf16 only");
  }
}

TEST(ReadTensor, RefusesAnotherFilesEntry) {
  auto file = SafetensorsFile::from_bytes("mem", testing::as_vector(testing::safetensors_bytes(
                                                     R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 4)));
  TensorInfo foreign{"x", "F32", {4}, 0, 16};
  EXPECT_THROW(file->bytes(foreign), LoadError);
  EXPECT_THROW(read_tensor(*file, foreign, DType::f32), LoadError);
}

TEST(DTypes, Sizes) {
  EXPECT_EQ(safetensors_dtype_size("F32"), 4u);
  EXPECT_EQ(safetensors_dtype_size("BF16"), 2u);
  EXPECT_EQ(safetensors_dtype_size("BOOL"), 1u);
  EXPECT_EQ(safetensors_dtype_size("F8_E4M3"), 1u);
  EXPECT_EQ(safetensors_dtype_size("I64"), 8u);
  EXPECT_EQ(safetensors_dtype_size("f32"), 0u);
  for (DType dtype : graph::kAllDTypes) {
    EXPECT_EQ(safetensors_dtype_size(safetensors_dtype_name(dtype)), graph::dtype_size(dtype));
  }
}

// A file read by ranges (as from S3) reads its header, then only the tensors asked for,
// each once; it validates the header as a mapped file does.
TEST(FromRanges, ReadsTheHeaderThenOnlyTheTensorsAsked) {
  testing::TempDir dir;
  std::vector<std::pair<std::string, graph::Tensor>> tensors;
  for (const char* name : {"a", "b", "c"}) {
    tensors.emplace_back(name, graph::Tensor(graph::DType::f32, {100'000}, std::vector<uint8_t>(400'000, 7)));
  }
  write_safetensors(dir.file("w.safetensors"), tensors);
  const std::string bytes = testing::read_file(dir.file("w.safetensors"));
  std::vector<std::pair<uint64_t, uint64_t>> reads;
  auto file = SafetensorsFile::from_ranges("s3://b/w.safetensors", bytes.size(), [&](uint64_t at, uint64_t n) {
    reads.emplace_back(at, n);
    return bytes.substr(at, n);
  });
  ASSERT_EQ(reads.size(), 1u);  // the header, in the first read of 64 KiB
  EXPECT_EQ(reads[0], (std::pair<uint64_t, uint64_t>{0, 64 << 10}));
  EXPECT_EQ(file->tensors().size(), 3u);
  const TensorInfo* b = file->find("b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(read_tensor(*file, *b, graph::DType::f32).bytes().size(), 400'000u);
  file->bytes(*b);
  ASSERT_EQ(reads.size(), 2u);  // b alone, once
  EXPECT_EQ(reads[1], (std::pair<uint64_t, uint64_t>{file->data_offset() + b->begin, 400'000}));
}

TEST(FromRanges, TruncatedAndMalformedAreRefusedAsMappedOnesAre) {
  const std::string bytes = testing::safetensors_bytes(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 8);
  auto reader = [&](uint64_t at, uint64_t n) { return bytes.substr(at, n); };
  try {
    SafetensorsFile::from_ranges("s3://b/short.safetensors", bytes.size(), reader);
    FAIL();
  } catch (const LoadError& e) {
    EXPECT_EQ(e.code(), "E-LOAD-004") << e.what();
    EXPECT_EQ(std::string(e.what()).rfind("s3://b/short.safetensors: ", 0), 0u) << e.what();
  }
  try {
    SafetensorsFile::from_ranges("s3://b/cut.safetensors", 20, reader);  // cut inside the header
    FAIL();
  } catch (const LoadError& e) {
    EXPECT_EQ(e.code(), "E-LOAD-004") << e.what();
  }
}

}  // namespace
}  // namespace sx::io
