// Stopping a plan's run between two of its steps: the REPL's Ctrl-C, whose signal handler
// may only set a flag. The cpu and reference plans look at it before each step; a run
// stopped throws Interrupted before it writes over any of its inputs, so those are as they
// were (the reference device writes every output after its last step; the cpu device
// writes an output over its input near the end of a run, and once it has begun to, looks
// no more).
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
