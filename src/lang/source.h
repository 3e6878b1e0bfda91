// Source files and spans: where every form and every diagnostic comes from.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sx::lang {

class SourceFile;

// A counted reference to a source file: every span holds one, so a file's text lives as
// long as anything points into it, and no longer (a REPL entry's, once its values and
// definitions are gone). Counted atomically: a loader's error is made on its own thread.
class SourceRef {
 public:
  SourceRef() = default;
  SourceRef(const SourceFile* file);  // NOLINT: implicit, as the pointer it stands for
  SourceRef(const SourceRef& other) : SourceRef(other.file_) {}
  SourceRef(SourceRef&& other) noexcept : file_(std::exchange(other.file_, nullptr)) {}
  SourceRef& operator=(SourceRef other) noexcept {
    std::swap(file_, other.file_);
    return *this;
  }
  ~SourceRef();

  const SourceFile* operator->() const { return file_; }
  const SourceFile& operator*() const { return *file_; }
  explicit operator bool() const { return file_ != nullptr; }
  friend bool operator==(const SourceRef& a, const SourceRef& b) { return a.file_ == b.file_; }

 private:
  const SourceFile* file_ = nullptr;
};

// A source file's text, kept alive for as long as any span points into it.
class SourceFile {
 public:
  // A new source file; it lives while a reference to it does.
  static SourceRef make(std::string path, std::string text) { return new SourceFile(std::move(path), std::move(text)); }
  SourceFile(const SourceFile&) = delete;
  SourceFile& operator=(const SourceFile&) = delete;

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
  friend class SourceRef;
  SourceFile(std::string path, std::string text);

  std::string path_;
  std::string text_;
  std::vector<uint32_t> line_starts_;
  mutable std::atomic<size_t> refs_{0};
};

inline SourceRef::SourceRef(const SourceFile* file) : file_(file) {
  if (file_) file_->refs_.fetch_add(1, std::memory_order_relaxed);
}

inline SourceRef::~SourceRef() {
  if (file_ && file_->refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete file_;
}

// A byte range of one source file. A default span points nowhere.
struct Span {
  SourceRef file;
  uint32_t offset = 0;
  uint32_t length = 0;

  bool known() const { return static_cast<bool>(file); }
  // Whether it points into its file's text: only then can a diagnostic show its line.
  bool in_text() const;
  // "file.sx:3:20" (a long path shortened as messages shorten it), or "<unknown>" for a
  // span that points nowhere, or past its file's text.
  std::string location() const;
  // The smallest span covering both, when they are in the same file.
  Span to(const Span& end) const;
};

// Keeps every source file added to it for as long as it lives: the files an evaluation
// reads (the run file, its modules, builtins' lambda lists). Text that comes and goes,
// such as a REPL entry, is made with SourceFile::make instead, held by its spans alone.
class SourceMap {
 public:
  const SourceFile& add(std::string path, std::string text);

 private:
  std::vector<SourceRef> files_;
};

}  // namespace sx::lang
