// device's diagnostic codes, with their texts (the rows of graph/codes.h).
#pragma once

#include <span>

#include "graph/codes.h"

namespace sx::device {

// E-DEVICE (devices).
std::span<const graph::CodeInfo> codes();

}  // namespace sx::device
