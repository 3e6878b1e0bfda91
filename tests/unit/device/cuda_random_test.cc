// The cuda device's random kernels without a GPU: random_math.h's Philox and draws, one
// element at a time as each GPU thread computes it, give the reference's bits, and
// NVRTC compiles the generated kernels.
#include <gtest/gtest.h>

#include "device/cuda/codegen.h"
#include "device/cuda/nvrtc.h"
#include "device/cuda/random_math.h"
#include "formula_cases.h"
#include "graph/philox.h"
#include "util.h"

namespace sx::device::testing {
namespace {

TEST(CudaRandom, PhiloxGivesTheReferenceBlocks) {
  for (int64_t key : {int64_t{0}, int64_t{42}, int64_t{-7}, int64_t{0x123456789abcdef}}) {
    for (int64_t i : {int64_t{0}, int64_t{1}, int64_t{1000003}, int64_t{0x7fffffffffff}}) {
      auto bits = static_cast<uint64_t>(key), position = static_cast<uint64_t>(i);
      graph::PhiloxCounter expected =
          graph::philox4x32_10({static_cast<uint32_t>(position), static_cast<uint32_t>(position >> 32), 0, 0},
                               {static_cast<uint32_t>(bits), static_cast<uint32_t>(bits >> 32)});
      cuda::PhiloxWords actual = cuda::philox_words(i, key);
      for (int w = 0; w < 4; ++w) EXPECT_EQ(actual.w[w], expected[static_cast<size_t>(w)]) << key << " " << i;
    }
  }
}

// The node's draws on the host, by random_math.h's functions.
Tensor host_draws(const graph::Node& node, int64_t key) {
  Tensor out(node.dtype, node.shape);
  for (int64_t i = 0; i < out.numel(); ++i) {
    if (node.op() == graph::PrimId::random_bernoulli) {
      out.data<bool>()[i] = cuda::random_bernoulli_element(key, i, node.attrs.get_double("p"));
    } else if (node.dtype == DType::bf16) {
      out.data<graph::Bf16>()[i] = node.op() == graph::PrimId::random_normal
                                       ? cuda::random_normal_element<graph::Bf16>(key, i)
                                       : cuda::random_uniform_element<graph::Bf16>(key, i);
    } else if (node.dtype == DType::f32) {
      out.data<float>()[i] = node.op() == graph::PrimId::random_normal ? cuda::random_normal_element<float>(key, i)
                                                                       : cuda::random_uniform_element<float>(key, i);
    } else {
      out.data<double>()[i] = node.op() == graph::PrimId::random_normal ? cuda::random_normal_element<double>(key, i)
                                                                        : cuda::random_uniform_element<double>(key, i);
    }
  }
  return out;
}

TEST(CudaRandom, DrawsGiveTheReferenceBitsOnTheHost) {
  for (DType key_dtype : {DType::i64, DType::i32}) {
    Graph g;
    graph::Builder b(g);
    graph::NodeId key = b.input("key", {}, key_dtype);
    std::vector<graph::NodeId> draws;
    for (const char* name : {"random_normal", "random_uniform"}) {
      for (DType dtype : {DType::f32, DType::f64, DType::bf16}) {
        draws.push_back(b.op(name, {key}, {{"shape", std::vector<int64_t>{3, 100}}, {"dtype", dtype}}));
      }
    }
    draws.push_back(b.op("random_bernoulli", {key}, {{"shape", std::vector<int64_t>{300}}, {"p", 0.3}}));
    for (graph::NodeId draw : draws) b.output(fmt::format("y{}", draw), draw);
    Tensor key_value = Tensor::scalar(key_dtype, -12345);
    std::vector<Tensor> expected = run_on("reference", g, {key_value});
    for (size_t k = 0; k < draws.size(); ++k) {
      const graph::Node& node = g.node(draws[k]);
      SCOPED_TRACE(fmt::format("{} of {} by a key of {}", node.op_name(), graph::dtype_name(node.dtype),
                               graph::dtype_name(key_dtype)));
      EXPECT_TRUE(cuda::randomizable(g, draws[k]));
      EXPECT_EQ(compare_bits(host_draws(node, -12345), expected[k]), "");
    }
  }
}

TEST(CudaRandom, KernelsCompileForSm80AndSm90a) {
  Graph g;
  graph::Builder b(g);
  graph::NodeId key = b.input("key", {}, DType::i64);
  std::string source;
  for (const char* name : {"random_normal", "random_uniform"}) {
    for (DType dtype : {DType::f32, DType::f64, DType::bf16}) {
      graph::NodeId draw = b.op(name, {key}, {{"shape", std::vector<int64_t>{8}}, {"dtype", dtype}});
      source += cuda::generate_random_kernel(g, draw).source;
    }
  }
  graph::NodeId coin = b.op("random_bernoulli", {key}, {{"shape", std::vector<int64_t>{8}}, {"p", 0.5}});
  source += cuda::generate_random_kernel(g, coin).source;
  EXPECT_NE(source.find("__longlong_as_double(4602678819172646912ll)"), std::string::npos) << source;  // 0.5
  for (const char* architecture : {"sm_80", "sm_90a"}) {
    EXPECT_GT(cuda::compile_cubin(source, architecture).size(), 1000u) << architecture;
  }
}

}  // namespace
}  // namespace sx::device::testing
