// io's diagnostic codes, with their texts (the rows of graph/codes.h).
#pragma once

#include <span>

#include "graph/codes.h"

namespace sx::io {

// E-LOAD (parameters read from files), E-CKPT (checkpoints) and E-LOC (locations and the
// storage behind them).
std::span<const graph::CodeInfo> codes();

}  // namespace sx::io
