// Which lines of a source moved between the text a run compiled and the text compiled
// now: `export` says so, since what the checkpoint's run reported by line (a diagnostic,
// a parameter's source) now sits elsewhere.
//
// The texts are aligned line by line as `diff` aligns them (the shortest edit script,
// Myers' algorithm); a moved block is a run of lines both texts hold, in order, whose
// line numbers differ by one amount.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sx::report {

// Lines before_first..before_first+count-1 of the old text (1-based) are
// after_first..after_first+count-1 of the new one.
struct MovedLines {
  int64_t before_first = 0, after_first = 0, count = 0;

  bool operator==(const MovedLines&) const = default;
};

// The texts differ in more lines than this: too many to align (the alignment takes memory
// that grows with its square).
inline constexpr int64_t kMostChangedLines = 2000;

// The lines the two texts share, as the shortest edit script keeps them: pairs of 1-based
// line numbers (before, after), rising in both; nullopt when more than kMostChangedLines
// lines were removed and added.
std::optional<std::vector<std::pair<int64_t, int64_t>>> common_lines(std::string_view before, std::string_view after);

// The blocks that moved, in order; nullopt when more than kMostChangedLines lines were
// removed and added.
std::optional<std::vector<MovedLines>> moved_lines(std::string_view before, std::string_view after);

// What `export` prints about one source that changed, one line each, indented two spaces:
// `  run.sx: lines 12-20 are now 14-22`, ... (at most `most` blocks, then how many more);
// `  run.sx: edited in place, no line moved`; or why there is no detail. `before` is
// nullopt for a checkpoint that recorded no text.
std::vector<std::string> describe_moved_lines(const std::string& name, const std::optional<std::string>& before,
                                              std::string_view after, size_t most = 12);

}  // namespace sx::report
