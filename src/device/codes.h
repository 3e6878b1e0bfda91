// device's diagnostic codes, with their texts (the rows of graph/codes.h).
#pragma once

#include <span>

#include "graph/codes.h"

namespace sx::device {

// E-DEVICE (devices).
std::span<const graph::CodeInfo> codes();

// A gather or scatter's index outside its axis (graph::IndexOutOfRange, raised by whoever
// runs the plan; codes.cc holds the text).
inline constexpr const char* kIndexOutsideAxis = "E-DEVICE-004";

}  // namespace sx::device
