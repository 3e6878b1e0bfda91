#include "device/cpu/profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>

namespace sx::device::cpu {

bool StepProfile::wanted() {
  const char* value = std::getenv("SEXPGPU_CPU_PROFILE");
  return value != nullptr && *value != '\0' && std::strcmp(value, "0") != 0;
}

StepProfile::StepProfile(std::vector<std::string> labels) : labels_(std::move(labels)), seconds_(labels_.size(), 0.0) {}

StepProfile::~StepProfile() {
  if (runs_ > 0) std::fputs(table().c_str(), stderr);
}

std::string StepProfile::table() const {
  if (runs_ == 0) return "";
  std::map<std::string, std::pair<double, int>> by_label;  // seconds in all, steps
  double total = 0;
  for (size_t i = 0; i < labels_.size(); ++i) {
    auto& [seconds, steps] = by_label[labels_[i]];
    seconds += seconds_[i];
    ++steps;
    total += seconds_[i];
  }
  std::vector<std::pair<double, std::string>> rows;
  for (const auto& [label, entry] : by_label) {
    rows.push_back({entry.first, fmt::format("{} x{}", label, entry.second)});
  }
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  const double runs = static_cast<double>(runs_);
  std::string out =
      fmt::format("sexpgpu: cpu plan profile: {} runs, {:.3f} ms a run in steps\n", runs_, 1e3 * total / runs);
  for (const auto& [seconds, label] : rows) {
    out +=
        fmt::format("{:10.3f} ms {:5.1f}%  {}\n", 1e3 * seconds / runs, total > 0 ? 100 * seconds / total : 0.0, label);
  }
  return out;
}

}  // namespace sx::device::cpu
