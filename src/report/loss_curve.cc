// Drawing the loss curve (see loss_curve.h): ranges, ticks, and the SVG text.
#include "report/loss_curve.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace sx::report {
namespace {

// The canvas and the plot's box within it.
constexpr double kWidth = 820, kHeight = 500;
constexpr double kLeft = 90, kRight = 640, kTop = 50, kBottom = 430;
constexpr int kMaxTicks = 12;
// Series longer than this are thinned to the extremes of this many columns.
constexpr size_t kThinAbove = 4000;
constexpr size_t kColumns = 1500;

constexpr const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                   "#9467bd", "#8c564b", "#e377c2", "#17becf"};

std::string escaped(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // XML 1.0 has no other control characters.
        out += static_cast<unsigned char>(c) < 0x20 && c != '\t' ? '?' : c;
    }
  }
  return out;
}

// A closed range [lo, hi] with lo < hi, kept finite: widths are taken as hi/2 - lo/2 so
// that -1e308..1e308 does not overflow.
struct Range {
  double lo, hi;

  // 0 at lo, 1 at hi.
  double fraction(double v) const { return (v / 2 - lo / 2) / (hi / 2 - lo / 2); }
};

// A range around the values, padded when they are all one value.
Range range_of(double lo, double hi) {
  if (lo < hi) return {lo, hi};
  double pad = lo == 0 ? 1 : std::abs(lo) * 0.05;
  double a = lo - pad, b = hi + pad;
  if (!std::isfinite(a) || !std::isfinite(b) || !(a < b)) {
    a = lo == 0 ? -1 : std::nextafter(lo, -std::numeric_limits<double>::infinity());
    b = lo == 0 ? 1 : std::nextafter(hi, std::numeric_limits<double>::infinity());
  }
  return {a, b};
}

// Ticks at a round step (1, 2 or 5 times a power of ten) within the range; the range's
// ends when no round step fits (a range too narrow for doubles).
std::vector<double> linear_ticks(const Range& r, bool integers) {
  double width = r.hi / 2 - r.lo / 2;  // half the width, finite
  double raw = width / 3;              // about six ticks
  double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = 0;
  if (std::isfinite(magnitude) && magnitude > 0) {
    double residual = raw / magnitude;
    step = (residual < 1.5 ? 1 : residual < 3.5 ? 2 : residual < 7.5 ? 5 : 10) * magnitude;
  }
  if (integers) step = std::max(1.0, std::round(step));
  std::vector<double> ticks;
  double first = std::ceil(r.lo / step) * step;
  if (step > 0 && std::isfinite(step) && std::isfinite(first)) {
    for (int i = 0; i < kMaxTicks * 2; ++i) {
      double t = first + i * step;
      if (t > r.hi) break;
      if (ticks.empty() || t > ticks.back()) ticks.push_back(t);
    }
  }
  if (ticks.size() < 2) ticks = {r.lo, r.hi};
  while (ticks.size() > static_cast<size_t>(kMaxTicks)) {
    std::vector<double> fewer;
    for (size_t i = 0; i < ticks.size(); i += 2) fewer.push_back(ticks[i]);
    ticks = std::move(fewer);
  }
  return ticks;
}

// A tick's label, with enough digits to tell neighbours `step` apart.
std::string tick_label(double value, double step) {
  if (value == 0 || std::abs(value) < std::abs(step) * 1e-9) return "0";
  if (std::abs(value) < 1e15 && step >= 1 && value == std::round(value)) {
    return fmt::format("{}", static_cast<int64_t>(value));
  }
  int exponent = static_cast<int>(std::floor(std::log10(std::abs(value))));
  int digits = 3;
  if (step > 0 && std::isfinite(step)) digits = exponent - static_cast<int>(std::floor(std::log10(step))) + 2;
  // Short of exponent notation for ordinary magnitudes: 1200, not 1.2e+03.
  if (exponent >= 0 && exponent < 15) digits = std::max(digits, exponent + 1);
  return fmt::format("{:.{}g}", value, std::clamp(digits, 2, 17));
}

std::string format_coordinate(double v) { return fmt::format("{:.2f}", v); }

// A series' points sorted by step; long ones thinned to each column's smallest and
// largest value (non-finite values kept, as the breaks they make).
std::vector<std::pair<int64_t, double>> drawn_points(const CurveSeries& s) {
  auto points = s.points;
  std::stable_sort(points.begin(), points.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  if (points.size() <= kThinAbove) return points;
  std::vector<std::pair<int64_t, double>> out;
  size_t per = (points.size() + kColumns - 1) / kColumns;
  for (size_t begin = 0; begin < points.size(); begin += per) {
    size_t end = std::min(points.size(), begin + per);
    size_t low = end, high = end;
    bool broken = false;
    for (size_t i = begin; i < end; ++i) {
      double v = points[i].second;
      if (!std::isfinite(v)) {
        broken = true;
        continue;
      }
      if (low == end || v < points[low].second) low = i;
      if (high == end || v > points[high].second) high = i;
    }
    if (low != end) out.push_back(points[std::min(low, high)]);
    if (high != end && high != low) out.push_back(points[std::max(low, high)]);
    if (broken) out.emplace_back(points[end - 1].first, std::numeric_limits<double>::quiet_NaN());
  }
  return out;
}

}  // namespace

std::string loss_curve_svg(const std::vector<CurveSeries>& series, const CurveOptions& options) {
  std::vector<std::vector<std::pair<int64_t, double>>> drawn;
  double x_lo = std::numeric_limits<double>::infinity(), x_hi = -x_lo;
  double y_lo = x_lo, y_hi = -x_lo;
  bool any = false;
  for (const auto& s : series) {
    drawn.push_back(drawn_points(s));
    for (const auto& [step, value] : drawn.back()) {
      if (!std::isfinite(value)) continue;
      any = true;
      x_lo = std::min(x_lo, static_cast<double>(step));
      x_hi = std::max(x_hi, static_cast<double>(step));
      y_lo = std::min(y_lo, value);
      y_hi = std::max(y_hi, value);
    }
  }
  if (!any) x_lo = 0, x_hi = 1, y_lo = 0, y_hi = 1;
  const bool log_y = any && y_lo > 0 && y_hi / y_lo >= 1000;
  auto y_of = [&](double v) { return log_y ? std::log10(v) : v; };
  Range xr = range_of(x_lo, x_hi);
  Range yr = range_of(y_of(y_lo), y_of(y_hi));
  if (log_y) {
    yr = {std::floor(yr.lo), std::ceil(yr.hi)};
  } else {
    // A margin, so that the curve does not run along the frame.
    double pad = (yr.hi / 2 - yr.lo / 2) * 0.1;
    if (std::isfinite(yr.lo - pad) && std::isfinite(yr.hi + pad) && yr.lo - pad < yr.lo) {
      yr = {yr.lo - pad, yr.hi + pad};
    }
  }

  auto px = [&](double step) { return kLeft + xr.fraction(step) * (kRight - kLeft); };
  auto py = [&](double value) { return kBottom - yr.fraction(y_of(value)) * (kBottom - kTop); };

  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"{0}\" height=\"{1}\" fill=\"white\"/>\n"
      "<text x=\"{2}\" y=\"28\" font-size=\"16\" text-anchor=\"middle\">{3}</text>\n",
      kWidth, kHeight, (kLeft + kRight) / 2, escaped(options.title));

  // Grid lines, ticks and labels.
  std::vector<double> x_ticks = linear_ticks(xr, true);
  double x_step = x_ticks.size() > 1 ? x_ticks[1] - x_ticks[0] : 1;
  for (double t : x_ticks) {
    std::string x = format_coordinate(px(t));
    svg += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#e0e0e0\"/>\n", x, kTop, kBottom);
    svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", x, kBottom + 18,
                       escaped(tick_label(t, x_step)));
  }
  std::vector<double> y_ticks;
  if (log_y) {
    double decades = yr.hi - yr.lo;
    double every = std::max(1.0, std::ceil(decades / (kMaxTicks - 1)));
    for (double k = yr.lo; k <= yr.hi; k += every) y_ticks.push_back(k);
  } else {
    y_ticks = linear_ticks(yr, false);
  }
  double y_step = y_ticks.size() > 1 ? y_ticks[1] - y_ticks[0] : 1;
  for (double t : y_ticks) {
    double at = kBottom - yr.fraction(t) * (kBottom - kTop);
    std::string y = format_coordinate(at);
    std::string label = log_y ? fmt::format("1e{}", static_cast<int64_t>(t)) : tick_label(t, y_step);
    svg += fmt::format("<line x1=\"{1}\" y1=\"{0}\" x2=\"{2}\" y2=\"{0}\" stroke=\"#e0e0e0\"/>\n", y, kLeft, kRight);
    svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", kLeft - 6, format_coordinate(at + 4),
                       escaped(label));
  }
  svg += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"black\"/>\n", kLeft,
                     kTop, kRight - kLeft, kBottom - kTop);
  svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", (kLeft + kRight) / 2, kBottom + 40,
                     escaped(options.x_label));
  std::string y_label = options.y_label;
  if (log_y) y_label += y_label.empty() ? "(log scale)" : " (log scale)";
  if (!y_label.empty()) {
    svg += fmt::format("<text x=\"20\" y=\"{0}\" text-anchor=\"middle\" transform=\"rotate(-90 20 {0})\">{1}</text>\n",
                       (kTop + kBottom) / 2, escaped(y_label));
  }
  if (!any) {
    svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#808080\">no finite values</text>\n",
                       (kLeft + kRight) / 2, (kTop + kBottom) / 2);
  }

  // The series: polylines broken at non-finite values, a dot for a lone point.
  for (size_t i = 0; i < drawn.size(); ++i) {
    const char* color = kColors[i % std::size(kColors)];
    std::vector<std::string> run;
    auto flush = [&] {
      if (run.size() == 1) {
        size_t comma = run[0].find(',');
        svg += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"3\" fill=\"{}\"/>\n", run[0].substr(0, comma),
                           run[0].substr(comma + 1), color);
      } else if (run.size() > 1) {
        std::string points;
        for (const auto& p : run) points += (points.empty() ? "" : " ") + p;
        svg +=
            fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\" points=\"{}\"/>\n", color, points);
      }
      run.clear();
    };
    for (const auto& [step, value] : drawn[i]) {
      if (!std::isfinite(value)) {
        flush();
        continue;
      }
      run.push_back(format_coordinate(px(static_cast<double>(step))) + "," + format_coordinate(py(value)));
    }
    flush();
    double legend_y = kTop + 10 + 20 * static_cast<double>(i);
    svg += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"3\"/>\n",
                       kRight + 15, legend_y, kRight + 40, legend_y, color);
    svg += fmt::format("<text x=\"{}\" y=\"{}\">{}</text>\n", kRight + 46, legend_y + 4, escaped(series[i].name));
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace sx::report
