// Where a source names the files a bundle copies: the file of a `:load` vector, of a
// `with-loaded` header, the path argument of a loader (text-windows, token-windows,
// records, jsonl) and of `tokenizer`, and the model folder of `hf-model`, found in the
// forms the reader gives with their spans. A path written
// there as a string literal is rewritten in place (the literal's span of the text, so the
// rest of the source keeps its bytes); any other is computed, and left as it is.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lang/reader.h"

namespace sx::bundle {

// What a site's path names: a file read as it is, a tensor file (a `.json` one an index
// of shards), or a folder of Hugging Face files that hf-model reads by their names.
enum class PathKind { File, Tensors, ModelFolder };

struct PathSite {
  std::string form;                    // "defparam :load", "with-loaded", "jsonl", ...
  lang::Span span;                     // the literal's token (quotes included), or the expression
  std::optional<std::string> literal;  // the path, when written as a string
  PathKind kind = PathKind::File;
};

// Every site of `file`, in the order of the text. Throws lang::Error (E-READ) when the
// file does not read.
std::vector<PathSite> path_sites(const lang::SourceFile& file, const lang::ReaderLimits& limits = {});

// A replacement of the bytes at [offset, offset + length) of a text.
struct Edit {
  uint32_t offset = 0;
  uint32_t length = 0;
  std::string text;
};

// `text` with each edit's bytes replaced (edits apart, in any order); every other byte kept.
std::string apply_edits(std::string_view text, std::vector<Edit> edits);

// A path as a string literal the reader reads back as it: quoted, with its escapes.
std::string string_literal(const std::string& path);

}  // namespace sx::bundle
