// The sweep: every primitive in the registry, in every dtype it accepts, on
// its sample record's samples (samples.h) with random inputs, run on each device
// and compared with the reference device: bit for bit for integers, bools and
// the records marked exact (data movement), within tolerance(dtype) for float
// arithmetic (matmul and sums also within sum_bound of the terms they add up).
// A primitive without a record fails, so a new one cannot skip the sweep. On
// cpu, each case also runs on 1 thread and on all cores, and twice, and every
// run must give the same bits. Under an emulated processor (scripts/test sets
// SEXPGPU_TEST_EMULATED=1) each case runs once on each device: the emulation looks for an
// instruction the processor lacks in the kernels cpuid picks, and the thread-count and
// run-to-run checks, the same code on every processor, run natively.
#include <cstdlib>

#include "graph/primitive.h"
#include "samples/samples.h"
#include "util.h"

namespace sx::device::testing {
namespace {

using graph::Builder;
using graph::NodeId;

std::vector<std::string> primitive_names() {
  std::vector<std::string> names;
  for (const graph::Primitive* p : graph::all_primitives()) names.emplace_back(p->name);
  return names;
}

// The devices compared with the reference: every one this build has.
std::vector<std::string> devices_under_test() {
  std::vector<std::string> names;
  for (const std::string& name : available_devices()) {
    if (name != "reference") names.push_back(name);
  }
  return names;
}

class Sweep : public ::testing::TestWithParam<std::string> {};

TEST_P(Sweep, AgreesWithTheReference) {
  const graph::Primitive& prim = graph::primitive(GetParam());
  const samples::Record* record = samples::find_record(prim.id);
  ASSERT_NE(record, nullptr) << "primitive '" << prim.name << "' has no sample record: add one in tests/unit/samples/";
  std::mt19937 rng(1234);
  const bool emulated = std::getenv("SEXPGPU_TEST_EMULATED") != nullptr;
  int ran = 0;
  for (const samples::Sample& sample : record->samples) {
    for (DType dtype : samples::kEveryDType) {
      SCOPED_TRACE(fmt::format("{} {}", sample.label, graph::dtype_name(dtype)));
      std::optional<samples::Instance> c = samples::instantiate(sample, dtype, rng);
      // The op must really emit the primitive under test.
      if (!c || !samples::emits(c->graph, prim.id)) continue;
      ++ran;
      std::vector<Tensor> expected = run_on("reference", c->graph, c->inputs);
      for (const std::string& device : devices_under_test()) {
        SCOPED_TRACE(device);
        std::vector<Tensor> all_cores = run_on(device, c->graph, c->inputs);
        ASSERT_EQ(all_cores.size(), expected.size());
        EXPECT_EQ(compare(all_cores[0], expected[0], record->exact, sample.summed), "");
        if (device == "cpu" && !emulated) {
          auto on = make_device(device, DeviceOptions{.cpu_cores = 1});
          auto plan = on->compile(c->graph);
          Tensor first = plan->run_host(c->inputs)[0], second = plan->run_host(c->inputs)[0];
          EXPECT_TRUE(same_bits(first, second)) << "two runs differ";
          EXPECT_TRUE(same_bits(first, all_cores[0])) << "1 thread and all cores differ";
          EXPECT_TRUE(same_bits(run_on(device, c->graph, c->inputs, 2)[0], first)) << "1 and 2 threads differ";
        }
      }
    }
  }
  EXPECT_GT(ran, 0) << "no sample of '" << prim.name << "' emits it in any dtype";
  RecordProperty("cases", ran);
}

INSTANTIATE_TEST_SUITE_P(EveryPrimitive, Sweep, ::testing::ValuesIn(primitive_names()),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

// The bound the sweep's sums are held to is not vacuous: it refuses an f32 sum that lost
// one term, and a product of zeros, where the old tolerance (2e-6 times the length,
// relative) accepted both.
TEST(SumBound, RefusesALostTermAndAZeroProduct) {
  std::mt19937 rng(3);
  for (DType t : {DType::f32, DType::bf16}) {
    SCOPED_TRACE(graph::dtype_name(t));
    Graph sum;
    Builder b(sum);
    b.output("y", b.sum(b.input("x", {300, 400}, t), {0, 1}));
    Tensor x = random_tensor(t, {300, 400}, rng);
    Tensor want = run_on("reference", sum, {x})[0];
    EXPECT_EQ(compare(run_on("cpu", sum, {x})[0], want, false, 120000), "");
    // A term of about the typical size, 0.5 or more: the largest of the first ten. (A
    // bf16 result of some hundreds has an ulp of 2, which hides such a term.)
    int64_t term = 0;
    for (int64_t i = 1; i < 10; ++i) term = std::fabs(x.value(i)) > std::fabs(x.value(term)) ? i : term;
    ASSERT_GE(std::fabs(x.value(term)), 0.5);
    x.set_value(term, 0);
    if (t == DType::f32) {
      EXPECT_NE(compare(run_on("reference", sum, {x})[0], want, false, 120000), "");
    }

    Graph product;
    Builder p(product);
    NodeId a = p.input("a", {4, 256}, t);
    NodeId w = p.input("w", {256, 4}, t);
    p.output("y", p.matmul(a, w));
    std::vector<Tensor> ins{random_tensor(t, {4, 256}, rng), random_tensor(t, {256, 4}, rng)};
    EXPECT_NE(compare(Tensor(t, {4, 4}), run_on("reference", product, ins)[0], false, 256), "");
  }
}

}  // namespace
}  // namespace sx::device::testing
