// What checkpoint.cc, storage_checkpoint.cc and util.cc share: the names of temporaries (a
// folder being written or removed, a file being written atomically, or on S3 the object
// that says a checkpoint is being uploaded), whose they are, and whether they are stale.
// Internal to src/io.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sx::io {

// ".step-00000020.KIND-PID-N-HOST", KIND "tmp" (being written) or "old" (being removed):
// hidden, and never of the form step-%08d.
std::string temporary_name(int64_t step, std::string_view kind);

// The process id and host of a temporary's name, when it is one: a checkpoint's folder as
// above, or a file being written atomically (AtomicFile), ".NAME.tmp-PID-N-HOST".
struct TempOwner {
  long pid;
  std::string host;
};
std::optional<TempOwner> temporary_owner(std::string_view name);

// Marks a temporary of this process as being written now (live) or no longer.
void set_live(const std::string& name, bool live);
// Whether `name` is a temporary that its writer left behind: one of this host whose
// process is gone, or this process's own that it is not writing now. Another host's is
// never stale (its processes cannot be asked).
bool is_stale_temporary(std::string_view name);

}  // namespace sx::io
