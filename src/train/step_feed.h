// Feeding a program: the inputs its caller gives it at each run (a batch's fields, each
// random stream's key at the step, the step's number), in the order the program reads
// them, copied into buffers of the device allocated once, when the feed is made. A run's
// training step and an :eval pass are fed so.
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

  // Puts on the device's stream the copies of the inputs of the step after `steps_done`
  // steps, with `batch`'s fields, and returns their buffers, in the order of the
  // program's fed_inputs(), for the program's run. The batch must stay as it is until
  // the run is done (until its numbers are read, say). Allocates no buffer.
  std::span<const device::Buffer* const> fill(const Batch& batch, int64_t steps_done);
  // The same for micro-batch `micro` of `micro_batches` a step: the program's rows of
  // `batch` from `first_row`, and the random keys of index steps_done * micro_batches +
  // micro + 1 (with one micro-batch a step, fill's keys).
  std::span<const device::Buffer* const> fill_micro(const Batch& batch, int64_t first_row, int64_t steps_done,
                                                    int64_t micro, int64_t micro_batches);

 private:
  device::Device& device_;
  const runtime::Program& program_;
  uint64_t seed_;
  std::string data_prefix_;
  std::vector<device::Buffer> buffers_;  // one per fed input
  std::vector<int64_t> scalars_;         // the host's copy of each key or step number
  std::vector<const device::Buffer*> pointers_;
};

}  // namespace sx::train
