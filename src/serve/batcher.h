// Running calls on the device, together.
//
// One program per power of two below max, and one of max (the model under graph::vmap over
// its data inputs; the weights are not batched), all compiled at start and all reading one
// runtime::Store that holds the weights, uploaded once: so memory and start-up grow with
// max, not with its square. The server (server.h) hands it the calls waiting for the
// device, up to max, as one run. It runs in the program of the fewest rows that holds
// them, the rows past the calls copies of the first call (values the model takes, so that
// they fail nothing), and each call gets its own row of the outputs.
// Whether a call's outputs are the same bits in any batch is the kernels' promise
// (docs/performance.md); the tests hold them to it.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "device/device.h"
#include "runtime/program.h"
#include "serve/model.h"
#include "serve/protocol.h"

namespace sx::serve {

// The most calls --batch may ask to run together.
inline constexpr int kMaxBatch = 256;

class Batcher {
 public:
  // Compiles the programs and uploads the weights; device::DeviceError when the device
  // cannot. The device must outlive the batcher.
  Batcher(device::Device& device, const ServedModel& model, int max_batch);
  Batcher(const Batcher&) = delete;
  Batcher& operator=(const Batcher&) = delete;

  // The answers' bodies of 1..max_batch() calls (bodies of layout().call_bytes() bytes
  // whose values were checked), run as one batch, in their order. An index outside its
  // axis is the error answer of the call it is in, and only its: the others get the
  // answers they get in any batch. Any other failure of the device is every call's error
  // answer. One thread at a time: the one that owns the device.
  std::vector<std::string> run(std::span<const std::string> calls);

  int max_batch() const { return programs_.back().batch; }
  const CallLayout& layout() const { return layout_; }
  // The calls run so far, and the device runs they took.
  uint64_t calls() const { return calls_; }
  uint64_t runs() const { return runs_; }

 private:
  struct SizedProgram {
    int batch;  // the calls it runs together
    std::unique_ptr<runtime::Program> program;
  };
  // The program of the fewest rows that holds `calls` calls.
  const SizedProgram& program_for(size_t calls) const;
  // run's answers, counting the device's runs but not the calls.
  std::vector<std::string> answer(std::span<const std::string> calls);
  // When a batch's run stops at an index outside its axis: each call run alone in the
  // batch-1 program, so that the error is the answer of the calls it is in.
  std::vector<std::string> answer_one_at_a_time(std::span<const std::string> calls);

  device::Device& device_;
  CallLayout layout_;
  runtime::Store store_;
  std::vector<SizedProgram> programs_;  // their batches rising
  std::vector<size_t> fed_input_;       // for each fed input of a program, in its order: the call's input index
  uint64_t calls_ = 0, runs_ = 0;
};

}  // namespace sx::serve
