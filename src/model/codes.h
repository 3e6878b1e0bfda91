// model's diagnostic codes, with their texts (the rows of graph/codes.h).
#pragma once

#include <span>

#include "graph/codes.h"

namespace sx::model {

// E-PARAM and W-PARAM (models and parameters).
std::span<const graph::CodeInfo> codes();

// A parameter input that no root reaches is read (codes.cc holds the text).
inline constexpr const char* kParameterWithoutRoot = "E-PARAM-009";

}  // namespace sx::model
