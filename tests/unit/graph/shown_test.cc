// User text as a message shows it (graph/shown.h).
#include "graph/shown.h"

#include <gtest/gtest.h>

#include <string>

namespace sx::graph {
namespace {

TEST(Shown, ShortTextIsWhole) {
  EXPECT_EQ(shown_in_message("learning-rate"), "learning-rate");
  EXPECT_EQ(shown_in_message(std::string(160, 'k')), std::string(160, 'k'));
}

TEST(Shown, LongTextIsCutWithItsLength) {
  EXPECT_EQ(shown_in_message(std::string(161, 'k')), std::string(80, 'k') + "... (161 characters)");
  EXPECT_EQ(shown_in_message(std::string(1'000'000, 'k')), std::string(80, 'k') + "... (1000000 characters)");
}

TEST(Shown, CountsCharactersNotBytes) {
  std::string accents;
  for (int i = 0; i < 160; ++i) accents += "\xC3\xA9";  // é, two bytes
  EXPECT_EQ(shown_in_message(accents), accents);
  std::string cut;
  for (int i = 0; i < 80; ++i) cut += "\xC3\xA9";
  EXPECT_EQ(shown_in_message(accents + "\xC3\xA9"), cut + "... (161 characters)");
}

TEST(Shown, ControlCharactersAreEscaped) { EXPECT_EQ(shown_in_message("a\nb\x1b"), "a\\u{a}b\\u{1b}"); }

}  // namespace
}  // namespace sx::graph
