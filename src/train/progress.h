// The line a run prints at each step: the step, the loss, steps (and tokens) a second,
// the time a step waited for its batch, and the time left. On a terminal it is redrawn
// in place at every step and kept every `log-every` steps; elsewhere only the kept lines
// are printed.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace sx::train {

class ProgressLog {
 public:
  // For a run from step `start` to `total`, of `tokens_per_step` tokens a step (0: its
  // records are no tokens), keeping a line every `log_every` steps. The rates count from
  // now. `redraw` false prints only the kept lines even on a terminal (mpirun gives its
  // workers one, whatever its own output is).
  ProgressLog(int64_t start, int64_t total, int64_t tokens_per_step, int64_t log_every, bool redraw = true);

  // Adds the time a step waited for its batch.
  void waited(double seconds) { data_seconds_ += seconds; }
  // Prints the line of `done` steps, with what the :eval passes found at it (`evaluated`,
  // empty when none ran); kept when a pass ran.
  void print(int64_t done, double loss, const std::string& evaluated);
  // Tokens a second since the log began, once `done` steps are done (0 where records are
  // no tokens).
  double tokens_per_second(int64_t done) const;

 private:
  int64_t start_, total_, tokens_per_step_, log_every_;
  bool terminal_;
  std::chrono::steady_clock::time_point began_;
  double data_seconds_ = 0;
};

}  // namespace sx::train
