// The cpu device's thread pool: every part runs once, part 0 on the caller, parts run at
// once, a run inside a part and runs from two threads at once, a fork's child, and
// workers that stop spinning once there is no work (thread_pool.h states the policy).
#include "device/cpu/thread_pool.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace sx::device::cpu {
namespace {

double process_cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](timeval t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

TEST(ThreadPool, EveryPartRunsOnceAndPartZeroOnTheCaller) {
  ThreadPool pool(3);
  for (int threads : {1, 2, 4, 9}) {
    std::vector<std::atomic<int>> calls(static_cast<size_t>(threads));
    std::vector<std::thread::id> ran_on(static_cast<size_t>(threads));
    for (int round = 0; round < 50; ++round) {
      pool.run(threads, [&](int t) {
        calls[static_cast<size_t>(t)].fetch_add(1);
        ran_on[static_cast<size_t>(t)] = std::this_thread::get_id();
      });
    }
    int used = std::min(threads, pool.size());
    for (int t = 0; t < threads; ++t) EXPECT_EQ(calls[static_cast<size_t>(t)].load(), t < used ? 50 : 0) << t;
    EXPECT_EQ(ran_on[0], std::this_thread::get_id());
  }
}

TEST(ThreadPool, PartsRunAtOnce) {
  // Part 0 waits for part 1 to start: only a worker running it at the same time can.
  ThreadPool pool(1);
  std::atomic<bool> started{false}, seen{false};
  pool.run(2, [&](int t) {
    if (t == 1) {
      started.store(true);
      return;
    }
    auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!started.load() && std::chrono::steady_clock::now() < give_up) std::this_thread::yield();
    seen.store(started.load());
  });
  EXPECT_TRUE(seen.load());
}

TEST(ThreadPool, ARunInsideAPartRunsOnItsThread) {
  ThreadPool& pool = ThreadPool::shared();
  std::atomic<int> inner{0};
  pool.run(2, [&](int) {
    std::thread::id outer = std::this_thread::get_id();
    pool.run(2, [&](int) {
      EXPECT_EQ(std::this_thread::get_id(), outer);
      inner.fetch_add(1);
    });
  });
  int used = std::min(2, pool.size());
  EXPECT_EQ(inner.load(), used * used);
}

TEST(ThreadPool, RunsFromTwoThreadsTakeTurns) {
  ThreadPool pool(2);
  std::atomic<int64_t> sum{0};
  auto many_runs = [&] {
    for (int round = 0; round < 300; ++round) pool.run(3, [&](int t) { sum.fetch_add(t + 1); });
  };
  std::thread other(many_runs);
  many_runs();
  other.join();
  EXPECT_EQ(sum.load(), 2 * 300 * (1 + 2 + 3));
}

TEST(ThreadPool, AForkedChildRunsEveryPartItself) {
  ThreadPool& pool = ThreadPool::shared();
  // Fork only once every worker has run a part of its own. A worker still starting may
  // hold a lock of the sanitizers' allocator (clang 14's runtime takes no fork handler for
  // it): the child inherits it held, and its leak check at exit waits on it for ever.
  // Part 0 waits a little so that the workers, not the caller, take the other parts.
  std::thread::id caller = std::this_thread::get_id();
  std::vector<std::atomic<bool>> ran_on_worker(static_cast<size_t>(pool.size()));
  auto every_worker_ran = [&] {
    for (int t = 1; t < pool.size(); ++t)
      if (!ran_on_worker[static_cast<size_t>(t)].load()) return false;
    return true;
  };
  for (int tries = 0; tries < 1000 && !every_worker_ran(); ++tries) {
    pool.run(pool.size(), [&](int t) {
      if (t == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      else if (std::this_thread::get_id() != caller) ran_on_worker[static_cast<size_t>(t)].store(true);
    });
  }
  ASSERT_TRUE(every_worker_ran());
  std::fflush(nullptr);  // the child's exit flushes its copy of the buffers
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int parts = 0;
    pool.run(2, [&](int) { ++parts; });  // on this thread alone: no data race on parts
    // exit, not _exit: the pool's destructor runs in the child too, and returns (the
    // C library's fork leaves the parent's other threads ended in the child).
    std::exit(parts == std::min(2, pool.size()) ? 0 : 1);
  }
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

TEST(ThreadPool, IdleWorkersStopSpinning) {
  // After a run the workers spin and yield for kYieldMicroseconds in all, then sleep:
  // 200 ms without work costs the process far less than 200 ms of CPU a worker (the
  // bound allows for a loaded machine, where a sleeping worker's wake-ups take longer).
  ThreadPool pool(3);
  pool.run(4, [](int) {});
  double before = process_cpu_seconds();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  double spent = process_cpu_seconds() - before;
  EXPECT_LT(spent, 0.05) << "CPU seconds the idle pool took in 0.2 s";
}

}  // namespace
}  // namespace sx::device::cpu
