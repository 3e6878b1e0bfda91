// Moved lines: Myers' shortest edit script over lines, then the common lines grouped into
// blocks of one shift.
#include "report/moved_lines.h"

#include <fmt/format.h>

#include <algorithm>

namespace sx::report {
namespace {

// The lines of a text, without their newlines; a last newline ends the last line.
std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// The pairs (i, j), 0-based, of lines a[i] == b[j] that the shortest edit script keeps,
// in order; nullopt when it takes more than kMostChangedLines edits.
std::optional<std::vector<std::pair<int64_t, int64_t>>> kept_lines(const std::vector<std::string_view>& a,
                                                                   const std::vector<std::string_view>& b) {
  const auto n = static_cast<int64_t>(a.size()), m = static_cast<int64_t>(b.size());
  const int64_t most = std::min(n + m, kMostChangedLines);
  // v[offset + k]: the furthest x reached on diagonal k = x - y; trace[d] holds v after d
  // edits, for k in [-d-1, d+1], which is all that walking back from step d + 1 reads.
  const int64_t offset = most + 1;
  std::vector<int64_t> v(static_cast<size_t>(2 * offset + 1), 0);
  std::vector<std::vector<int64_t>> trace;
  auto at = [&](int64_t k) -> int64_t& { return v[static_cast<size_t>(offset + k)]; };
  int64_t edits = -1;
  for (int64_t d = 0; d <= most && edits < 0; ++d) {
    for (int64_t k = -d; k <= d; k += 2) {
      int64_t x = (k == -d || (k != d && at(k - 1) < at(k + 1))) ? at(k + 1) : at(k - 1) + 1;
      int64_t y = x - k;
      while (x < n && y < m && a[static_cast<size_t>(x)] == b[static_cast<size_t>(y)]) ++x, ++y;
      at(k) = x;
      if (x >= n && y >= m) {
        edits = d;
        break;
      }
    }
    trace.emplace_back(v.begin() + (offset - d - 1), v.begin() + (offset + d + 2));
  }
  if (edits < 0) return std::nullopt;
  // Walking back from the end: each step is a diagonal run of kept lines, then one edit.
  std::vector<std::pair<int64_t, int64_t>> kept;
  int64_t x = n, y = m;
  for (int64_t d = edits; d > 0; --d) {
    int64_t k = x - y;
    // trace[d - 1] holds k in [-d, d] from index 0.
    const auto& before = trace[static_cast<size_t>(d - 1)];
    auto was = [&](int64_t diagonal) { return before[static_cast<size_t>(diagonal + d)]; };
    int64_t prev_k = (k == -d || (k != d && was(k - 1) < was(k + 1))) ? k + 1 : k - 1;
    int64_t prev_x = was(prev_k), prev_y = prev_x - prev_k;
    while (x > prev_x && y > prev_y) kept.emplace_back(--x, --y);
    x = prev_x, y = prev_y;
  }
  while (x > 0 && y > 0) kept.emplace_back(--x, --y);
  std::reverse(kept.begin(), kept.end());
  return kept;
}

std::string span_of(int64_t first, int64_t count) {
  return count == 1 ? fmt::format("{}", first) : fmt::format("{}-{}", first, first + count - 1);
}

}  // namespace

std::optional<std::vector<std::pair<int64_t, int64_t>>> common_lines(std::string_view before, std::string_view after) {
  auto kept = kept_lines(lines_of(before), lines_of(after));
  if (kept) {
    for (auto& [i, j] : *kept) ++i, ++j;
  }
  return kept;
}

std::optional<std::vector<MovedLines>> moved_lines(std::string_view before, std::string_view after) {
  auto common = common_lines(before, after);
  if (!common) return std::nullopt;
  std::vector<MovedLines> out;
  for (const auto& [i, j] : *common) {
    if (i == j) continue;
    if (!out.empty()) {
      MovedLines& last = out.back();
      if (last.before_first + last.count == i && last.after_first + last.count == j) {
        ++last.count;
        continue;
      }
    }
    out.push_back({i, j, 1});
  }
  return out;
}

std::vector<std::string> describe_moved_lines(const std::string& name, const std::optional<std::string>& before,
                                              std::string_view after, size_t most) {
  if (!before) {
    return {fmt::format("  {}: changed since the run; its checkpoint records no text to tell which lines moved", name)};
  }
  auto moved = moved_lines(*before, after);
  if (!moved) {
    return {fmt::format("  {}: more than {} lines differ from the run's; too many to tell which moved", name,
                        kMostChangedLines)};
  }
  if (moved->empty()) return {fmt::format("  {}: edited in place, no line moved", name)};
  std::vector<std::string> out;
  for (size_t i = 0; i < moved->size() && i < most; ++i) {
    const MovedLines& m = (*moved)[i];
    out.push_back(fmt::format("  {}: {} {} {} now {}", name, m.count == 1 ? "line" : "lines",
                              span_of(m.before_first, m.count), m.count == 1 ? "is" : "are",
                              span_of(m.after_first, m.count)));
  }
  if (moved->size() > most) {
    out.push_back(fmt::format("  {}: and {} more blocks of lines moved", name, moved->size() - most));
  }
  return out;
}

}  // namespace sx::report
