// train's diagnostic codes, with their texts (the rows of graph/codes.h).
#pragma once

#include <span>

#include "graph/codes.h"

namespace sx::train {

// E-RUN and W-RUN (the run file and its run), E-INFER (the model alone).
std::span<const graph::CodeInfo> codes();

}  // namespace sx::train
