// libFuzzer target: arbitrary bytes read and evaluated in a fresh Interpreter, with
// limits small enough that every input finishes quickly and within memory. A diagnosed
// error (sx::lang::Error) is the expected answer to bad input; anything else is a bug.
//
// The limits are the program's own: a memory limit (what --max-memory sets) of 256 MiB
// for any one request, and a step budget (--max-steps), which also bounds the bytes
// string builtins build (a step per KiB) and so what the requests add up to. scripts/fuzz
// runs it under libFuzzer's -rss_limit_mb as well, so a request that escapes both is
// reported as a failure, never left to exhaust the machine.
#include <cstddef>
#include <cstdint>
#include <string>

#include "graph/memory.h"
#include "lang/diagnostic.h"
#include "lang/interp.h"
#include "lang/printer.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  sx::graph::set_memory_limit(uint64_t{256} << 20);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sx::lang::InterpreterOptions options;
  options.max_steps = 20000;
  options.max_call_depth = 200;
  sx::lang::Interpreter interp(options);
  interp.on_warning = [](const sx::lang::Diagnostic& d) { (void)sx::lang::render(d, false); };
  try {
    auto env = interp.new_top_level();
    sx::lang::Value value = interp.eval_text(std::string(reinterpret_cast<const char*>(data), size), "<fuzz>", *env);
    (void)sx::lang::print(value);
  } catch (const sx::lang::Error& e) {
    (void)sx::lang::render(e.diagnostic(), /*color=*/false);
  }
  return 0;
}
