// SEXPGPU_CPU_PROFILE (device/cpu/profile.h): a plan made with it set prints, when it
// goes, the mean time a run of each kind of step took, fused chains by their members
// and a product with its epilogue by both; without it, nothing.
#include <cstdlib>

#include "util.h"

namespace sx::device::testing {
namespace {

std::string stderr_of_two_runs(const char* setting) {
  if (setting != nullptr) setenv("SEXPGPU_CPU_PROFILE", setting, 1);
  else unsetenv("SEXPGPU_CPU_PROFILE");
  std::mt19937 rng(13);
  std::vector<Tensor> inputs{random_tensor(DType::f32, {4, 8}, rng), random_tensor(DType::f32, {8, 3}, rng)};
  ::testing::internal::CaptureStderr();
  {
    auto device = make_device("cpu", DeviceOptions{.cpu_cores = 1});
    auto plan = device->compile(product_then_chain());
    plan->run_host(inputs);
    plan->run_host(inputs);
  }
  unsetenv("SEXPGPU_CPU_PROFILE");
  return ::testing::internal::GetCapturedStderr();
}

TEST(CpuProfile, NamesEachKindOfStepWhenAskedFor) {
  std::string printed = stderr_of_two_runs("1");
  EXPECT_NE(printed.find("cpu plan profile: 2 runs"), std::string::npos) << printed;
  EXPECT_NE(printed.find("matmul of f32[4, 8] and f32[8, 3] with fused 3 nodes (mul neg exp) ending in exp of "
                         "f32[4, 3], reading 1 and writing 1 x1"),
            std::string::npos)
      << printed;
}

TEST(CpuProfile, PrintsNothingOtherwise) {
  EXPECT_EQ(stderr_of_two_runs(nullptr), "");
  EXPECT_EQ(stderr_of_two_runs("0"), "");
}

}  // namespace
}  // namespace sx::device::testing
