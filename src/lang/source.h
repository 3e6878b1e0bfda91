// Source files and spans: where every form and every diagnostic comes from.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace sx::lang {

// A source file's text, kept alive for as long as any span points into it.
class SourceFile {
 public:
  SourceFile(std::string path, std::string text);
  ~SourceFile();
  SourceFile(const SourceFile&) = delete;
  SourceFile& operator=(const SourceFile&) = delete;

  // Whether `file` is a source file that exists now. A diagnostic can outlive the
  // interpreter whose files its spans point into; it is rendered without them then.
  static bool is_loaded(const SourceFile* file);

  const std::string& path() const { return path_; }
  const std::string& text() const { return text_; }

  // 1-based line of a byte offset.
  uint32_t line_of(uint32_t offset) const;
  // 1-based column of a byte offset, counted in code points.
  uint32_t column_of(uint32_t offset) const;
  // The text of a 1-based line, without its newline.
  std::string_view line_text(uint32_t line) const;
  uint32_t line_count() const { return static_cast<uint32_t>(line_starts_.size()); }
  uint32_t line_start(uint32_t line) const { return line_starts_[line - 1]; }
  // Where the text begins: after the UTF-8 byte-order mark some editors write first,
  // which is not part of the program (the reader skips it; columns do not count it).
  uint32_t start() const { return line_starts_[0]; }

 private:
  std::string path_;
  std::string text_;
  std::vector<uint32_t> line_starts_;
};

// A byte range of one source file. A default span points nowhere.
struct Span {
  const SourceFile* file = nullptr;
  uint32_t offset = 0;
  uint32_t length = 0;

  bool known() const { return file != nullptr; }
  // Whether it points into a file that is still loaded, within its text: only then can
  // a diagnostic show its line.
  bool in_loaded_source() const;
  // "file.sx:3:20" (a long path shortened as messages shorten it), or "<unknown>" for a
  // span that points nowhere, or into no loaded source.
  std::string location() const;
  // The smallest span covering both, when they are in the same file.
  Span to(const Span& end) const;
};

// Owns every source file read during one evaluation, so spans stay valid.
class SourceMap {
 public:
  const SourceFile& add(std::string path, std::string text);

 private:
  std::vector<std::unique_ptr<SourceFile>> files_;
};

}  // namespace sx::lang
