// model's diagnostic codes, with their texts (the rows of graph/codes.h).
#pragma once

#include <span>

#include "graph/codes.h"

namespace sx::model {

// E-PARAM and W-PARAM (models and parameters).
std::span<const graph::CodeInfo> codes();

}  // namespace sx::model
