// Running calls on the device, together when they wait for it.
//
// One program per batch size 1..max (the model under graph::vmap over its data inputs; the
// weights are not batched), all compiled at start and all reading one runtime::Store that
// holds the weights, uploaded once. One thread owns the device: it takes every call that
// is waiting, up to max, runs them as one batch, and hands each call its own row of the
// outputs. So calls that arrive while the device is busy run together when it is free,
// and a call that arrives alone runs at once, waiting for no other. Whether a call's
// outputs are the same bits in any batch is the kernels' promise (DESIGN section 6); the
// tests hold them to it.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
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
  ~Batcher();

  // Runs one call (a body of layout().call_bytes() bytes whose values were checked) and
  // returns its answer's body. Blocks until it is answered; safe from any thread.
  std::string call(std::string body);
  // Answers every call already waiting, then stops the device thread; a call after it is
  // answered with an error.
  void stop();

  const CallLayout& layout() const { return layout_; }
  // The calls run so far, the device runs they took, and the calls waiting for the device.
  uint64_t calls() const;
  uint64_t runs() const;
  size_t waiting() const;

 private:
  struct Pending {
    std::string body;
    std::promise<std::string> answer;
  };
  void loop();
  // The answers of the calls, run as one batch.
  std::vector<std::string> run(const std::vector<std::unique_ptr<Pending>>& batch);

  device::Device& device_;
  CallLayout layout_;
  runtime::Store store_;
  std::vector<std::unique_ptr<runtime::Program>> programs_;
  std::vector<size_t> fed_input_;  // for each fed input of a program, in its order: the call's input index

  mutable std::mutex mutex_;
  std::condition_variable waiting_;
  std::deque<std::unique_ptr<Pending>> queue_;
  bool stopping_ = false;
  uint64_t calls_ = 0, runs_ = 0;
  std::thread device_thread_;
};

}  // namespace sx::serve
