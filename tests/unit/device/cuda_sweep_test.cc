// The sweep on the cuda device (sweep_test.cc's, over the same sample records): every
// primitive, in every dtype its samples take, run on the GPU and compared with the
// reference. Where the cuda device promises the reference's bits (docs/devices.md), bit
// for bit; attention (its online softmax) within the bound of its rounding
// (cuda_attention_bound.h); matmul (cuBLASLt), attention's gradient (its decomposition's
// products), pow, and the f64 functions that are libdevice's, within the sweep's tolerance. A case the device has no
// kernel for must be refused when it is compiled, with E-DEVICE-007 (never run elsewhere in silence): the test lists
// those fallbacks. Without a GPU it skips, saying why.
#include <set>
#include <string_view>

#include "cuda_attention_bound.h"
#include "device/cuda/cuda_device.h"
#include "graph/primitive.h"
#include "samples/samples.h"
#include "util.h"

namespace sx::device::testing {
namespace {

// The cases whose last bits may differ from the reference's: the products and attention
// (and its gradient, a sample of composite_gradient labelled after it) add in other orders,
// and pow and the f64 functions (alone or inside a composite) are libdevice's where the
// reference calls the C library's.
bool within_tolerance_only(const graph::Primitive& prim, const samples::Sample& sample, DType dtype) {
  if (sample.label.starts_with("attention")) return true;
  static const std::set<std::string_view, std::less<>> any_dtype{"matmul", "attention", "pow"};
  static const std::set<std::string_view, std::less<>> f64_functions{
      "exp",         "log",        "tanh",     "erf",  "logistic",           "sin",           "cos",          "softmax",
      "log_softmax", "layer_norm", "rms_norm", "gelu", "composite_gradient", "cross_entropy", "random_normal"};
  return any_dtype.contains(prim.name) || (dtype == DType::f64 && f64_functions.contains(prim.name));
}

TEST(CudaSweep, EveryPrimitiveAgreesWithTheReferenceOrIsARefusedFallback) {
  if (std::string reason = gpu_unusable_reason(); !reason.empty()) GTEST_SKIP() << reason;
  std::unique_ptr<Device> cuda = make_device("cuda");
  std::mt19937 rng(1234);
  int ran = 0;
  std::vector<std::string> fallbacks;
  for (const graph::Primitive* prim : graph::all_primitives()) {
    const samples::Record* record = samples::find_record(prim->id);
    ASSERT_NE(record, nullptr) << prim->name << " has no sample record";
    for (const samples::Sample& sample : record->samples) {
      for (DType dtype : samples::kEveryDType) {
        std::optional<samples::Instance> c = samples::instantiate(sample, dtype, rng);
        if (!c || !samples::emits(c->graph, prim->id)) continue;
        std::string label = fmt::format("{} {} {}", prim->name, sample.label, graph::dtype_name(dtype));
        SCOPED_TRACE(label);
        std::unique_ptr<Plan> plan;
        try {
          plan = cuda->compile(c->graph);
        } catch (const DeviceError& e) {
          EXPECT_STREQ(e.code(), "E-DEVICE-007") << e.what();
          fallbacks.push_back(label);
          continue;
        }
        ++ran;
        std::vector<Tensor> expected = run_on("reference", c->graph, c->inputs);
        std::vector<Tensor> got = plan->run_host(c->inputs);
        ASSERT_EQ(got.size(), expected.size());
        if (prim->id == graph::PrimId::attention) {
          EXPECT_EQ(compare_attention(c->graph, c->inputs, got[0], expected[0]), "");
          continue;
        }
        bool bits = record->exact || !within_tolerance_only(*prim, sample, dtype);
        for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(compare(got[i], expected[i], bits, sample.summed), "");
      }
    }
    // A line as each primitive ends: the log of a run cut short says how far it went.
    std::cout << "cuda sweep: " << prim->name << " done; " << ran << " cases ran, " << fallbacks.size()
              << " refused so far\n"
              << std::flush;
  }
  EXPECT_GT(ran, 0);
  std::string listed = fmt::format("{}", fmt::join(fallbacks, "; "));
  std::cout << "cuda ran " << ran << " cases; refused (E-DEVICE-007), " << fallbacks.size() << ": " << listed << "\n";
  RecordProperty("cases", ran);
  RecordProperty("fallbacks", listed);
}

}  // namespace
}  // namespace sx::device::testing
