// Writing and reading metrics.jsonl (see metrics_log.h).
#include "train/metrics_log.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "io/checkpoint.h"
#include "lang/diagnostic.h"

namespace sx::train {
namespace {

// Keys in the order written: the step first, then the metrics as logged.
using json = nlohmann::ordered_json;

[[noreturn]] void unwritable(const std::string& path, std::string_view doing, int err) {
  throw io::CheckpointError(io::kCheckpointUnwritable,
                            fmt::format("{}: cannot {}: {}", lang::shown_in_message(path), doing, std::strerror(err)));
}

// The whole file, or nullopt when it does not exist.
std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (errno == ENOENT) return std::nullopt;
    throw io::CheckpointError(
        io::kCheckpointUnreadable,
        fmt::format("{}: cannot read it: {}", lang::shown_in_message(path), std::strerror(errno)));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    throw io::CheckpointError(io::kCheckpointUnreadable,
                              fmt::format("{}: cannot read it", lang::shown_in_message(path)));
  }
  return text.str();
}

// The step of a line of metrics.jsonl, when it is one.
std::optional<int64_t> step_of(const json& line) {
  if (!line.is_object()) return std::nullopt;
  auto it = line.find("step");
  if (it == line.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<int64_t>();
}

json parsed(std::string_view text) { return json::parse(text, nullptr, false); }

}  // namespace

std::string metrics_line(int64_t step, const std::vector<std::pair<std::string, double>>& values) {
  std::string line = fmt::format("{{\"step\":{}", step);
  std::vector<std::string_view> seen;
  for (const auto& [name, value] : values) {
    if (name == "step") throw std::invalid_argument("a metric may not be named `step`");
    if (std::find(seen.begin(), seen.end(), name) != seen.end()) {
      throw std::invalid_argument(fmt::format("the metric `{}` is logged twice in one line", name));
    }
    seen.push_back(name);
    std::string key = json(name).dump(-1, ' ', false, json::error_handler_t::replace);
    line += "," + key + ":" + (std::isfinite(value) ? fmt::format("{}", value) : std::string("null"));
  }
  return line + "}\n";
}

MetricsLog::MetricsLog(std::string path, std::optional<int64_t> resume_step) : path_(std::move(path)) {
  if (resume_step) {
    if (auto text = read_file(path_)) {
      std::string kept;
      size_t begin = 0;
      while (begin < text->size()) {
        size_t end = text->find('\n', begin);
        if (end == std::string::npos) break;  // a last line cut short
        std::string_view line(text->data() + begin, end - begin);
        auto step = step_of(parsed(line));
        if (step && *step <= *resume_step) kept.append(line).append("\n");
        begin = end + 1;
      }
      if (kept != *text) io::write_file_atomically(path_, kept);
    }
  }
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
  if (fd_ < 0) unwritable(path_, "open it to append", errno);
}

MetricsLog::~MetricsLog() {
  if (fd_ >= 0) ::close(fd_);
}

void MetricsLog::append(int64_t step, const std::vector<std::pair<std::string, double>>& values) {
  std::string line = metrics_line(step, values);
  const char* p = line.data();
  size_t left = line.size();
  while (left > 0) {
    ssize_t put = ::write(fd_, p, left);
    if (put < 0 && errno == EINTR) continue;
    if (put < 0) unwritable(path_, "append to it", errno);
    p += put;
    left -= static_cast<size_t>(put);
  }
}

std::vector<report::CurveSeries> read_metrics(const std::string& path) {
  std::vector<report::CurveSeries> series;
  auto text = read_file(path);
  if (!text) return series;
  std::map<std::string, size_t> index;
  std::istringstream lines(*text);
  std::string line;
  while (std::getline(lines, line)) {
    json object = parsed(line);
    auto step = step_of(object);
    if (!step) continue;
    for (auto it = object.begin(); it != object.end(); ++it) {
      if (it.key() == "step") continue;
      double value;
      if (it->is_number()) value = it->get<double>();
      else if (it->is_null()) value = std::nan("");
      else continue;
      auto [at, added] = index.emplace(it.key(), series.size());
      if (added) series.push_back(report::CurveSeries{it.key(), {}});
      series[at->second].points.emplace_back(*step, value);
    }
  }
  return series;
}

}  // namespace sx::train
