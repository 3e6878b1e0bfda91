// The records of each family of primitives, as src/graph/prims/ groups them;
// samples.cc joins them into records().
#pragma once

#include <vector>

#include "samples/samples.h"

namespace sx::samples {

std::vector<Record> source_and_shape_records();    // records_shape.cc
std::vector<Record> elementwise_records();         // records_elementwise.cc
std::vector<Record> reduce_records();              // records_reduce.cc: reductions and matmul
std::vector<Record> index_records();               // records_index.cc: index and random
std::vector<Record> composite_records();           // records_composite.cc: composites and updates
std::vector<Record> composite_gradient_records();  // records_composite_gradient.cc

}  // namespace sx::samples
