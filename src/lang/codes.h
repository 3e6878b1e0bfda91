// lang's diagnostic codes, with their texts (the rows of graph/codes.h).
#pragma once

#include <span>

#include "graph/codes.h"

namespace sx::lang {

// E-READ (reading), E-EVAL and W-EVAL (evaluating), E-SHAPE (shapes and dtypes a builtin
// refuses).
std::span<const graph::CodeInfo> codes();

}  // namespace sx::lang
