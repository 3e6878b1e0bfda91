// Checkpoint folders: written under a temporary name and renamed when complete (see
// checkpoint.h).
#include "io/checkpoint.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <set>

#include "graph/shown.h"
#include "io/checkpoint_files.h"
#include "io/checkpoint_internal.h"
#include "io/checksum.h"
#include "io/location.h"
#include "io/safetensors.h"
#include "io/storage_checkpoint.h"
#include "io/util.h"

namespace sx::io {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kPrefix = "step-";
constexpr int kDigits = 8;
// Temporary folders: ".step-00000020.tmp-PID-N-HOST" while written, ".step-00000020.old-
// PID-N-HOST" while removed or replaced.
constexpr std::string_view kTempPrefix = ".step-";

[[noreturn]] void unwritable(const std::string& path, std::string_view doing, int err) {
  throw CheckpointError(kCheckpointUnwritable,
                        fmt::format("{}: cannot {}: {}", graph::shown_in_message(path), doing, std::strerror(err)));
}

// The location a checkpoint location names, resolved: a local folder ("." for ""), or a
// storage location; any other scheme is E-CKPT-004, a malformed s3:// or o41:// its E-LOC code.
ResolvedLocation checkpoint_location(const std::string& location) {
  if (location.empty()) return {location, ".", "", ""};
  try {
    return resolve_location(location);
  } catch (const LoadError& e) {
    throw CheckpointError(e.code() == kUnknownScheme ? kCheckpointLocation : e.code(), e.what());
  }
}

void fsync_path(const std::string& path, bool directory, const std::string& shown_as) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | (directory ? O_DIRECTORY : 0));
  if (fd < 0) unwritable(shown_as, "open it to flush it to disk", errno);
  if (::fsync(fd) != 0) {
    int err = errno;
    ::close(fd);
    // Some file systems cannot flush a directory; the files themselves are flushed.
    if (directory && (err == EINVAL || err == ENOTSUP)) return;
    unwritable(shown_as, "flush it to disk", err);
  }
  ::close(fd);
}

// Removes a folder: renamed to a temporary name first, so that it is never seen half
// removed under its own name, then removed. Errors are left for remove_stale_temporaries.
void remove_folder(const std::string& dir, const std::string& path, int64_t step) {
  std::string doomed = (fs::path(dir) / temporary_name(step, "old")).string();
  if (::rename(path.c_str(), doomed.c_str()) != 0) unwritable(path, "rename it away to remove it", errno);
  std::error_code ec;
  fs::remove_all(doomed, ec);
}

void create_location(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    throw CheckpointError(kCheckpointUnwritable, fmt::format("{}: cannot create the checkpoint folder: {}",
                                                             graph::shown_in_message(dir), ec.message()));
  }
  if (!fs::is_directory(dir, ec)) {
    throw CheckpointError(kCheckpointUnwritable, fmt::format("{}: not a folder", graph::shown_in_message(dir)));
  }
}

}  // namespace

// --- Temporary names (checkpoint_internal.h) -------------------------------------------

namespace {
// The temporary folders this process is writing now: never stale.
std::mutex live_mutex;
std::set<std::string> live_temporaries;
}  // namespace

std::string temporary_name(int64_t step, std::string_view kind) {
  static std::atomic<uint64_t> counter{0};
  return fmt::format(".{}.{}-{}-{}-{}", checkpoint_name(step), kind, ::getpid(), counter++, host_name());
}

std::optional<TempOwner> temporary_owner(std::string_view name) {
  if (!name.starts_with('.')) return std::nullopt;
  // The first ".tmp-" or ".old-" after the hidden name: a file's name may hold dots, a
  // host's name dots and dashes, but not the process id and counter in between.
  for (size_t dot = name.find('.', 1); dot != std::string_view::npos; dot = name.find('.', dot + 1)) {
    std::string_view rest = name.substr(dot + 1);
    if (!rest.starts_with("tmp-") && !rest.starts_with("old-")) continue;
    rest = rest.substr(4);
    size_t dash = rest.find('-');
    if (dash == std::string_view::npos || dash == 0) continue;
    long pid = 0;
    bool digits = true;
    for (char c : rest.substr(0, dash)) {
      if (c < '0' || c > '9' || pid > 1'000'000'000) digits = false;
      else pid = pid * 10 + (c - '0');
    }
    rest = rest.substr(dash + 1);
    size_t counter_end = rest.find('-');
    if (!digits || counter_end == std::string_view::npos || counter_end == 0 ||
        rest.substr(0, counter_end).find_first_not_of("0123456789") != std::string_view::npos ||
        counter_end + 1 == rest.size()) {
      continue;
    }
    return TempOwner{pid, std::string(rest.substr(counter_end + 1))};
  }
  return std::nullopt;
}

void set_live(const std::string& name, bool live) {
  std::lock_guard lock(live_mutex);
  if (live) live_temporaries.insert(name);
  else live_temporaries.erase(name);
}

bool is_stale_temporary(std::string_view name) {
  auto owner = temporary_owner(name);
  if (!owner || owner->host != host_name()) return false;
  if (owner->pid == ::getpid()) {
    std::lock_guard lock(live_mutex);
    return live_temporaries.count(std::string(name)) == 0;
  }
  return !process_alive(owner->pid);
}

CheckpointError::CheckpointError(std::string code, std::string message)
    : std::runtime_error(std::move(message)), code_(std::move(code)) {}

std::string checkpoint_name(int64_t step) {
  if (step < 0) throw std::invalid_argument(fmt::format("a checkpoint's step is not negative, not {}", step));
  return fmt::format("{}{:0{}}", kPrefix, step, kDigits);
}

std::string written_folder(std::string_view location) {
  std::string folder(location.empty() ? "." : location);
  while (folder.size() > 1 && folder.ends_with('/')) folder.pop_back();
  return folder;
}

std::string written_checkpoint(std::string_view location, int64_t step) {
  std::string folder = written_folder(location);
  return folder + (folder.ends_with('/') ? "" : "/") + checkpoint_name(step);
}

std::string named_as_written(std::string_view message, std::string_view local, std::string_view written) {
  if (local.empty() || local == written) return std::string(message);
  std::string out;
  for (size_t i = 0; i < message.size();) {
    if (!written.empty() && message.substr(i).starts_with(written)) {
      out += written;
      i += written.size();
    } else if (message.substr(i).starts_with(local)) {
      out += written;
      i += local.size();
    } else {
      out += message[i++];
    }
  }
  return out;
}

std::string Checkpoint::named_as_written(std::string_view message) const {
  return io::named_as_written(message, path, written);
}

std::optional<int64_t> checkpoint_step(std::string_view name) {
  if (!name.starts_with(kPrefix)) return std::nullopt;
  std::string_view digits = name.substr(kPrefix.size());
  if (digits.size() < static_cast<size_t>(kDigits) || digits.size() > 18) return std::nullopt;
  int64_t step = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    step = step * 10 + (c - '0');
  }
  // Only the canonical spelling: step-000000020 is not step 20's folder.
  if (checkpoint_name(step) != name) return std::nullopt;
  return step;
}

// --- CheckpointWriter ------------------------------------------------------------------

CheckpointWriter::CheckpointWriter(const std::string& location, int64_t step)
    : written_(written_checkpoint(location, step)), step_(step) {
  ResolvedLocation resolved = checkpoint_location(location);
  if (resolved.is_s3()) {
    storage_ = resolved;
    dir_ = storage::staging_folder(resolved);
    final_ = resolved.child(checkpoint_name(step)).url();
    storage::remove_stale(resolved);
  } else {
    dir_ = resolved.path;
    final_ = (fs::path(dir_) / checkpoint_name(step)).string();
    create_location(dir_);
  }
  remove_stale_temporaries(dir_);
  temp_ = (fs::path(dir_) / temporary_name(step, "tmp")).string();
  set_live(fs::path(temp_).filename().string(), true);
  if (::mkdir(temp_.c_str(), 0777) != 0) {
    int err = errno;
    set_live(fs::path(temp_).filename().string(), false);
    unwritable(final_, "create its temporary folder in the checkpoint folder", err);
  }
}

CheckpointWriter::~CheckpointWriter() {
  // At a storage location the staged files go, uploaded or not.
  if (!committed_ || storage_) {
    std::error_code ec;
    fs::remove_all(temp_, ec);
  }
  set_live(fs::path(temp_).filename().string(), false);
}

std::string CheckpointWriter::file_path(std::string_view name) {
  if (committed_) throw std::logic_error("CheckpointWriter: a file written after commit()");
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string_view::npos ||
      name.find('\0') != std::string_view::npos) {
    throw std::invalid_argument(
        fmt::format("a checkpoint's file has a plain name, not `{}`", graph::shown_in_message(name)));
  }
  if (name == kManifestName) {
    throw std::invalid_argument(fmt::format("a checkpoint's {} is its writer's own", kManifestName));
  }
  if (std::any_of(files_.begin(), files_.end(), [&](const ManifestEntry& file) { return file.name == name; })) {
    throw std::invalid_argument(
        fmt::format("a checkpoint's file `{}` is written twice", graph::shown_in_message(name)));
  }
  files_.push_back({std::string(name)});
  return (fs::path(temp_) / std::string(name)).string();
}

void CheckpointWriter::write_bytes(std::string_view name, std::string_view bytes) {
  put_bytes(file_path(name), name, bytes);
}

void CheckpointWriter::put_bytes(const std::string& path, std::string_view name, std::string_view bytes) {
  std::string shown_as = (fs::path(final_) / std::string(name)).string();
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) unwritable(shown_as, "create it", errno);
  const char* p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    ssize_t put = ::write(fd, p, left);
    if (put < 0 && errno == EINTR) continue;
    if (put < 0) {
      int err = errno;
      ::close(fd);
      unwritable(shown_as, "write it", err);
    }
    p += put;
    left -= static_cast<size_t>(put);
  }
  if (::close(fd) != 0) unwritable(shown_as, "close it", errno);
  files_.back().size = bytes.size();
  files_.back().checksum = checksum_of(bytes);
}

void CheckpointWriter::write_tensors(std::string_view name, std::span<const TensorRef> tensors,
                                     const std::map<std::string, std::string>& metadata) {
  Checksum checksum;
  write_file(
      name, [&](const std::string& path) { write_safetensors_refs(path, tensors, metadata, &checksum); }, &checksum);
}

void CheckpointWriter::write_with(std::string_view name, const std::function<void(const std::string& path)>& writer) {
  write_file(name, writer, nullptr);
}

void CheckpointWriter::write_file(std::string_view name, const std::function<void(const std::string& path)>& writer,
                                  const Checksum* streamed) {
  std::string path = file_path(name);
  std::string shown_as = (fs::path(final_) / std::string(name)).string();
  try {
    writer(path);
  } catch (const LoadError& e) {
    // The writer's message names the temporary path; the user knows the checkpoint's.
    std::string message = e.what();
    if (size_t at = message.find(path); at != std::string::npos) message.replace(at, path.size(), shown_as);
    throw CheckpointError(kCheckpointUnwritable, message);
  } catch (const fs::filesystem_error& e) {
    throw CheckpointError(kCheckpointUnwritable, fmt::format("{}: cannot write it: {}",
                                                             graph::shown_in_message(shown_as), e.code().message()));
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    throw CheckpointError(kCheckpointUnwritable,
                          fmt::format("{}: its writer wrote no file", graph::shown_in_message(shown_as)));
  }
  files_.back().size = static_cast<uint64_t>(st.st_size);
  try {
    files_.back().checksum = streamed ? streamed->value() : checksum_of_file(path);
  } catch (const LoadError& e) {
    throw CheckpointError(kCheckpointUnwritable, e.what());
  }
}

Checkpoint CheckpointWriter::commit() {
  if (committed_) throw std::logic_error("CheckpointWriter: commit() twice");
  const std::string manifest = manifest_text(files_);
  files_.push_back({kManifestName});
  put_bytes((fs::path(temp_) / kManifestName).string(), kManifestName, manifest);
  std::vector<std::string> names;
  for (const ManifestEntry& file : files_) names.push_back(file.name);
  if (storage_) {
    Checkpoint uploaded = storage::upload(*storage_, step_, temp_, names);
    committed_ = true;
    return uploaded;
  }
  for (const auto& name : names) {
    fsync_path((fs::path(temp_) / name).string(), false, (fs::path(final_) / name).string());
  }
  fsync_path(temp_, true, final_);
  // In one step where the file system can: swap the new folder with an existing one of
  // the same step (a run resumed before it), then remove the old one under the
  // temporary name.
  if (::renameat2(AT_FDCWD, temp_.c_str(), AT_FDCWD, final_.c_str(), RENAME_NOREPLACE) != 0) {
    int err = errno;
    if (err == EEXIST) {
      if (::renameat2(AT_FDCWD, temp_.c_str(), AT_FDCWD, final_.c_str(), RENAME_EXCHANGE) == 0) {
        committed_ = true;
        std::string old = temp_;
        std::error_code ec;
        fs::remove_all(old, ec);
      } else {
        // No swap here: move the old one away, then the new one in.
        remove_folder(dir_, final_, step_);
        if (::rename(temp_.c_str(), final_.c_str()) != 0) unwritable(final_, "rename it into place", errno);
      }
    } else if (err == EINVAL || err == ENOSYS) {
      // No renameat2 flags on this file system: a plain rename, which fails on an existing
      // non-empty folder.
      struct stat st {};
      if (::stat(final_.c_str(), &st) == 0) remove_folder(dir_, final_, step_);
      if (::rename(temp_.c_str(), final_.c_str()) != 0) unwritable(final_, "rename it into place", errno);
    } else {
      unwritable(final_, "rename it into place", err);
    }
  }
  committed_ = true;
  fsync_path(dir_, true, dir_);
  return Checkpoint{step_, final_, written_};
}

// --- The whole of a checkpoint, and listing ---------------------------------------------

// A file's content is shared, not copied, by copies of it (a list of files made from an
// initializer list copies each: a model's tensors, gigabytes, once more).
CheckpointFile CheckpointFile::bytes(std::string name, std::string content) {
  std::string file = name;
  auto held = std::make_shared<const std::string>(std::move(content));
  return CheckpointFile{std::move(name), [file, held](CheckpointWriter& w) { w.write_bytes(file, *held); }};
}

CheckpointFile CheckpointFile::tensors(std::string name, std::vector<std::pair<std::string, graph::Tensor>> tensors,
                                       std::map<std::string, std::string> metadata) {
  auto held = std::make_shared<const std::vector<std::pair<std::string, graph::Tensor>>>(std::move(tensors));
  std::vector<TensorRef> refs;
  for (const auto& [tensor_name, tensor] : *held) refs.push_back({tensor_name, &tensor});
  return tensor_refs(std::move(name), std::move(refs), held, std::move(metadata));
}

CheckpointFile CheckpointFile::tensor_refs(std::string name, std::vector<TensorRef> tensors,
                                           std::shared_ptr<const void> keep,
                                           std::map<std::string, std::string> metadata) {
  std::string file = name;
  auto held = std::make_shared<const std::vector<TensorRef>>(std::move(tensors));
  return CheckpointFile{std::move(name), [file, held, keep = std::move(keep), metadata = std::move(metadata)](
                                             CheckpointWriter& w) { w.write_tensors(file, *held, metadata); }};
}

Checkpoint write_checkpoint(const std::string& location, int64_t step, const std::vector<CheckpointFile>& files) {
  CheckpointWriter writer(location, step);
  for (const auto& file : files) file.write(writer);
  return writer.commit();
}

std::vector<Checkpoint> list_checkpoints(const std::string& location) {
  ResolvedLocation resolved = checkpoint_location(location);
  if (resolved.is_s3()) return storage::list(resolved);
  const std::string& dir = resolved.path;
  std::vector<Checkpoint> out;
  std::error_code ec;
  fs::file_status status = fs::status(dir, ec);
  if (status.type() == fs::file_type::not_found) return out;
  if (ec) {
    throw CheckpointError(kCheckpointUnreadable,
                          fmt::format("{}: cannot read it: {}", graph::shown_in_message(dir), ec.message()));
  }
  if (!fs::is_directory(status)) {
    throw CheckpointError(kCheckpointUnreadable,
                          fmt::format("{}: a file, not a folder of checkpoints", graph::shown_in_message(dir)));
  }
  fs::directory_iterator it(dir, ec);
  if (ec) {
    throw CheckpointError(kCheckpointUnreadable,
                          fmt::format("{}: cannot list it: {}", graph::shown_in_message(dir), ec.message()));
  }
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    std::string name = it->path().filename().string();
    auto step = checkpoint_step(name);
    std::error_code type_ec;
    if (step && it->is_directory(type_ec)) {
      out.push_back(Checkpoint{*step, it->path().string(), written_checkpoint(location, *step)});
    }
  }
  if (ec) {
    throw CheckpointError(kCheckpointUnreadable,
                          fmt::format("{}: cannot list it: {}", graph::shown_in_message(dir), ec.message()));
  }
  std::sort(out.begin(), out.end(), [](const Checkpoint& a, const Checkpoint& b) { return a.step < b.step; });
  return out;
}

std::optional<Checkpoint> newest_checkpoint(const std::string& location) {
  auto all = list_checkpoints(location);
  if (all.empty()) return std::nullopt;
  return all.back();
}

Checkpoint resolve_checkpoint(const std::string& location) { return local_checkpoint(find_checkpoint(location)); }

Checkpoint find_checkpoint(const std::string& location) {
  ResolvedLocation resolved = checkpoint_location(location);
  if (resolved.is_s3()) {
    std::optional<Checkpoint> chosen = storage::named(resolved);
    if (!chosen) chosen = newest_checkpoint(location);
    if (chosen) return *chosen;
    throw CheckpointError(kNoCheckpoint, fmt::format("{}: no complete checkpoint here (a marker step-NNNNNNNN.complete "
                                                     "at {})",
                                                     graph::shown_in_message(location), resolved.url()));
  }
  const std::string& dir = resolved.path;
  fs::path path(dir);
  std::string name = (path.has_filename() ? path : path.parent_path()).filename().string();
  std::error_code ec;
  if (auto step = checkpoint_step(name); step && fs::is_directory(path, ec)) {
    return Checkpoint{*step, dir, written_folder(location)};
  }
  if (auto newest = newest_checkpoint(location)) return *newest;
  throw CheckpointError(kNoCheckpoint, fmt::format("{}: no complete checkpoint here (a folder step-NNNNNNNN)",
                                                   graph::shown_in_message(location)));
}

Checkpoint local_checkpoint(const Checkpoint& checkpoint) {
  return scheme_of(checkpoint.path) == "s3" ? storage::local_copy(checkpoint) : checkpoint;
}

std::vector<Checkpoint> prune_checkpoints(const std::string& location, int64_t keep) {
  if (keep < 1) throw std::invalid_argument(fmt::format("prune_checkpoints keeps 1 checkpoint or more, not {}", keep));
  ResolvedLocation resolved = checkpoint_location(location);
  auto all = list_checkpoints(location);
  std::vector<Checkpoint> removed;
  for (size_t i = 0; i + static_cast<size_t>(keep) < all.size(); ++i) {
    if (resolved.is_s3()) storage::remove(all[i]);
    else remove_folder(resolved.path, all[i].path, all[i].step);
    removed.push_back(all[i]);
  }
  return removed;
}

int remove_stale_temporaries(const std::string& location) {
  ResolvedLocation resolved = checkpoint_location(location);
  if (resolved.is_s3()) return storage::remove_stale(resolved);
  std::error_code ec;
  fs::directory_iterator it(resolved.path, ec);
  if (ec) return 0;
  std::vector<fs::path> stale;
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (is_stale_temporary(it->path().filename().string())) stale.push_back(it->path());
  }
  int removed = 0;
  for (const auto& path : stale) {
    std::error_code remove_ec;
    fs::remove_all(path, remove_ec);
    if (!remove_ec) ++removed;
  }
  return removed;
}

std::string side_folder(const std::string& location, const std::vector<std::string>& fetch) {
  ResolvedLocation resolved = checkpoint_location(location);
  if (resolved.is_s3()) return storage::side_folder(resolved, fetch);
  create_location(resolved.path);
  remove_stale_temporaries(resolved.path);
  return resolved.path;
}

void publish_side_file(const std::string& location, const std::string& name) {
  ResolvedLocation resolved = checkpoint_location(location);
  if (resolved.is_s3()) storage::publish(resolved, name);
}

void write_file_atomically(const std::string& path, std::string_view bytes) {
  try {
    AtomicFile file(path);
    file.write(bytes.data(), bytes.size());
    file.commit();
  } catch (const LoadError& e) {
    throw CheckpointError(kCheckpointUnwritable, e.what());
  }
}

}  // namespace sx::io
