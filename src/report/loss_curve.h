// The loss-curve picture a run writes when it ends: a self-contained SVG of one or more
// series of (step, value) points (the training loss, each eval metric), with axes, tick
// labels, a title and a legend, drawn by the program (no plotting library).
//
// Non-finite values are left out (a line breaks around them); one point is drawn as a
// dot; a series spanning more than three decades of positive values turns the y axis
// logarithmic; any finite range, however large or small, gets ticks and labels; a long
// series is thinned to the smallest and largest value per pixel column, so spikes stay.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace sx::report {

struct CurveSeries {
  std::string name;                                // the legend's label: "loss", "val.loss"
  std::vector<std::pair<int64_t, double>> points;  // (step, value), in any order
};

struct CurveOptions {
  std::string title = "loss";
  std::string x_label = "step";
  std::string y_label;  // none by default
};

// The picture as SVG text.
std::string loss_curve_svg(const std::vector<CurveSeries>& series, const CurveOptions& options = {});

}  // namespace sx::report
