// SEXPGPU_CPU_PROFILE: where a cpu plan's time goes. With the variable set (and
// not "0"), each plan times its steps and, when it is destroyed, prints to stderr
// the mean time a run of each kind of step took: a primitive on its operands'
// shapes, or a fused chain by its members' primitives and last node, the
// costliest first.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sx::device::cpu {

class StepProfile {
 public:
  // Whether SEXPGPU_CPU_PROFILE asks for profiles.
  static bool wanted();

  // labels[i]: what the plan's step i is; steps with the same label add up.
  explicit StepProfile(std::vector<std::string> labels);
  ~StepProfile();
  StepProfile(const StepProfile&) = delete;
  StepProfile& operator=(const StepProfile&) = delete;

  void add(size_t step, double seconds) { seconds_[step] += seconds; }
  void count_run() { ++runs_; }

  // The table the destructor prints: empty before a run.
  std::string table() const;

 private:
  std::vector<std::string> labels_;
  std::vector<double> seconds_;
  int64_t runs_ = 0;
};

}  // namespace sx::device::cpu
