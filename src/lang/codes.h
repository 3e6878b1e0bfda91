// lang's diagnostic codes, with their texts (the rows of graph/codes.h).
#pragma once

#include <span>

#include "graph/codes.h"

namespace sx::lang {

// E-READ (reading), E-EVAL and W-EVAL (evaluating), E-SHAPE (shapes and dtypes a builtin
// refuses).
std::span<const graph::CodeInfo> codes();

// The codes other parts raise too, by what they mean (codes.cc holds their texts).
inline constexpr const char* kKeywordWithoutValue = "E-EVAL-007";  // `:key` last, with no value
inline constexpr const char* kMalformedForm = "E-EVAL-011";        // a special form not in its shape
inline constexpr const char* kInterrupted = "E-EVAL-020";          // Ctrl-C stopped the evaluation

}  // namespace sx::lang
