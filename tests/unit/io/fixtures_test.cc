// The fixtures written by the Python safetensors package and PyTorch (make_fixtures.py):
// every tensor's header entry and every value, against the formulas that made them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "io/safetensors.h"
#include "io/tensor_source.h"

namespace sx::io {
namespace {

const std::string kDir = SEXPGPU_IO_FIXTURES;

template <class T>
std::vector<T> values_of(const SafetensorsFile& file, const std::string& name) {
  const TensorInfo* info = file.find(name);
  EXPECT_NE(info, nullptr) << name;
  if (!info) return {};
  auto bytes = file.bytes(*info);
  std::vector<T> out(bytes.size() / sizeof(T));
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

TEST(Fixtures, NumpyFileHeaderAndMetadata) {
  auto file = SafetensorsFile::open(kDir + "/numpy.safetensors");
  EXPECT_EQ(file->tensors().size(), 6u);
  EXPECT_EQ(file->metadata(), (std::map<std::string, std::string>{{"format", "np"}, {"made_by", "make_fixtures.py"}}));
  struct Want {
    const char* name;
    const char* dtype;
    std::vector<int64_t> shape;
  };
  for (const Want& want : {Want{"f32", "F32", {2, 3}}, Want{"f64", "F64", {4}}, Want{"i64", "I64", {5}},
                           Want{"bool", "BOOL", {5}}, Want{"scalar", "F32", {}}, Want{"empty", "F32", {0, 3}}}) {
    const TensorInfo* info = file->find(want.name);
    ASSERT_NE(info, nullptr) << want.name;
    EXPECT_EQ(info->dtype, want.dtype) << want.name;
    EXPECT_EQ(info->shape, want.shape) << want.name;
  }
  EXPECT_EQ(file->find("absent"), nullptr);
  EXPECT_EQ(file->data_offset() % 8, 0u);
}

TEST(Fixtures, NumpyValues) {
  auto file = SafetensorsFile::open(kDir + "/numpy.safetensors");
  auto f32 = values_of<float>(*file, "f32");
  ASSERT_EQ(f32.size(), 6u);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(f32[i], static_cast<float>(i) * 0.5f - 1.0f) << i;
  auto f64 = values_of<double>(*file, "f64");
  ASSERT_EQ(f64.size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(f64[i], i / 3.0) << i;
  auto i64 = values_of<int64_t>(*file, "i64");
  ASSERT_EQ(i64.size(), 5u);
  for (int64_t i = 0; i < 5; ++i) EXPECT_EQ(i64[i], i * 1000000007 - (int64_t{1} << 40)) << i;
  auto flags = values_of<uint8_t>(*file, "bool");
  ASSERT_EQ(flags.size(), 5u);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(flags[i], i % 2 == 0 ? 1 : 0) << i;
  auto scalar = values_of<float>(*file, "scalar");
  ASSERT_EQ(scalar.size(), 1u);
  EXPECT_EQ(scalar[0], 2.5f);
  EXPECT_TRUE(file->bytes(*file->find("empty")).empty());
}

TEST(Fixtures, NumpyReadTensor) {
  auto file = SafetensorsFile::open(kDir + "/numpy.safetensors");
  graph::Tensor t = read_tensor(*file, *file->find("f32"), graph::DType::f32);
  EXPECT_EQ(t.dtype(), graph::DType::f32);
  EXPECT_EQ(t.shape(), (graph::Shape{2, 3}));
  for (int i = 0; i < 6; ++i) EXPECT_EQ(t.data<float>()[i], static_cast<float>(i) * 0.5f - 1.0f);
  graph::Tensor scalar = read_tensor(*file, *file->find("scalar"), graph::DType::bf16);
  EXPECT_EQ(scalar.shape(), graph::Shape{});
  EXPECT_EQ(static_cast<float>(scalar.data<graph::Bf16>()[0]), 2.5f);
  graph::Tensor empty = read_tensor(*file, *file->find("empty"), graph::DType::bf16);
  EXPECT_EQ(empty.shape(), (graph::Shape{0, 3}));
  EXPECT_EQ(empty.numel(), 0);
  for (const char* name : {"f64", "i64", "bool"}) {
    try {
      read_tensor(*file, *file->find(name), graph::DType::f32);
      ADD_FAILURE() << name << " loaded";
    } catch (const LoadError& e) {
      EXPECT_EQ(e.code(), "E-LOAD-008");
      EXPECT_NE(std::string(e.what()).find(std::string("tensor `") + name + "` is stored as"), std::string::npos)
          << e.what();
    }
  }
}

TEST(Fixtures, TorchBf16RoundedLikeOurs) {
  auto file = SafetensorsFile::open(kDir + "/torch.safetensors");
  EXPECT_EQ(file->metadata().at("format"), "pt");
  const TensorInfo* info = file->find("bf16");
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->dtype, "BF16");
  EXPECT_EQ(info->shape, (std::vector<int64_t>{3, 4}));
  auto bits = values_of<uint16_t>(*file, "bf16");
  ASSERT_EQ(bits.size(), 12u);
  for (int i = 0; i < 12; ++i) {
    float value = (static_cast<float>(i) + 1.0f) / 3.0f;
    EXPECT_EQ(bits[i], graph::Bf16(value).bits) << i;  // PyTorch rounds to nearest even, as we do
  }
  // As bf16: the same bits, copied. As f32: exact widening.
  graph::Tensor as_bf16 = read_tensor(*file, *info, graph::DType::bf16);
  graph::Tensor as_f32 = read_tensor(*file, *info, graph::DType::f32);
  for (int i = 0; i < 12; ++i) {
    EXPECT_EQ(as_bf16.data<graph::Bf16>()[i].bits, bits[i]);
    uint32_t wide;
    std::memcpy(&wide, &as_f32.data<float>()[i], 4);
    EXPECT_EQ(wide, static_cast<uint32_t>(bits[i]) << 16);
  }
  auto f32 = values_of<float>(*file, "f32");
  ASSERT_EQ(f32.size(), 8u);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(f32[i], static_cast<float>(i) * 1.5f);
  auto i64 = values_of<int64_t>(*file, "i64");
  EXPECT_EQ(i64, (std::vector<int64_t>{0, 1, 2}));
}

TEST(Fixtures, ShardedCheckpointByIndex) {
  const std::string index = kDir + "/sharded/model.safetensors.index.json";
  auto source = TensorSource::open(index);
  EXPECT_TRUE(source->is_index());
  EXPECT_EQ(source->files(), (std::vector<std::string>{index, kDir + "/sharded/model-00001-of-00002.safetensors",
                                                       kDir + "/sharded/model-00002-of-00002.safetensors"}));
  EXPECT_EQ(source->tensor_names().size(), 4u);
  struct Want {
    const char* name;
    const char* shard;
    std::vector<int64_t> shape;
    const char* dtype;
    int k;
  };
  for (const Want& want :
       {Want{"model.embed_tokens.weight", "model-00001-of-00002.safetensors", {4, 2}, "F32", 0},
        Want{"model.layers.0.self_attn.q_proj.weight", "model-00001-of-00002.safetensors", {2, 2}, "BF16", 1},
        Want{"model.layers.1.self_attn.q_proj.weight", "model-00002-of-00002.safetensors", {2, 2}, "BF16", 2},
        Want{"lm_head.weight", "model-00002-of-00002.safetensors", {4, 2}, "F32", 3}}) {
    auto found = source->find(want.name);
    ASSERT_TRUE(found) << want.name;
    auto& [file, info] = *found;
    EXPECT_EQ(file->path(), kDir + "/sharded/" + want.shard);
    EXPECT_EQ(info.shape, want.shape);
    EXPECT_EQ(info.dtype, want.dtype);
    graph::Tensor t = read_tensor(*file, info, graph::DType::f32);
    for (int64_t i = 0; i < t.numel(); ++i) {
      EXPECT_EQ(t.data<float>()[i], static_cast<float>(i) * 0.25f + static_cast<float>(want.k)) << want.name << i;
    }
  }
  EXPECT_FALSE(source->find("model.layers.2.self_attn.q_proj.weight"));
  // The same shard is opened once.
  auto a = source->find("model.embed_tokens.weight");
  auto b = source->find("model.layers.0.self_attn.q_proj.weight");
  EXPECT_EQ(a->first.get(), b->first.get());
}

TEST(Fixtures, SingleFileSource) {
  auto source = TensorSource::open(kDir + "/torch.safetensors");
  EXPECT_FALSE(source->is_index());
  EXPECT_EQ(source->files(), std::vector<std::string>{kDir + "/torch.safetensors"});
  EXPECT_EQ(source->tensor_names(), (std::vector<std::string>{"bf16", "f32", "i64"}));
  auto found = source->find("f32");
  ASSERT_TRUE(found);
  EXPECT_EQ(found->second.shape, (std::vector<int64_t>{2, 2, 2}));
  EXPECT_FALSE(source->find("nope"));
}

}  // namespace
}  // namespace sx::io
