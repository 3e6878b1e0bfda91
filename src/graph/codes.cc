// The texts of graph's diagnostic codes: E-MEM (the memory limit, graph/memory.h).
// Codes are never reused: a retired code keeps its row and says so.
#include "graph/codes.h"

namespace sx::graph {
namespace {

constexpr CodeInfo kCodes[] = {
    {"E-MEM-001", "a request over the memory limit",
     R"(A form asked for more memory than the memory limit allows, and was refused before
anything was allocated. The message names the request (a tensor's shape and dtype, a
list's items, a string, the buffers of a program the device compiled), the bytes it
needs and the limit; the span points at the form that asked.

    (zeros [1000000 1000000])       ; a 4 TB tensor
    (range 100000000)               ; a list of a hundred million items

The limit is `--max-memory SIZE` (8G, 512M, 64K, or bytes), else the SEXPGPU_MAX_MEMORY
variable, else 3/4 of the machine's memory (or of its cgroup's limit, when that is
lower). It bounds each request, not the sum of everything alive at once. Ask for less,
or raise the limit when the machine has the memory.

The same code reports an allocation the machine refused although the limit allowed
it ("ran out of memory"): lower the limit to what the machine can give, so that a
request too large is refused by name. docs/limits.md lists every limit.)"},
};

}  // namespace

std::span<const CodeInfo> codes() { return kCodes; }

}  // namespace sx::graph
