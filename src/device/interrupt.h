// Stopping a plan's run between two of its steps: the REPL's Ctrl-C, whose signal handler
// may only set a flag. The cpu and reference plans look at it before each step; a run
// stopped throws Interrupted before it writes any output (every output is written after
// the last step), so the device's buffers are as they were.
#pragma once

#include <atomic>
#include <stdexcept>

namespace sx::device {

class Interrupted : public std::runtime_error {
 public:
  Interrupted() : std::runtime_error("interrupted") {}
};

// Runs stop at their next step while `*flag` is true; null, the default: never.
void stop_runs_when(const std::atomic<bool>* flag);
// Throws Interrupted when the flag given to stop_runs_when is set.
void check_interrupt();

}  // namespace sx::device
