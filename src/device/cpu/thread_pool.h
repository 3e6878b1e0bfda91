// The cpu device's threads, and the policy they keep:
//
// - One pool for the process: a worker for each core it may run on (its affinity mask),
//   but one; the thread that runs a plan takes the first part of every parallel step.
// - Work under about kGrain element operations runs on the calling thread alone
//   (threads_for in kernels.h): starting the workers costs more than it saves there.
// - A worker that finishes its part waits for the next one by spinning for
//   kSpinMicroseconds, then by yielding its core for kYieldMicroseconds (it runs only
//   when no other thread wants the core: a plan's next parallel step usually comes
//   sooner than a sleeping thread could be woken), then sleeps in the kernel (a futex)
//   until it is given work. So a process that stops running plans, to load data,
//   answer a socket or let another program run, gives its cores to whoever needs them
//   at once, and leaves them altogether within 2 ms. OpenMP's default spun for
//   milliseconds after every parallel loop without yielding, and its workers took cores
//   that a data loader, a server's clients or a benchmark's peer needed. The thread that
//   runs a plan waits for the workers' parts by spinning, then yielding.
// - Nobody waits for a sleeping worker: part t is the worker t's unless the thread that
//   started the run, done with its own part, takes it first. A worker woken too late for
//   a step finds its part done and waits for the next one. (So a fork's child, which has
//   none of its parent's workers, runs every part itself.)
// - A part never depends on which thread runs it: the kernels split work into fixed
//   parts by the thread count alone (see gemm.h), so the bits do not depend on timing.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace sx::device::cpu {

inline constexpr int kSpinMicroseconds = 50;
inline constexpr int kYieldMicroseconds = 2000;

// The cores this process may run on.
int available_cores();

class ThreadPool {
 public:
  // The process's pool, started on first use.
  static ThreadPool& shared();

  explicit ThreadPool(int workers);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Threads a run can use: the workers and the caller.
  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Calls part(t) for each t in [0, min(threads, size())), t = 0 on the calling thread,
  // and returns when every call has returned. One run at a time: a run from another
  // thread waits for this one; a run from inside a part calls all of its parts on the
  // calling thread, in order.
  template <class Part>
  void run(int threads, Part&& part) {
    run_erased(threads, &part, [](void* p, int t) { (*static_cast<Part*>(p))(t); });
  }

 private:
  using Erased = void (*)(void*, int);
  void run_erased(int threads, void* part, Erased call);
  void work(int index);
  // Returns once wake_ is no longer `seen`: spinning, yielding, then asleep.
  void wait_for_run(uint32_t seen);

  // Part t of the run of generation g is claimed by whoever raises claimed_[t] to g.
  bool claim(int part, uint64_t generation);

  std::vector<std::thread> workers_;
  // Per part: the last generation it was claimed in, a cache line each, since the
  // caller and a worker may both try one.
  struct alignas(64) Claim {
    std::atomic<uint64_t> generation{0};
  };
  std::vector<Claim> claimed_;
  std::mutex run_lock_;                   // runs from two threads take turns
  uint64_t last_generation_ = 0;          // of the last run (under run_lock_)
  std::atomic<uint32_t> wake_{0};         // the generation's low half: what a waiting worker watches
  std::atomic<uint64_t> job_{0};          // the run's generation << 16 | its thread count
  std::atomic<uint32_t> sleepers_{0};     // workers asleep on wake_
  alignas(64) std::atomic<int> done_{0};  // parts of this run finished
  std::atomic<bool> stopping_{false};
  void* part_ = nullptr;  // of this run: valid until its last part is done
  Erased call_ = nullptr;
};

}  // namespace sx::device::cpu
