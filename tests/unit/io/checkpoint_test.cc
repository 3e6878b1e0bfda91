// Checkpoint folders: written under a temporary name and renamed when complete; listing
// sees only complete ones; pruning keeps the newest; stale temporaries are cleared; every
// failure is a coded error that leaves nothing under a checkpoint's name.
#include "io/checkpoint.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>

#include "io/safetensors.h"
#include "io/util.h"
#include "test_util.h"

namespace sx::io {
namespace {

namespace fs = std::filesystem;
using testing::read_file;
using testing::TempDir;
using testing::write_file;

std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& entry : fs::directory_iterator(dir)) out.push_back(entry.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<int64_t> steps_of(const std::vector<Checkpoint>& all) {
  std::vector<int64_t> out;
  for (const auto& c : all) out.push_back(c.step);
  return out;
}

std::string this_host() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return name;
}

// Runs `body` in a child process (as the user nobody when this one is root, so that
// permissions hold) and returns its exit status; a gtest failure in it is exit 1.
int in_child(const std::function<int()>& body, bool as_nobody) {
  pid_t pid = fork();
  if (pid == 0) {
    if (as_nobody && geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) _exit(3);
    _exit(body());
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

TEST(Checkpoint, NamesAreStepsInEightDigitsAndNothingElse) {
  EXPECT_EQ(checkpoint_name(20), "step-00000020");
  EXPECT_EQ(checkpoint_name(123456789), "step-123456789");
  EXPECT_EQ(checkpoint_step("step-00000020"), 20);
  EXPECT_EQ(checkpoint_step("step-123456789"), 123456789);
  for (const char* other : {"step-20", "step-000000020", "step-00000020x", "step-0000002a", ".step-00000020.tmp-1-0-h",
                            "step-00000020.tmp", "Step-00000020", "step-", "", "step-+0000020"}) {
    EXPECT_EQ(checkpoint_step(other), std::nullopt) << other;
  }
  EXPECT_THROW(checkpoint_name(-1), std::invalid_argument);
}

TEST(Checkpoint, WritesItsFilesAndIsListed) {
  TempDir dir;
  std::string loc = dir.file("run");
  graph::Tensor w = graph::Tensor::from_doubles(graph::DType::f32, {2}, std::vector<double>{1.5, -2});
  Checkpoint written = write_checkpoint(
      loc, 20,
      {CheckpointFile::bytes("experiment.json", "{\"step\":20}"),
       CheckpointFile::tensors("params.safetensors", {{"model.w", w}}), CheckpointFile::bytes("state.json", "{}")});
  EXPECT_EQ(written, (Checkpoint{20, loc + "/step-00000020", loc + "/step-00000020"}));
  EXPECT_EQ(names_in(loc), std::vector<std::string>{"step-00000020"});  // no temporary left
  EXPECT_EQ(names_in(written.path),
            (std::vector<std::string>{"experiment.json", "manifest.json", "params.safetensors", "state.json"}));
  EXPECT_EQ(read_file(written.path + "/experiment.json"), "{\"step\":20}");
  auto params = SafetensorsFile::open(written.path + "/params.safetensors");
  EXPECT_EQ(read_tensor(*params, *params->find("model.w"), graph::DType::f32), w);
  EXPECT_EQ(list_checkpoints(loc), std::vector<Checkpoint>{written});
  EXPECT_EQ(newest_checkpoint(loc), written);
  EXPECT_EQ(resolve_checkpoint(loc), written);
  EXPECT_EQ(resolve_checkpoint(written.path), written);
  EXPECT_EQ(resolve_checkpoint(written.path + "/"), (Checkpoint{20, written.path + "/", written.path}));
  // A file:// location is the same folder, named as written.
  const std::string url = "file://" + written.path;
  EXPECT_EQ(list_checkpoints("file://" + loc), (std::vector<Checkpoint>{{20, written.path, url}}));
  EXPECT_EQ(resolve_checkpoint(url + "/"), (Checkpoint{20, written.path + "/", url}));
}

// A message of a reader of a checkpoint's local files names the checkpoint as written,
// once, even where the location as written holds the local path (file://).
TEST(Checkpoint, MessagesNameItAsWritten) {
  Checkpoint cached{8, "/home/me/.cache/sexpgpu/checkpoints/54ee/step-00000008", "s3://bkt/run/step-00000008"};
  EXPECT_EQ(cached.named_as_written(cached.path + "/params.safetensors: not a safetensors file"),
            "s3://bkt/run/step-00000008/params.safetensors: not a safetensors file");
  Checkpoint url{8, "/runs/a/step-00000008", "file:///runs/a/step-00000008"};
  EXPECT_EQ(url.named_as_written("file:///runs/a/step-00000008/x and /runs/a/step-00000008/y"),
            "file:///runs/a/step-00000008/x and file:///runs/a/step-00000008/y");
  EXPECT_EQ(written_checkpoint("s3://bkt/run/", 8), "s3://bkt/run/step-00000008");
  EXPECT_EQ(written_checkpoint("", 8), "./step-00000008");
  EXPECT_EQ(written_folder("o41://team/run/step-00000008//"), "o41://team/run/step-00000008");
}

// A file of tensors held elsewhere (a device's buffers) writes them where they lie; what
// `keep` holds lives as long as the file, however the list of files is copied.
TEST(Checkpoint, AFileOfTensorRefsWritesThemAndKeepsWhatItWasGiven) {
  TempDir dir;
  graph::Tensor held = graph::Tensor::from_doubles(graph::DType::f32, {3}, std::vector<double>{1, 2, 3});
  auto copies = std::make_shared<std::vector<graph::Tensor>>();
  copies->push_back(graph::Tensor::from_doubles(graph::DType::bf16, {1}, std::vector<double>{0.5}));
  std::vector<TensorRef> refs{{"model.held", &held}, {"model.copy", &copies->back()}};
  std::weak_ptr<std::vector<graph::Tensor>> kept = copies;
  std::vector<CheckpointFile> files{CheckpointFile::tensor_refs("params.safetensors", refs, std::move(copies))};
  EXPECT_FALSE(kept.expired()) << "the file keeps the copies";
  Checkpoint written = write_checkpoint(dir.file("run"), 1, files);
  auto params = SafetensorsFile::open(written.path + "/params.safetensors");
  EXPECT_EQ(read_tensor(*params, *params->find("model.held"), graph::DType::f32), held);
  EXPECT_EQ(read_tensor(*params, *params->find("model.copy"), graph::DType::bf16).to_doubles(),
            std::vector<double>{0.5});
  files.clear();
  EXPECT_TRUE(kept.expired()) << "and lets them go with it";
}

TEST(Checkpoint, OnlyCompleteCheckpointsAreListedInStepOrder) {
  TempDir dir;
  std::string loc = dir.file("run");
  for (int64_t step : {30, 10, 200, 20}) write_checkpoint(loc, step, {CheckpointFile::bytes("state.json", "{}")});
  // What a crash or a person leaves beside them.
  fs::create_directories(loc + "/.step-00000040.tmp-4242-0-otherhost");  // a half checkpoint
  fs::create_directories(loc + "/step-00000050.partial");
  fs::create_directories(loc + "/step-50");
  fs::create_directories(loc + "/notes");
  write_file(loc + "/step-00000060", "a file, not a folder");
  EXPECT_EQ(steps_of(list_checkpoints(loc)), (std::vector<int64_t>{10, 20, 30, 200}));
  EXPECT_EQ(newest_checkpoint(loc)->step, 200);
  EXPECT_EQ(list_checkpoints(dir.file("none")), std::vector<Checkpoint>{});
  EXPECT_EQ(newest_checkpoint(dir.file("none")), std::nullopt);
}

TEST(Checkpoint, PruneKeepsTheNewest) {
  TempDir dir;
  std::string loc = dir.file("run");
  for (int64_t step : {10, 20, 30, 40}) write_checkpoint(loc, step, {CheckpointFile::bytes("state.json", "{}")});
  EXPECT_EQ(steps_of(prune_checkpoints(loc, 2)), (std::vector<int64_t>{10, 20}));
  EXPECT_EQ(steps_of(list_checkpoints(loc)), (std::vector<int64_t>{30, 40}));
  EXPECT_EQ(steps_of(prune_checkpoints(loc, 5)), std::vector<int64_t>{});
  EXPECT_EQ(steps_of(prune_checkpoints(loc, 1)), std::vector<int64_t>{30});
  EXPECT_EQ(names_in(loc), std::vector<std::string>{"step-00000040"});  // removed, temporaries too
  EXPECT_THROW(prune_checkpoints(loc, 0), std::invalid_argument);
  EXPECT_EQ(steps_of(list_checkpoints(loc)), std::vector<int64_t>{40});
}

TEST(Checkpoint, RewritingAStepReplacesItWhole) {
  TempDir dir;
  std::string loc = dir.file("run");
  write_checkpoint(loc, 10, {CheckpointFile::bytes("a.json", "old"), CheckpointFile::bytes("old-only", "x")});
  Checkpoint again = write_checkpoint(loc, 10, {CheckpointFile::bytes("a.json", "new")});
  EXPECT_EQ(names_in(loc), std::vector<std::string>{"step-00000010"});
  EXPECT_EQ(names_in(again.path), (std::vector<std::string>{"a.json", "manifest.json"}));
  EXPECT_EQ(read_file(again.path + "/a.json"), "new");
}

TEST(Checkpoint, AnAbandonedWriterLeavesNothing) {
  TempDir dir;
  std::string loc = dir.file("run");
  write_checkpoint(loc, 10, {CheckpointFile::bytes("a.json", "ten")});
  try {
    CheckpointWriter writer(loc, 20);
    writer.write_bytes("params.safetensors", "half");
    EXPECT_TRUE(fs::is_directory(writer.temporary_path()));
    EXPECT_TRUE(fs::path(writer.temporary_path()).filename().string().starts_with(".step-00000020.tmp-"));
    EXPECT_EQ(steps_of(list_checkpoints(loc)), std::vector<int64_t>{10});  // not taken for whole
    throw std::runtime_error("killed");
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(names_in(loc), std::vector<std::string>{"step-00000010"});
  // A writer whose file fails: the coded error names the checkpoint's file, not the
  // temporary, and nothing is left.
  try {
    write_checkpoint(loc, 30,
                     {CheckpointFile::bytes("a.json", "x"),
                      CheckpointFile{"params.safetensors", [](CheckpointWriter& w) {
                                       w.write_with("params.safetensors", [](const std::string& path) {
                                         throw LoadError(kUnreadable, path + ": cannot write it: disk on fire");
                                       });
                                     }}});
    FAIL() << "no error";
  } catch (const CheckpointError& e) {
    EXPECT_EQ(e.code(), "E-CKPT-001");
    EXPECT_EQ(std::string(e.what()), loc + "/step-00000030/params.safetensors: cannot write it: disk on fire");
  }
  EXPECT_EQ(names_in(loc), std::vector<std::string>{"step-00000010"});
  // Names are plain file names, once each.
  CheckpointWriter writer(loc, 40);
  EXPECT_THROW(writer.write_bytes("../escape", "x"), std::invalid_argument);
  EXPECT_THROW(writer.write_bytes("", "x"), std::invalid_argument);
  writer.write_bytes("a", "x");
  EXPECT_THROW(writer.write_bytes("a", "y"), std::invalid_argument);
  EXPECT_THROW(writer.write_bytes("manifest.json", "{}"), std::invalid_argument);  // the writer's own
  writer.commit();
  EXPECT_THROW(writer.commit(), std::logic_error);
  EXPECT_EQ(steps_of(list_checkpoints(loc)), (std::vector<int64_t>{10, 40}));
}

// A process id no process can have: the kernel allocates ids below pid_max. (A child
// waited for would do, but its id can be taken by another process at once.)
long dead_process_id() {
  long dead = 0;
  std::ifstream("/proc/sys/kernel/pid_max") >> dead;
  return dead;
}

TEST(Checkpoint, StaleTemporariesOfDeadProcessesAreRemoved) {
  TempDir dir;
  std::string loc = dir.file("run");
  fs::create_directories(loc);
  const long dead = dead_process_id();
  ASSERT_GT(dead, 0);
  std::string host = this_host();
  std::string dead_temp = fmt::format("{}/.step-00000020.tmp-{}-0-{}", loc, dead, host);
  std::string dead_old = fmt::format("{}/.step-00000010.old-{}-3-{}", loc, dead, host);
  std::string own_stale = fmt::format("{}/.step-00000030.tmp-{}-99999-{}", loc, getpid(), host);
  std::string live = fmt::format("{}/.step-00000020.tmp-{}-0-{}", loc, getppid(), host);
  std::string elsewhere = fmt::format("{}/.step-00000020.tmp-{}-0-{}", loc, dead, host + "-other");
  for (const auto& path : {dead_temp, dead_old, own_stale, live, elsewhere}) {
    fs::create_directories(path);
    write_file(path + "/params.safetensors", "half");
  }
  EXPECT_EQ(remove_stale_temporaries(loc), 3);
  std::vector<std::string> kept{fs::path(live).filename().string(), fs::path(elsewhere).filename().string()};
  std::sort(kept.begin(), kept.end());  // names_in sorts, and the order of process ids as text varies
  EXPECT_EQ(names_in(loc), kept);
  // A writer clears them too, and a live writer's folder is never stale.
  fs::create_directories(dead_temp);
  CheckpointWriter writer(loc, 50);
  EXPECT_FALSE(fs::exists(dead_temp));
  EXPECT_EQ(remove_stale_temporaries(loc), 0);
  EXPECT_TRUE(fs::is_directory(writer.temporary_path()));
}

// A file written beside the checkpoints (the loss curve, metrics.jsonl) by a process
// killed while writing it is left under its temporary name: the next writer, and the
// side folder a run asks for, remove it as they remove a checkpoint's.
TEST(Checkpoint, StaleTemporaryFilesBesideTheCheckpointsAreRemoved) {
  TempDir dir;
  std::string loc = dir.file("run");
  fs::create_directories(loc);
  const long dead = dead_process_id();
  ASSERT_GT(dead, 0);
  std::string host = this_host();
  std::string curve = fmt::format("{}/.loss.svg.tmp-{}-3-{}", loc, dead, host);
  std::string metrics = fmt::format("{}/.metrics.jsonl.tmp-{}-0-{}", loc, dead, host);
  std::string live = fmt::format("{}/.loss.svg.tmp-{}-0-{}", loc, getppid(), host);
  std::string elsewhere = fmt::format("{}/.loss.svg.tmp-{}-0-{}", loc, dead, host + "-other");
  std::string not_ours = loc + "/.loss.svg.tmp-x-0-" + host;
  for (const auto& path : {curve, metrics, live, elsewhere, not_ours}) write_file(path, "<svg");
  write_file(loc + "/metrics.jsonl", "{}\n");
  EXPECT_EQ(side_folder(loc, {"metrics.jsonl"}), loc);
  std::vector<std::string> kept{fs::path(live).filename().string(), fs::path(elsewhere).filename().string(),
                                fs::path(not_ours).filename().string(), "metrics.jsonl"};
  std::sort(kept.begin(), kept.end());
  EXPECT_EQ(names_in(loc), kept);
  // One this process writes now is live, never stale; committed, its name is gone.
  {
    AtomicFile file(loc + "/loss.svg");
    file.write("<svg/>", 6);
    EXPECT_EQ(remove_stale_temporaries(loc), 0);
    file.commit();
  }
  EXPECT_EQ(read_file(loc + "/loss.svg"), "<svg/>");
  kept.push_back("loss.svg");
  std::sort(kept.begin(), kept.end());
  EXPECT_EQ(names_in(loc), kept);
}

TEST(Checkpoint, AReadOnlyFolderGivesTheCodedErrorNamingIt) {
  TempDir dir;
  fs::permissions(dir.path(), fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                  fs::perms::others_read | fs::perms::others_exec);
  std::string loc = dir.file("readonly");
  fs::create_directories(loc);
  write_checkpoint(loc, 10, {CheckpointFile::bytes("a.json", "ten")});
  fs::permissions(loc, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read | fs::perms::group_exec |
                           fs::perms::others_read | fs::perms::others_exec);
  int status = in_child(
      [&] {
        try {
          write_checkpoint(loc, 20, {CheckpointFile::bytes("a.json", "twenty")});
          return 10;
        } catch (const CheckpointError& e) {
          std::string message = e.what();
          if (e.code() != "E-CKPT-001") return 11;
          if (message.find(loc + "/step-00000020") == std::string::npos) return 12;
          if (message.find("Permission denied") == std::string::npos) return 13;
          return 0;
        }
      },
      true);
  EXPECT_EQ(status, 0);
  EXPECT_EQ(names_in(loc), std::vector<std::string>{"step-00000010"});
  // A location that cannot be created (its parent is a file) is the same error.
  write_file(dir.file("file"), "x");
  try {
    write_checkpoint(dir.file("file/run"), 1, {});
    FAIL() << "no error";
  } catch (const CheckpointError& e) {
    EXPECT_EQ(e.code(), "E-CKPT-001");
    EXPECT_NE(std::string(e.what()).find(dir.file("file/run")), std::string::npos) << e.what();
  }
  fs::permissions(loc, fs::perms::owner_all);
}

TEST(Checkpoint, AWriteThatFailsMidFileLeavesNoCheckpoint) {
  // The file-size limit makes write() fail part-way, as a full disk does.
  TempDir dir;
  std::string loc = dir.file("run");
  write_checkpoint(loc, 10, {CheckpointFile::bytes("a.json", "ten")});
  int status = in_child(
      [&] {
        std::signal(SIGXFSZ, SIG_IGN);
        rlimit limit{4096, 4096};
        if (setrlimit(RLIMIT_FSIZE, &limit) != 0) return 20;
        try {
          write_checkpoint(loc, 20,
                           {CheckpointFile::bytes("a.json", "x"),
                            CheckpointFile::bytes("params.safetensors", std::string(1 << 20, 'p'))});
          return 21;
        } catch (const CheckpointError& e) {
          if (e.code() != "E-CKPT-001") return 22;
          if (std::string(e.what()).find(loc + "/step-00000020/params.safetensors: cannot write it") ==
              std::string::npos) {
            return 23;
          }
        }
        // Also through the safetensors writer.
        try {
          graph::Tensor big(graph::DType::f32, {1 << 18});
          write_checkpoint(loc, 30, {CheckpointFile::tensors("params.safetensors", {{"w", big}})});
          return 24;
        } catch (const CheckpointError& e) {
          if (e.code() != "E-CKPT-001") return 25;
        }
        return 0;
      },
      false);
  EXPECT_EQ(status, 0);
  EXPECT_EQ(names_in(loc), std::vector<std::string>{"step-00000010"});
}

TEST(Checkpoint, LocationsThatAreNoneAreRefusedByName) {
  TempDir dir;
  unsetenv("SEXPGPU_O41_ROOT");
  for (auto [location, code] : {std::pair{"https://host/runs", "E-CKPT-004"},
                                {"s3://Bad_Bucket/runs", "E-LOC-001"},
                                {"o41://team", "E-LOC-001"},
                                {"o41://team/run", "E-LOC-002"}}) {
    try {
      list_checkpoints(location);
      FAIL() << location;
    } catch (const CheckpointError& e) {
      EXPECT_EQ(e.code(), code);
      EXPECT_NE(std::string(e.what()).find(location), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(CheckpointWriter("https://host/runs", 1), CheckpointError);
  write_file(dir.file("plain"), "x");
  try {
    list_checkpoints(dir.file("plain"));
    FAIL() << "no error";
  } catch (const CheckpointError& e) {
    EXPECT_EQ(e.code(), "E-CKPT-002");
  }
  fs::create_directories(dir.file("empty"));
  try {
    resolve_checkpoint(dir.file("empty"));
    FAIL() << "no error";
  } catch (const CheckpointError& e) {
    EXPECT_EQ(e.code(), "E-CKPT-003");
    EXPECT_NE(std::string(e.what()).find(dir.file("empty")), std::string::npos);
  }
}

TEST(Checkpoint, FilesBesideCheckpointsAreWrittenAtomically) {
  TempDir dir;
  write_file_atomically(dir.file("loss.svg"), "<svg/>");
  EXPECT_EQ(read_file(dir.file("loss.svg")), "<svg/>");
  EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{"loss.svg"});
  EXPECT_THROW(write_file_atomically(dir.file("no/such/loss.svg"), "x"), CheckpointError);
}

}  // namespace
}  // namespace sx::io
