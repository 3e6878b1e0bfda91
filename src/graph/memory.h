// The process's memory limit (docs/limits.md): the most bytes one request may ask
// for, refused before anything is allocated. A request is a tensor node the builder
// makes, the buffers of a compiled program, or a list or string a builtin builds in
// one call. It bounds each request, not the sum of everything alive: the request too
// large for the machine is a diagnostic (E-MEM-001) instead of a std::bad_alloc or a
// process killed by the kernel.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace sx::graph {

// A request over the limit. Not a GraphError: code that turns a GraphError into a
// shape error must let this one through to be reported as E-MEM-001.
class MemoryLimitError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The code of a request over the limit, and of memory the machine refused (codes.cc holds
// its text).
inline constexpr const char* kOverMemoryLimit = "E-MEM-001";

// What every E-MEM-001 diagnostic suggests.
inline constexpr std::string_view kMemoryLimitHelp =
    "ask for less, or raise the limit with --max-memory SIZE or SEXPGPU_MAX_MEMORY (docs/limits.md)";

// E-MEM-001 for a std::bad_alloc, `doing` what ran out ("evaluating this form"): the
// machine refused memory the limit allowed. Its message, and what it suggests.
std::string out_of_memory_message(std::string_view doing);
inline constexpr std::string_view kOutOfMemoryHelp =
    "the machine had less memory to give than the limit allows: lower it with --max-memory or SEXPGPU_MAX_MEMORY, "
    "so that a request too large is refused by name, or ask for less";

// The limit in bytes: what set_memory_limit set; none (2^64 - 1) until then. Graph knows
// nothing of the machine: the commands set it (cli/common.h), by default to
// device::default_memory_limit().
uint64_t memory_limit();
// `bytes` > 0; for the whole process, from then on.
void set_memory_limit(uint64_t bytes);

// Throws MemoryLimitError for `bytes` asked by `what` (what asks for them, e.g.
// "`range`: a list of 100000000 items"), naming the bytes and the limit.
[[noreturn]] void refuse_memory(std::string_view what, double bytes);
// refuse_memory(what(), bytes) when `bytes` exceed the limit; `what` is called only
// then, so a request within it formats nothing. `bytes` is a double: a product of
// sizes may pass 2^64.
template <class What>
void check_memory(double bytes, What&& what) {
  if (bytes > static_cast<double>(memory_limit())) refuse_memory(what(), bytes);
}

// A size as --max-memory and SEXPGPU_MAX_MEMORY take it: decimal digits, then
// optionally K, M, G or T (either case; powers of 1024). nullopt for anything else,
// for 0, and for a size past 2^64.
std::optional<uint64_t> parse_size(std::string_view text);
// "67108864 bytes (64.0 MiB)": exact, then readable.
std::string bytes_text(double bytes);

}  // namespace sx::graph
