// Line and column lookup for spans.
#include "lang/source.h"

#include <fmt/format.h>

#include <algorithm>

#include "graph/shown.h"

namespace sx::lang {
SourceFile::SourceFile(std::string path, std::string text) : path_(std::move(path)), text_(std::move(text)) {
  line_starts_.push_back(text_.starts_with("\xEF\xBB\xBF") ? 3 : 0);
  for (uint32_t i = 0; i < text_.size(); ++i) {
    if (text_[i] == '\n') line_starts_.push_back(i + 1);
  }
}

uint32_t SourceFile::line_of(uint32_t offset) const {
  auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
  return std::max<uint32_t>(1, static_cast<uint32_t>(it - line_starts_.begin()));  // a byte-order mark is line 1
}

uint32_t SourceFile::column_of(uint32_t offset) const {
  uint32_t start = line_starts_[line_of(offset) - 1];
  uint32_t column = 1;
  for (uint32_t i = start; i < offset && i < text_.size(); ++i) {
    // Count code points: skip UTF-8 continuation bytes.
    if ((static_cast<unsigned char>(text_[i]) & 0xC0) != 0x80) ++column;
  }
  return column;
}

std::string_view SourceFile::line_text(uint32_t line) const {
  uint32_t start = line_starts_[line - 1];
  uint32_t end = line < line_starts_.size() ? line_starts_[line] : static_cast<uint32_t>(text_.size());
  std::string_view text(text_.data() + start, end - start);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
  return text;
}

bool Span::in_text() const { return file && offset <= file->text().size(); }

std::string Span::location() const {
  if (!in_text()) return "<unknown>";
  return fmt::format("{}:{}:{}", graph::shown_in_message(file->path()), file->line_of(offset), file->column_of(offset));
}

Span Span::to(const Span& end) const {
  if (!file || file != end.file || end.offset < offset) return *this;
  return Span{file, offset, std::max(length, end.offset + end.length - offset)};
}

const SourceFile& SourceMap::add(std::string path, std::string text) {
  files_.push_back(SourceFile::make(std::move(path), std::move(text)));
  return *files_.back();
}

}  // namespace sx::lang
