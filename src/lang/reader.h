// The reader: UTF-8 source text to forms, each with its span.
#pragma once

#include <string>
#include <vector>

#include "lang/diagnostic.h"
#include "lang/value.h"

namespace sx::lang {

struct Form {
  Value value;
  Span span;
};

struct ReaderLimits {
  size_t max_depth = 1000;
  size_t max_file_bytes = 64u << 20;
  size_t max_line_bytes = 1u << 20;
};

// Reads every top-level form of a file; throws Error with an E-READ code.
std::vector<Form> read_forms(const SourceFile& file, const ReaderLimits& limits = {});

// Reads a source file from disk into `sources`; E-READ-010 when it cannot be read,
// E-READ-009 when it is too large (checked before reading it).
const SourceFile& load_source_file(SourceMap& sources, const std::string& path, const ReaderLimits& limits = {});

// Whether a read error of `text` means "more text would complete it" (the REPL keeps reading).
bool is_incomplete_input(const Error& error, std::string_view text);

}  // namespace sx::lang
