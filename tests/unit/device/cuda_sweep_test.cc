// The sweep on the cuda device (sweep_test.cc's, over the same sample records): every
// primitive, in every dtype its samples take, run on the GPU and compared with the
// reference. Where the cuda device promises the reference's bits (docs/devices.md), bit
// for bit; attention (its online softmax) within the bound of its rounding
// (cuda_attention_bound.h); matmul (cuBLASLt), attention's gradient (its decomposition's
// products), pow, and the f64 functions that are libdevice's, within the sweep's tolerance. A case the device has no
// kernel for must be refused when it is compiled, with E-DEVICE-007 (never run elsewhere in silence): the test lists
// those fallbacks. Without a GPU it skips, saying why.
#include <chrono>
#include <set>
#include <string_view>

#include "cuda_attention_bound.h"
#include "device/cpu/kernels.h"
#include "device/cpu/thread_pool.h"
#include "device/cuda/cuda_device.h"
#include "device/cuda/nvrtc.h"
#include "device/cuda/program.h"
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

// One case of the sweep: a primitive's sample in one dtype, with its graph and inputs.
struct SweepCase {
  const graph::Primitive* prim;
  const samples::Record* record;
  const samples::Sample* sample;
  DType dtype;
  samples::Instance instance;
};

// Every case the cpu sweep runs, with the same inputs (its seed, in its order).
std::vector<SweepCase> sweep_cases() {
  std::vector<SweepCase> cases;
  std::mt19937 rng(1234);
  for (const graph::Primitive* prim : graph::all_primitives()) {
    const samples::Record* record = samples::find_record(prim->id);
    if (record == nullptr) {
      ADD_FAILURE() << prim->name << " has no sample record";
      continue;
    }
    for (const samples::Sample& sample : record->samples) {
      for (DType dtype : samples::kEveryDType) {
        std::optional<samples::Instance> c = samples::instantiate(sample, dtype, rng);
        if (c && samples::emits(c->graph, prim->id)) cases.push_back({prim, record, &sample, dtype, std::move(*c)});
      }
    }
  }
  return cases;
}

// NVRTC compiles the cases' programs first, on every core, into the kernel cache (some
// 900 programs of a few tenths of a second each: minutes on one core), so that the sweep
// finds them there. A program that does not compile is left for the sweep to report.
void compile_kernels(const std::vector<SweepCase>& cases, const std::string& architecture) {
  std::set<std::string> unique;
  for (const SweepCase& c : cases) {
    try {
      graph::Graph expanded = cuda::with_composites_expanded(c.instance.graph);
      if (!cuda::missing_kernels(expanded).empty()) continue;
      cuda::Program program = cuda::generated_kernels(expanded);
      if (!program.kernel_names.empty()) unique.insert(std::move(program.source));
    } catch (const std::exception&) {
      // The sweep compiles the case itself and reports why it cannot.
    }
  }
  std::vector<std::string> sources(unique.begin(), unique.end());
  auto start = std::chrono::steady_clock::now();
  cpu::parallel_for(static_cast<int64_t>(sources.size()), cpu::available_cores(), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      try {
        cuda::cached_cubin(sources[static_cast<size_t>(i)], architecture);
      } catch (const DeviceError&) {
        // As above: the sweep reports it.
      }
    }
  });
  std::cout << "cuda sweep: " << sources.size() << " programs compiled in "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() << " s on "
            << cpu::available_cores() << " cores\n"
            << std::flush;
}

TEST(CudaSweep, EveryPrimitiveAgreesWithTheReferenceOrIsARefusedFallback) {
  if (std::string reason = gpu_unusable_reason(); !reason.empty()) GTEST_SKIP() << reason;
  std::unique_ptr<Device> cuda = make_device("cuda");
  std::vector<SweepCase> cases = sweep_cases();
  compile_kernels(cases, dynamic_cast<CudaDevice&>(*cuda).architecture());
  int ran = 0;
  std::vector<std::string> fallbacks;
  for (size_t k = 0; k < cases.size(); ++k) {
    const SweepCase& c = cases[k];
    const samples::Instance& instance = c.instance;
    std::string label = fmt::format("{} {} {}", c.prim->name, c.sample->label, graph::dtype_name(c.dtype));
    SCOPED_TRACE(label);
    std::unique_ptr<Plan> plan;
    try {
      plan = cuda->compile(instance.graph);
    } catch (const DeviceError& e) {
      EXPECT_STREQ(e.code(), "E-DEVICE-007") << e.what();
      fallbacks.push_back(label);
      continue;
    }
    ++ran;
    std::vector<Tensor> expected = run_on("reference", instance.graph, instance.inputs);
    std::vector<Tensor> got = plan->run_host(instance.inputs);
    ASSERT_EQ(got.size(), expected.size());
    if (c.prim->id == graph::PrimId::attention) {
      EXPECT_EQ(compare_attention(instance.graph, instance.inputs, got[0], expected[0]), "");
    } else {
      bool bits = c.record->exact || !within_tolerance_only(*c.prim, *c.sample, c.dtype);
      for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(compare(got[i], expected[i], bits, c.sample->summed), "");
      }
    }
    // A line as each primitive ends: the log of a run cut short says how far it went.
    if (k + 1 == cases.size() || cases[k + 1].prim != c.prim) {
      std::cout << "cuda sweep: " << c.prim->name << " done; " << ran << " cases ran, " << fallbacks.size()
                << " refused so far\n"
                << std::flush;
    }
  }
  EXPECT_GT(ran, 0);
  std::string listed = fmt::format("{}", fmt::join(fallbacks, "; "));
  std::cout << "cuda ran " << ran << " cases; refused (E-DEVICE-007), " << fallbacks.size() << ": " << listed << "\n";
  RecordProperty("cases", ran);
  RecordProperty("fallbacks", listed);
}

}  // namespace
}  // namespace sx::device::testing
