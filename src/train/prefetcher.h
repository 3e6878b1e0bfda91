// Batches made ahead on a background thread, so the device never waits on a loader: the
// thread makes the batches of steps first, first+1, ... into a bounded queue, and next()
// hands them out in that order with the seconds the caller waited (the run logs it as
// the data time of a step).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>

#include "train/loaders.h"

namespace sx::train {

class Prefetcher {
 public:
  struct Options {
    size_t depth = 2;       // batches made ahead of the caller, at most (at least 1)
    int64_t end_step = -1;  // the step after the last one made; -1 for no end
    // Step s's batch is the loader's batch stride*s + offset: a worker of a data-parallel
    // run reads its share of each global batch so (docs/distributed.md).
    int64_t stride = 1, offset = 0;
  };
  struct Next {
    int64_t step = 0;
    Batch batch;
    double waited_seconds = 0;  // how long next() waited for the batch to be made
  };

  // Starts the thread. The loader must outlive the prefetcher (the shared_ptr sees to it).
  Prefetcher(std::shared_ptr<const Loader> loader, uint64_t seed, int64_t first_step, int64_t batch_size,
             Options options);
  Prefetcher(std::shared_ptr<const Loader> loader, uint64_t seed, int64_t first_step, int64_t batch_size)
      : Prefetcher(std::move(loader), seed, first_step, batch_size, Options{}) {}
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;
  // Stops the thread: it finishes the batch it is making, if any, and makes no more.
  ~Prefetcher();

  // The next step's batch. An exception the loader threw making it is rethrown here (and
  // by every later call); std::out_of_range past end_step.
  Next next();

 private:
  struct Slot {
    int64_t step;
    Batch batch;
    std::exception_ptr error;
  };
  void produce();

  std::shared_ptr<const Loader> loader_;
  const uint64_t seed_;
  const int64_t batch_size_;
  const Options options_;

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Slot> ready_;
  int64_t next_to_make_;
  int64_t next_to_give_;
  bool stopping_ = false;
  std::exception_ptr error_;  // the loader's exception, once next() handed it out
  std::thread thread_;        // last: started when everything above is ready
};

}  // namespace sx::train
