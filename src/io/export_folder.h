// The folder `sexpgpu export` writes: a new folder, never one that exists, that appears
// whole or not at all.
//
// Its files go into a hidden temporary folder beside it, PARENT/.NAME.export-PID-N-HOST,
// each flushed to disk; commit() renames that folder to PARENT/NAME in one step, refusing
// (never replacing) a NAME that appeared meanwhile. An error on the way (a full disk, say)
// or a destructor without commit() removes the temporary folder; a process killed while
// writing leaves it under its temporary name, where the next writer of the same NAME on
// this host removes it once its process is gone.
#pragma once

#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "graph/tensor.h"

namespace sx::io {

inline constexpr const char* kExportExists = "E-SERVE-020";      // the folder to write already exists
inline constexpr const char* kExportUnwritable = "E-SERVE-021";  // creating, writing, flushing, renaming

class ExportError : public std::runtime_error {
 public:
  ExportError(std::string code, std::string message);
  const std::string& code() const { return code_; }

 private:
  std::string code_;
};

// kExportExists when `path` exists (a file, a folder, a link); kExportUnwritable when it
// cannot be told.
void refuse_existing_export(const std::string& path);

class ExportFolderWriter {
 public:
  // Refuses a `path` that exists (refuse_existing_export); creates its parent folders and the
  // temporary folder (kExportUnwritable when it cannot), clearing stale temporaries of
  // the same name first.
  explicit ExportFolderWriter(std::string path);
  ExportFolderWriter(const ExportFolderWriter&) = delete;
  ExportFolderWriter& operator=(const ExportFolderWriter&) = delete;
  ~ExportFolderWriter();

  // Each writes the file `name` (a plain file name) into the folder; kExportUnwritable
  // naming the file under the folder's own path when it cannot.
  void write_bytes(std::string_view name, std::string_view bytes);
  void write_tensors(std::string_view name, const std::vector<std::pair<std::string, graph::Tensor>>& tensors,
                     const std::map<std::string, std::string>& metadata = {});

  // Flushes the folder and renames it into place; kExportExists when `path` exists by now.
  void commit();

  const std::string& path() const { return path_; }
  const std::string& temporary_path() const { return temp_; }

 private:
  std::string file_path(std::string_view name) const;

  std::string path_, temp_;
  bool committed_ = false;
};

// The temporary folders of exports to `path` that this host's dead processes left behind,
// removed; returns how many.
int remove_stale_exports(const std::string& path);

}  // namespace sx::io
