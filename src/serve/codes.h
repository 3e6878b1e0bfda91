// serve's diagnostic codes, with their texts (the rows of graph/codes.h).
#pragma once

#include <span>

#include "graph/codes.h"

namespace sx::serve {

// E-SERVE (the server and its protocol).
std::span<const graph::CodeInfo> codes();

}  // namespace sx::serve
