// The loss-curve SVG: a whole picture for ordinary curves, one point, non-finite values,
// ranges huge and tiny, many points; every coordinate drawn inside the canvas.
#include "report/loss_curve.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace sx::report {
namespace {

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Every number in an attribute is finite and within the canvas, and the elements close.
void expect_well_drawn(const std::string& svg) {
  EXPECT_TRUE(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
  EXPECT_TRUE(svg.ends_with("</svg>\n"));
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  EXPECT_EQ(svg.find("inf"), std::string::npos);
  std::regex coordinate(R"re( (?:x|y|x1|x2|y1|y2|cx|cy)="([^"]*)")re");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), coordinate); it != std::sregex_iterator(); ++it) {
    double v = std::stod((*it)[1].str());
    EXPECT_GE(v, 0) << (*it)[0];
    EXPECT_LE(v, 820) << (*it)[0];
  }
  // The points of each polyline, read by hand: std::regex recurses once per character of
  // a match, and a long series' list overflows the stack of a sanitizer build.
  for (size_t at = svg.find("points=\""); at != std::string::npos; at = svg.find("points=\"", at)) {
    at += 8;
    size_t end = svg.find('"', at);
    ASSERT_NE(end, std::string::npos);
    std::istringstream list(svg.substr(at, end - at));
    size_t pairs = 0;
    for (std::string pair; list >> pair; ++pairs) {
      size_t comma = pair.find(',');
      ASSERT_NE(comma, std::string::npos) << pair;
      double x = std::stod(pair.substr(0, comma)), y = std::stod(pair.substr(comma + 1));
      EXPECT_GE(x, 90 - 1e-6);
      EXPECT_LE(x, 640 + 1e-6);
      EXPECT_GE(y, 50 - 1e-6);
      EXPECT_LE(y, 430 + 1e-6);
    }
    EXPECT_GE(pairs, 2u);
  }
  EXPECT_EQ(count(svg, "<text"), count(svg, "</text>"));
}

TEST(LossCurve, DrawsAxesTicksTitleAndALegend) {
  CurveSeries train{"loss", {}};
  for (int64_t step = 0; step <= 100; ++step) train.points.emplace_back(step, 3.0 * std::exp(-step / 30.0) + 0.5);
  CurveSeries val{"val.loss", {{0, 3.4}, {50, 1.2}, {100, 0.9}}};
  std::string svg = loss_curve_svg({train, val}, {.title = "tiny-lm", .x_label = "step", .y_label = "nats"});
  expect_well_drawn(svg);
  EXPECT_NE(svg.find(">tiny-lm</text>"), std::string::npos);
  EXPECT_NE(svg.find(">step</text>"), std::string::npos);
  EXPECT_NE(svg.find(">nats</text>"), std::string::npos);
  EXPECT_NE(svg.find(">loss</text>"), std::string::npos);
  EXPECT_NE(svg.find(">val.loss</text>"), std::string::npos);
  EXPECT_EQ(count(svg, "<polyline"), 2u);
  // Round ticks: steps 0 20 ... 100, values 0.5 1 1.5 ...
  for (const char* tick : {">0</text>", ">20</text>", ">100</text>", ">1.5</text>", ">3</text>"}) {
    EXPECT_NE(svg.find(tick), std::string::npos) << tick;
  }
  EXPECT_EQ(svg.find("log scale"), std::string::npos);
}

TEST(LossCurve, OnePointIsADot) {
  std::string svg = loss_curve_svg({{"loss", {{7, 2.5}}}});
  expect_well_drawn(svg);
  EXPECT_EQ(count(svg, "<circle"), 1u);
  EXPECT_EQ(count(svg, "<polyline"), 0u);
}

TEST(LossCurve, NonFiniteValuesAreLeftOutAndBreakTheLine) {
  std::string svg = loss_curve_svg({{"loss", {{0, 3}, {1, 2.5}, {2, kNan}, {3, 2}, {4, 1.8}, {5, kInf}, {6, -kInf}}}});
  expect_well_drawn(svg);
  EXPECT_EQ(count(svg, "<polyline"), 2u);
  std::string none = loss_curve_svg({{"loss", {{0, kNan}, {1, kInf}}}, {"empty", {}}});
  expect_well_drawn(none);
  EXPECT_NE(none.find("no finite values"), std::string::npos);
  expect_well_drawn(loss_curve_svg({}));
}

TEST(LossCurve, HugeAndTinyRangesStillGetTicks) {
  std::string decades = loss_curve_svg({{"loss", {{0, 1e6}, {10, 1e2}, {20, 1e-3}}}});
  expect_well_drawn(decades);
  EXPECT_NE(decades.find("log scale"), std::string::npos);
  EXPECT_NE(decades.find(">1e6</text>"), std::string::npos);
  EXPECT_NE(decades.find(">1e-3</text>"), std::string::npos);
  const double big = std::numeric_limits<double>::max();
  for (const auto& points : std::vector<std::vector<std::pair<int64_t, double>>>{
           {{0, -big}, {1, big}},
           {{0, 1e-300}, {1, 1e300}},
           {{0, 5.0}, {1, 5.0}},
           {{0, 0.0}, {1, 0.0}},
           {{0, 1e16}, {1, 1e16 + 2}},
           {{0, 1e-320}, {1, 2e-320}},
           {{std::numeric_limits<int64_t>::min(), 1}, {std::numeric_limits<int64_t>::max(), 2}},
           {{5, 1.0}, {5, 2.0}},
       }) {
    std::string svg = loss_curve_svg({{"loss", points}});
    SCOPED_TRACE(svg);
    expect_well_drawn(svg);
    EXPECT_GE(count(svg, "stroke=\"#e0e0e0\""), 4u);  // grid lines on both axes
  }
}

TEST(LossCurve, LongSeriesAreThinnedKeepingTheirSpikes) {
  CurveSeries s{"loss", {}};
  for (int64_t step = 0; step < 200000; ++step) s.points.emplace_back(step, step == 123457 ? 50.0 : 1.0);
  std::string svg = loss_curve_svg({s});
  expect_well_drawn(svg);
  EXPECT_LT(svg.size(), 200000u);
  EXPECT_NE(svg.find(">50</text>"), std::string::npos);  // the spike sets the range
}

TEST(LossCurve, TextIsEscaped) {
  std::string svg =
      loss_curve_svg({{"a<b>&\"c\"", {{0, 1}, {1, 2}}}}, {.title = "x & y\x01", .x_label = "step", .y_label = ""});
  EXPECT_NE(svg.find(">a&lt;b&gt;&amp;&quot;c&quot;</text>"), std::string::npos);
  EXPECT_NE(svg.find(">x &amp; y?</text>"), std::string::npos);
}

}  // namespace
}  // namespace sx::report
