// The device factory's refusals and the reference plan's input checks.
#include "device/device.h"

#include "test_util.h"

namespace sx::device {
namespace {

std::string error_of(std::string_view name) {
  try {
    make_device(name);
  } catch (const DeviceError& e) {
    return e.what();
  }
  return "no error";
}

TEST(Devices, ReferenceIsBuilt) {
  EXPECT_EQ(make_device("reference")->name(), "reference");
  EXPECT_EQ(make_device("cpu")->name(), "cpu");
  EXPECT_EQ(available_devices(), (std::vector<std::string>{"reference", "cpu"}));
}

TEST(Devices, DevicesNotBuiltAreRefusedWithTheFix) {
  EXPECT_EQ(error_of("metal"), "SexpGPU has no metal device: tensors run on reference, cpu or cuda; use --device cpu");
  EXPECT_EQ(error_of("tpu"), "unknown device 'tpu': the devices are reference, cpu and cuda");
  EXPECT_EQ(
      error_of(std::string(100'000, 't')),
      "unknown device '" + std::string(80, 't') + "... (100000 characters)': the devices are reference, cpu and cuda");
}

// Built without the CUDA toolkit, cuda is refused with its own code; built with it, it is
// made where a GPU answers, else refused with the runtime's reason (cuda_tests says more).
TEST(Devices, CudaIsRefusedSayingWhetherTheBuildOrTheGpuLacksIt) {
  try {
    make_device("cuda");
    EXPECT_TRUE(SEXPGPU_WITH_CUDA) << "made in a build without the CUDA toolkit";
  } catch (const DeviceError& e) {
    if (SEXPGPU_WITH_CUDA) {
      EXPECT_STREQ(e.code(), "E-DEVICE-006");
      EXPECT_TRUE(std::string_view(e.what()).starts_with("the cuda device cannot run here: ")) << e.what();
    } else {
      EXPECT_STREQ(e.code(), "E-DEVICE-005");
      EXPECT_STREQ(e.what(),
                   "the cuda device is not in this build: it was built without the CUDA toolkit; rebuild with one "
                   "(docs/devices.md), or use --device cpu");
    }
  }
}

TEST(Devices, PlanChecksItsInputs) {
  graph::Graph g;
  graph::Builder b(g);
  b.output("y", b.neg(b.input("x", {2}, graph::DType::f32)));
  auto on = make_device("reference");
  auto plan = on->compile(g);
  std::vector<graph::Tensor> wrong{graph::Tensor(graph::DType::f32, {3})};
  try {
    plan->run_host(wrong);
    FAIL() << "no error";
  } catch (const DeviceError& e) {
    EXPECT_STREQ(e.what(), "run: input 'x' must be f32[2], got f32[3]");
  }
  EXPECT_THROW(plan->run_host({}), DeviceError);
  std::vector<graph::Tensor> right{graph::testing::tensor(graph::DType::f32, {2}, {1, -2})};
  graph::testing::expect_tensor(plan->run_host(right)[0], graph::DType::f32, {2}, {-1, 2});
}

}  // namespace
}  // namespace sx::device
