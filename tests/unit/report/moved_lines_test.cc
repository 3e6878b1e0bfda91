// Which lines moved between two texts (report/moved_lines.h), checked against a
// brute-force longest common subsequence.
#include "report/moved_lines.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

namespace sx::report {
namespace {

std::string lines(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += item + "\n";
  return out;
}

std::vector<std::string> numbered(int from, int to) {
  std::vector<std::string> out;
  for (int i = from; i <= to; ++i) out.push_back(fmt::format("line {}", i));
  return out;
}

TEST(MovedLines, NoneWhenTheTextIsTheSame) {
  std::string text = lines(numbered(1, 30));
  EXPECT_EQ(moved_lines(text, text), std::vector<MovedLines>{});
  EXPECT_EQ(moved_lines("", ""), std::vector<MovedLines>{});
}

TEST(MovedLines, LinesAddedAboveMoveWhatFollows) {
  std::vector<std::string> before = numbered(1, 20), after = before;
  after.insert(after.begin() + 11, {"added a", "added b"});
  EXPECT_EQ(moved_lines(lines(before), lines(after)), (std::vector<MovedLines>{{12, 14, 9}}));
  EXPECT_EQ(describe_moved_lines("run.sx", lines(before), lines(after)),
            std::vector<std::string>{"  run.sx: lines 12-20 are now 14-22"});
}

TEST(MovedLines, ABlockMovedAndLinesRemoved) {
  // Lines 3-4 removed; line 10 moved to the top.
  std::vector<std::string> before = numbered(1, 10);
  std::vector<std::string> after = {"line 10", "line 1", "line 2", "line 5", "line 6", "line 7", "line 8", "line 9"};
  EXPECT_EQ(moved_lines(lines(before), lines(after)), (std::vector<MovedLines>{{1, 2, 2}, {5, 4, 5}}));
  EXPECT_EQ(describe_moved_lines("run.sx", lines(before), lines(after)),
            (std::vector<std::string>{"  run.sx: lines 1-2 are now 2-3", "  run.sx: lines 5-9 are now 4-8"}));
}

TEST(MovedLines, OneLineAndALastLineWithoutNewline) {
  EXPECT_EQ(describe_moved_lines("a.sx", std::string("x\ny"), "new\nx\ny"),
            (std::vector<std::string>{"  a.sx: lines 1-2 are now 2-3"}));
  EXPECT_EQ(describe_moved_lines("a.sx", std::string("x\ny\nz\n"), "x\nnew\ny\nz\n"),
            (std::vector<std::string>{"  a.sx: lines 2-3 are now 3-4"}));
  EXPECT_EQ(describe_moved_lines("a.sx", std::string("x\ny\nz\n"), "x\ny\nq\nz\n"),
            (std::vector<std::string>{"  a.sx: line 3 is now 4"}));
}

TEST(MovedLines, EditsInPlaceAndNoText) {
  EXPECT_EQ(describe_moved_lines("run.sx", std::string("a\nb\nc\n"), "a\nB\nc\n"),
            std::vector<std::string>{"  run.sx: edited in place, no line moved"});
  auto none = describe_moved_lines("run.sx", std::nullopt, "a\n");
  ASSERT_EQ(none.size(), 1u);
  EXPECT_EQ(none[0], "  run.sx: changed since the run; its checkpoint records no text to tell which lines moved");
}

TEST(MovedLines, ManyBlocksAreCut) {
  // Every other line removed: each kept line is a block of its own.
  std::vector<std::string> before = numbered(1, 40), after;
  for (int i = 1; i <= 40; i += 2) after.push_back(fmt::format("line {}", i));
  auto described = describe_moved_lines("run.sx", lines(before), lines(after), 5);
  ASSERT_EQ(described.size(), 6u);
  EXPECT_EQ(described[0], "  run.sx: line 3 is now 2");
  EXPECT_EQ(described[5], "  run.sx: and 14 more blocks of lines moved");
}

TEST(MovedLines, TooManyChangesToAlign) {
  std::vector<std::string> before = numbered(1, 1500), after = numbered(2000, 3500);
  EXPECT_EQ(moved_lines(lines(before), lines(after)), std::nullopt);
  EXPECT_EQ(
      describe_moved_lines("run.sx", lines(before), lines(after)),
      std::vector<std::string>{"  run.sx: more than 2000 lines differ from the run's; too many to tell which moved"});
  // As many lines, but few changed: aligned.
  after = before;
  after.insert(after.begin(), "new");
  EXPECT_EQ(moved_lines(lines(before), lines(after)), (std::vector<MovedLines>{{1, 2, 1500}}));
}

// The longest common subsequence's length, by dynamic programming.
size_t lcs_length(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::vector<std::vector<size_t>> t(a.size() + 1, std::vector<size_t>(b.size() + 1, 0));
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      t[i][j] = a[i - 1] == b[j - 1] ? t[i - 1][j - 1] + 1 : std::max(t[i - 1][j], t[i][j - 1]);
    }
  }
  return t[a.size()][b.size()];
}

TEST(MovedLines, RandomEditsAgainstTheLongestCommonSubsequence) {
  // The lines kept are a common subsequence as long as the longest, and the blocks are
  // exactly those of them whose numbers changed.
  std::mt19937 rng(11);
  for (int round = 0; round < 300; ++round) {
    std::vector<std::string> a, b;
    int n = static_cast<int>(rng() % 30), m = static_cast<int>(rng() % 30);
    for (int i = 0; i < n; ++i) a.push_back(std::string(1, static_cast<char>('a' + rng() % 4)));
    for (int i = 0; i < m; ++i) b.push_back(std::string(1, static_cast<char>('a' + rng() % 4)));
    auto common = common_lines(lines(a), lines(b));
    ASSERT_TRUE(common);
    ASSERT_EQ(common->size(), lcs_length(a, b)) << "round " << round;
    int64_t last_i = 0, last_j = 0, shifted = 0;
    for (const auto& [i, j] : *common) {
      ASSERT_TRUE(i > last_i && j > last_j) << "round " << round;
      ASSERT_EQ(a[static_cast<size_t>(i - 1)], b[static_cast<size_t>(j - 1)]);
      last_i = i, last_j = j;
      shifted += i != j;
    }
    auto moved = moved_lines(lines(a), lines(b));
    ASSERT_TRUE(moved);
    int64_t in_blocks = 0;
    for (const auto& block : *moved) in_blocks += block.count;
    EXPECT_EQ(in_blocks, shifted) << "round " << round;
  }
}

}  // namespace
}  // namespace sx::report
