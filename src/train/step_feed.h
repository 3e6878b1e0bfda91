// Feeding a program: the inputs its caller gives it at each run (a batch's fields, each
// random stream's key at the step, the step's number), in the order the program reads
// them. A run's training step and an :eval pass are fed so.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "device/device.h"
#include "runtime/program.h"
#include "train/loaders.h"

namespace sx::train {

class StepFeed {
 public:
  // For `program`'s fed inputs: its data inputs are named `data_prefix` and a field's
  // name; its random keys are drawn from `seed`. The program and the device must outlive
  // the feed.
  StepFeed(device::Device& device, const runtime::Program& program, uint64_t seed, std::string_view data_prefix);

  // The inputs of the step after `steps_done` steps, with `batch`'s fields: one buffer
  // each, in the order of the program's fed_inputs(), valid until the next fill.
  std::span<const device::Buffer* const> fill(const Batch& batch, int64_t steps_done);

 private:
  device::Device& device_;
  const runtime::Program& program_;
  uint64_t seed_;
  std::string data_prefix_;
  std::vector<device::Buffer> buffers_;  // one per fed input
  std::vector<const device::Buffer*> pointers_;
};

}  // namespace sx::train
