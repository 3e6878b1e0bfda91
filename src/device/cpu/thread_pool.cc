// The pool's workers: spin briefly, then sleep on a futex; parts claimed by generation
// (see thread_pool.h).
#include "device/cpu/thread_pool.h"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <xmmintrin.h>

#include <algorithm>
#include <chrono>
#include <climits>

namespace sx::device::cpu {
namespace {

using Clock = std::chrono::steady_clock;

// Set on the pool's workers, and on a caller while it runs parts.
thread_local bool in_part = false;

void futex_wait(std::atomic<uint32_t>& word, uint32_t expected) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT_PRIVATE, expected, nullptr, nullptr, 0);
}

void futex_wake_all(std::atomic<uint32_t>& word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
}

constexpr uint64_t kThreadBits = 16;

}  // namespace

int available_cores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1U, std::thread::hardware_concurrency());
}

ThreadPool& ThreadPool::shared() {
  static ThreadPool pool(available_cores() - 1);
  return pool;
}

ThreadPool::ThreadPool(int workers) : claimed_(static_cast<size_t>(workers) + 1) {
  for (int w = 1; w <= workers; ++w) workers_.emplace_back([this, w] { work(w); });
}

ThreadPool::~ThreadPool() {
  stopping_.store(true);
  {
    std::lock_guard lock(run_lock_);
    ++last_generation_;
    job_.store(last_generation_ << kThreadBits);
    wake_.store(static_cast<uint32_t>(last_generation_));
  }
  futex_wake_all(wake_);
  for (std::thread& t : workers_) t.join();
}

bool ThreadPool::claim(int part, uint64_t generation) {
  std::atomic<uint64_t>& slot = claimed_[static_cast<size_t>(part)].generation;
  uint64_t last = slot.load();
  while (last < generation) {
    if (slot.compare_exchange_weak(last, generation)) return true;
  }
  return false;
}

void ThreadPool::run_erased(int threads, void* part, Erased call) {
  threads = std::min(threads, size());
  if (threads <= 1 || in_part) {
    for (int t = 0; t < threads; ++t) call(part, t);
    return;
  }
  std::lock_guard lock(run_lock_);
  part_ = part;
  call_ = call;
  done_.store(0, std::memory_order_relaxed);
  uint64_t generation = ++last_generation_;
  job_.store(generation << kThreadBits | static_cast<uint64_t>(threads), std::memory_order_release);
  wake_.store(static_cast<uint32_t>(generation));
  if (sleepers_.load() > 0) futex_wake_all(wake_);
  in_part = true;
  call(part, 0);
  int mine = 1;
  for (int t = 1; t < threads; ++t) {
    if (!claim(t, generation)) continue;
    call(part, t);
    ++mine;
  }
  in_part = false;
  // What is left was claimed by workers, which are running it: spin, and past the spin
  // time yield the core, which such a worker may be waiting for.
  Clock::time_point spin_until = Clock::now() + std::chrono::microseconds(kSpinMicroseconds);
  for (int spins = 1; done_.load(std::memory_order_acquire) + mine < threads; ++spins) {
    if (spins % 64 == 0 && Clock::now() >= spin_until) std::this_thread::yield();
    else _mm_pause();
  }
}

void ThreadPool::wait_for_run(uint32_t seen) {
  auto changed = [&] { return wake_.load(std::memory_order_acquire) != seen; };
  Clock::time_point start = Clock::now();
  while (!changed()) {
    Clock::duration waited = Clock::now() - start;
    if (waited < std::chrono::microseconds(kSpinMicroseconds)) {
      for (int i = 0; i < 64 && !changed(); ++i) _mm_pause();
    } else if (waited < std::chrono::microseconds(kYieldMicroseconds)) {
      std::this_thread::yield();
    } else {
      // Asleep until a run changes wake_: a run that changed it before this worker
      // counted itself a sleeper is seen by the load below (both sequentially
      // consistent), and one that changed it since makes the futex return at once.
      sleepers_.fetch_add(1);
      if (wake_.load() == seen) futex_wait(wake_, seen);
      sleepers_.fetch_sub(1);
    }
  }
}

void ThreadPool::work(int index) {
  in_part = true;
  uint32_t seen = 0;
  for (;;) {
    wait_for_run(seen);
    // The run now under way, which may be later than the one that woke this worker: its
    // part here is taken only if nobody took it first, and its pointers are then that
    // run's until the part is done.
    uint64_t job = job_.load(std::memory_order_acquire);
    uint64_t generation = job >> kThreadBits;
    seen = static_cast<uint32_t>(generation);
    if (stopping_.load()) return;
    int threads = static_cast<int>(job & ((uint64_t{1} << kThreadBits) - 1));
    if (index < threads && claim(index, generation)) {
      call_(part_, index);
      done_.fetch_add(1, std::memory_order_release);
    }
  }
}

}  // namespace sx::device::cpu
