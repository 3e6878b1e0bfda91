// A served model in the caller's process: opened as `sexpgpu serve` opens its operand, and
// run by any number of threads at once, their calls batched as serve batches its clients'.
//
// The C API (include/sexpgpu.h, c_api.cc) is this class behind opaque handles; `sexpgpu
// serve` opens its model through it too and hands batcher() to its socket server, so
// the socket and the library run every call through the one Batcher::run.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "device/device.h"
#include "serve/batcher.h"
#include "serve/model.h"
#include "serve/protocol.h"

namespace sx::library {

// serve's flags: the ones that shape the model, --batch, and the device.
struct ModelOptions {
  serve::ServeOptions shape = {};  // --output, --at, --precision, --trained
  int batch = 1;                   // --batch
  // Makes the device (--device, --cpu-cores), once the model is read: a model's faults
  // are reported before the device's, as serve reports them.
  std::function<std::unique_ptr<device::Device>()> make_device = [] { return device::make_device("cpu"); };
};

class Model {
 public:
  // The model at `source` (serve::resolve_operand's), its weights on the device and its
  // programs compiled. Throws what serve's opening throws (serve::ServeError,
  // io::CheckpointError, io::LoadError), and device::DeviceError for a device that cannot
  // be made (or what make_device throws).
  Model(serve::ModelSource source, const ModelOptions& options);
  // The same for serve's operand, resolved.
  Model(const std::string& location, const ModelOptions& options);
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  // Where the model came from: what messages name, and whether its files were checked
  // (W-CKPT-001 is the caller's to show).
  const serve::ModelSource& source() const { return source_; }
  // Its inputs and outputs as the options left them, and the checkpoint, step and slug.
  const serve::Handshake& about() const { return about_; }
  // With --at: the bound a call's `at` is held to.
  std::optional<int64_t> at_limit() const { return at_limit_; }

  // One call's answer, as serve's protocol has it: status 0 then every output, or 1 then
  // "error[CODE]: ..." text. `call` is every input of one record in order, exactly
  // batcher().layout().call_bytes() bytes whose values are checked (check_call_values).
  // Safe from any number of threads: a call that finds the device idle runs at once, on
  // its own thread; calls that arrive while it runs wait, and the first of them to find it
  // free runs them together, up to the batch, in the order they came.
  std::string run(std::string call);

  // The calls waiting for the device now (not those it runs).
  size_t calls_waiting();

  // For a caller that batches calls itself, on one thread, and never calls run (the
  // socket server).
  serve::Batcher& batcher() { return *batcher_; }

 private:
  struct Pending {
    std::string call = {};
    std::string answer = {};
    std::exception_ptr failure = {};  // the batch's run threw: rethrown in the call's own thread
    bool done = false;
  };
  // Runs the calls waiting, up to the batch, with the lock released; the lock is held
  // again when it returns and every call it took is done.
  void run_waiting(std::unique_lock<std::mutex>& lock);

  serve::ModelSource source_;
  serve::Handshake about_;
  std::optional<int64_t> at_limit_;
  std::unique_ptr<device::Device> device_;
  std::unique_ptr<serve::Batcher> batcher_;

  std::mutex mutex_;
  std::condition_variable finished_;  // a batch's calls are done, and the device is free
  std::deque<Pending*> waiting_;
  bool running_ = false;  // a thread runs a batch on the device
  // The batch being run; only the thread that runs it touches them. Reserved at open, so
  // that taking a batch allocates nothing.
  std::vector<Pending*> batch_;
  std::vector<std::string> batch_calls_;
};

}  // namespace sx::library
