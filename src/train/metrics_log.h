// metrics.jsonl, beside the checkpoints: one JSON object a line, the step first, then each
// metric by name, {"step":20,"loss":2.3125,"lr":0.0003}, handed to the system as each
// line is written so that a killed run loses none it logged. Non-finite values are
// written as null. read_metrics reads the series back for the loss curve.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "report/loss_curve.h"

namespace sx::train {

class MetricsLog {
 public:
  // Opens `path` for appending, creating it. With `resume_step`, the file is first
  // rewritten without the lines of later steps and without a last line cut short (what a
  // run killed after its newest checkpoint logged), so that a resumed run's log reads as
  // an unbroken run's. io::CheckpointError (E-CKPT-001) naming the path when it cannot.
  explicit MetricsLog(std::string path, std::optional<int64_t> resume_step = std::nullopt);
  MetricsLog(const MetricsLog&) = delete;
  MetricsLog& operator=(const MetricsLog&) = delete;
  ~MetricsLog();

  // Appends one line in a single write. std::invalid_argument for a metric named "step"
  // or named twice; io::CheckpointError (E-CKPT-001) when the line cannot be written.
  void append(int64_t step, const std::vector<std::pair<std::string, double>>& values);

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
};

// One line of metrics.jsonl, with its newline.
std::string metrics_line(int64_t step, const std::vector<std::pair<std::string, double>>& values);

// The series of a metrics.jsonl, one per metric in the order each first appears; null
// values become NaN (a break in the curve); lines that are not an object with an integer
// "step" are skipped. A missing file holds none; io::CheckpointError (E-CKPT-002) when it
// cannot be read.
std::vector<report::CurveSeries> read_metrics(const std::string& path);

}  // namespace sx::train
