// The headers NVRTC compiles the generated kernels with, built into the program (by
// embed_headers.cmake) so that it needs no source tree where it runs: element_math.h,
// graph/prims/scalar.h and what it includes, and nvrtc_std.h under the names of the
// standard headers it stands for.
#pragma once

#include <span>

namespace sx::device::cuda {

struct EmbeddedHeader {
  const char* name;  // as the kernels include it: "graph/prims/scalar.h", "cmath"
  const char* text;
};

std::span<const EmbeddedHeader> nvrtc_headers();

}  // namespace sx::device::cuda
