// The prefetching thread (see prefetcher.h).
#include "train/prefetcher.h"

#include <fmt/format.h>

#include <chrono>
#include <stdexcept>

namespace sx::train {

Prefetcher::Prefetcher(std::shared_ptr<const Loader> loader, uint64_t seed, int64_t first_step, int64_t batch_size,
                       Options options)
    : loader_(std::move(loader)),
      seed_(seed),
      batch_size_(batch_size),
      options_{options.depth < 1 ? 1 : options.depth, options.end_step, options.stride, options.offset},
      next_to_make_(first_step),
      next_to_give_(first_step),
      thread_([this] { produce(); }) {}

Prefetcher::~Prefetcher() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void Prefetcher::produce() {
  while (true) {
    int64_t step;
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [&] { return stopping_ || ready_.size() < options_.depth; });
      if (stopping_ || (options_.end_step >= 0 && next_to_make_ >= options_.end_step)) return;
      step = next_to_make_++;
    }
    Slot slot{step, {}, nullptr};
    try {
      slot.batch = loader_->batch(seed_, step * options_.stride + options_.offset, batch_size_);
    } catch (...) {
      slot.error = std::current_exception();
    }
    bool failed = slot.error != nullptr;
    {
      std::lock_guard lock(mutex_);
      ready_.push_back(std::move(slot));
    }
    changed_.notify_all();
    if (failed) return;
  }
}

Prefetcher::Next Prefetcher::next() {
  auto start = std::chrono::steady_clock::now();
  std::unique_lock lock(mutex_);
  if (error_) std::rethrow_exception(error_);
  if (options_.end_step >= 0 && next_to_give_ >= options_.end_step) {
    throw std::out_of_range(fmt::format("the prefetcher's steps end before step {}", options_.end_step));
  }
  // The thread stops only at end_step or after queueing an exception, so this ends.
  changed_.wait(lock, [&] { return !ready_.empty(); });
  Slot slot = std::move(ready_.front());
  ready_.pop_front();
  if (slot.error) error_ = slot.error;
  else ++next_to_give_;
  lock.unlock();
  changed_.notify_all();
  double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (slot.error) std::rethrow_exception(slot.error);
  return Next{slot.step, std::move(slot.batch), waited};
}

}  // namespace sx::train
