// The library's diagnostic codes, with their texts (the rows of graph/codes.h).
#pragma once

#include <span>

#include "graph/codes.h"

namespace sx::library {

inline constexpr const char* kBadHandle = "E-API-001";       // a null or closed model, a null pointer
inline constexpr const char* kCallDoesNotFit = "E-API-002";  // a count or a buffer size not the model's
inline constexpr const char* kBadOptions = "E-API-003";      // sexpgpu_options of a size this library cannot read
inline constexpr const char* kTooManyAxes = "E-API-004";     // an input or output of more than 8 axes
inline constexpr const char* kInternal = "E-API-005";        // a failure the library did not foresee: a bug

// E-API (the C API, include/sexpgpu.h).
std::span<const graph::CodeInfo> codes();

}  // namespace sx::library
