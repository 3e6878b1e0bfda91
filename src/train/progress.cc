// The progress line (see progress.h).
#include "train/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>

namespace sx::train {
namespace {

// A rate with three significant digits, never in exponent form: 0.852, 41.2, 1234.
std::string three_digits(double rate) {
  if (!std::isfinite(rate)) return "?";
  return fmt::format("{:.{}f}", rate, rate >= 100 ? 0 : rate >= 10 ? 1 : rate >= 1 ? 2 : 3);
}

std::string format_seconds(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  auto t = static_cast<int64_t>(s);
  return t >= 3600 ? fmt::format("{}h{:02}m", t / 3600, t / 60 % 60) : fmt::format("{}m{:02}s", t / 60, t % 60);
}

}  // namespace

ProgressLog::ProgressLog(int64_t start, int64_t total, int64_t tokens_per_step, int64_t log_every, bool redraw)
    : start_(start),
      total_(total),
      tokens_per_step_(tokens_per_step),
      log_every_(log_every),
      terminal_(redraw && isatty(STDOUT_FILENO)),
      began_(std::chrono::steady_clock::now()) {}

void ProgressLog::print(int64_t done, double loss, const std::string& evaluated) {
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - began_).count();
  double rate = static_cast<double>(done - start_) / elapsed;
  std::string line = fmt::format(
      "step {}/{}  loss {:.4f}  {} steps/s{}  data {:.2f} ms/step  eta {}", done, total_, loss, three_digits(rate),
      tokens_per_step_ ? fmt::format("  {} tokens/s", three_digits(rate * static_cast<double>(tokens_per_step_))) : "",
      1e3 * data_seconds_ / static_cast<double>(done - start_),
      format_seconds(static_cast<double>(total_ - done) / rate));
  if (terminal_) std::printf("\r%s\033[K", line.c_str());
  if (done % log_every_ == 0 || done == total_ || !evaluated.empty()) {
    if (terminal_) std::printf("%s\n", evaluated.c_str());
    else std::printf("%s%s\n", line.c_str(), evaluated.c_str());
  }
  std::fflush(stdout);
}

double ProgressLog::tokens_per_second(int64_t done) const {
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - began_).count();
  return static_cast<double>((done - start_) * tokens_per_step_) / elapsed;
}

}  // namespace sx::train
