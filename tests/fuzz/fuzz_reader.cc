// libFuzzer target: arbitrary bytes through the reader. A diagnosed error (sx::lang::Error)
// is the expected answer to bad input; anything else (a crash, a sanitizer report, another
// exception, a hang) is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include "lang/diagnostic.h"
#include "lang/printer.h"
#include "lang/reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sx::lang::SourceRef file =
      sx::lang::SourceFile::make("<fuzz>", std::string(reinterpret_cast<const char*>(data), size));
  try {
    auto forms = sx::lang::read_forms(*file);
    // Printing must not fail on anything the reader produced.
    for (const auto& form : forms) (void)sx::lang::print(form.value);
  } catch (const sx::lang::Error& e) {
    // Rendering the diagnostic walks the span back into the source: exercise it too.
    (void)sx::lang::render(e.diagnostic(), /*color=*/false);
  }
  return 0;
}
