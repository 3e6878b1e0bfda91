// The parts of `sexpgpu export` that need no run file: which lines moved between two
// texts (checked against a brute-force longest common subsequence), the folder written
// whole or not at all, and the size and signature lines it prints.
#include "train/export.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <random>

#include "io/export_folder.h"
#include "io/safetensors.h"
#include "train/moved_lines.h"

namespace sx::train {
namespace {

namespace fs = std::filesystem;

std::string lines(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += item + "\n";
  return out;
}

std::vector<std::string> numbered(int from, int to) {
  std::vector<std::string> out;
  for (int i = from; i <= to; ++i) out.push_back(fmt::format("line {}", i));
  return out;
}

TEST(MovedLines, NoneWhenTheTextIsTheSame) {
  std::string text = lines(numbered(1, 30));
  EXPECT_EQ(moved_lines(text, text), std::vector<MovedLines>{});
  EXPECT_EQ(moved_lines("", ""), std::vector<MovedLines>{});
}

TEST(MovedLines, LinesAddedAboveMoveWhatFollows) {
  std::vector<std::string> before = numbered(1, 20), after = before;
  after.insert(after.begin() + 11, {"added a", "added b"});
  EXPECT_EQ(moved_lines(lines(before), lines(after)), (std::vector<MovedLines>{{12, 14, 9}}));
  EXPECT_EQ(describe_moved_lines("run.sx", lines(before), lines(after)),
            std::vector<std::string>{"  run.sx: lines 12-20 are now 14-22"});
}

TEST(MovedLines, ABlockMovedAndLinesRemoved) {
  // Lines 3-4 removed; line 10 moved to the top.
  std::vector<std::string> before = numbered(1, 10);
  std::vector<std::string> after = {"line 10", "line 1", "line 2", "line 5", "line 6", "line 7", "line 8", "line 9"};
  EXPECT_EQ(moved_lines(lines(before), lines(after)), (std::vector<MovedLines>{{1, 2, 2}, {5, 4, 5}}));
  EXPECT_EQ(describe_moved_lines("run.sx", lines(before), lines(after)),
            (std::vector<std::string>{"  run.sx: lines 1-2 are now 2-3", "  run.sx: lines 5-9 are now 4-8"}));
}

TEST(MovedLines, OneLineAndALastLineWithoutNewline) {
  EXPECT_EQ(describe_moved_lines("a.sx", std::string("x\ny"), "new\nx\ny"),
            (std::vector<std::string>{"  a.sx: lines 1-2 are now 2-3"}));
  EXPECT_EQ(describe_moved_lines("a.sx", std::string("x\ny\nz\n"), "x\nnew\ny\nz\n"),
            (std::vector<std::string>{"  a.sx: lines 2-3 are now 3-4"}));
  EXPECT_EQ(describe_moved_lines("a.sx", std::string("x\ny\nz\n"), "x\ny\nq\nz\n"),
            (std::vector<std::string>{"  a.sx: line 3 is now 4"}));
}

TEST(MovedLines, EditsInPlaceAndNoText) {
  EXPECT_EQ(describe_moved_lines("run.sx", std::string("a\nb\nc\n"), "a\nB\nc\n"),
            std::vector<std::string>{"  run.sx: edited in place, no line moved"});
  auto none = describe_moved_lines("run.sx", std::nullopt, "a\n");
  ASSERT_EQ(none.size(), 1u);
  EXPECT_EQ(none[0], "  run.sx: changed since the run; its checkpoint records no text to tell which lines moved");
}

TEST(MovedLines, ManyBlocksAreCut) {
  // Every other line removed: each kept line is a block of its own.
  std::vector<std::string> before = numbered(1, 40), after;
  for (int i = 1; i <= 40; i += 2) after.push_back(fmt::format("line {}", i));
  auto described = describe_moved_lines("run.sx", lines(before), lines(after), 5);
  ASSERT_EQ(described.size(), 6u);
  EXPECT_EQ(described[0], "  run.sx: line 3 is now 2");
  EXPECT_EQ(described[5], "  run.sx: and 14 more blocks of lines moved");
}

TEST(MovedLines, TooManyChangesToAlign) {
  std::vector<std::string> before = numbered(1, 1500), after = numbered(2000, 3500);
  EXPECT_EQ(moved_lines(lines(before), lines(after)), std::nullopt);
  EXPECT_EQ(
      describe_moved_lines("run.sx", lines(before), lines(after)),
      std::vector<std::string>{"  run.sx: more than 2000 lines differ from the run's; too many to tell which moved"});
  // As many lines, but few changed: aligned.
  after = before;
  after.insert(after.begin(), "new");
  EXPECT_EQ(moved_lines(lines(before), lines(after)), (std::vector<MovedLines>{{1, 2, 1500}}));
}

// The longest common subsequence's length, by dynamic programming.
size_t lcs_length(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::vector<std::vector<size_t>> t(a.size() + 1, std::vector<size_t>(b.size() + 1, 0));
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      t[i][j] = a[i - 1] == b[j - 1] ? t[i - 1][j - 1] + 1 : std::max(t[i - 1][j], t[i][j - 1]);
    }
  }
  return t[a.size()][b.size()];
}

TEST(MovedLines, RandomEditsAgainstTheLongestCommonSubsequence) {
  // The lines kept are a common subsequence as long as the longest, and the blocks are
  // exactly those of them whose numbers changed.
  std::mt19937 rng(11);
  for (int round = 0; round < 300; ++round) {
    std::vector<std::string> a, b;
    int n = static_cast<int>(rng() % 30), m = static_cast<int>(rng() % 30);
    for (int i = 0; i < n; ++i) a.push_back(std::string(1, static_cast<char>('a' + rng() % 4)));
    for (int i = 0; i < m; ++i) b.push_back(std::string(1, static_cast<char>('a' + rng() % 4)));
    auto common = common_lines(lines(a), lines(b));
    ASSERT_TRUE(common);
    ASSERT_EQ(common->size(), lcs_length(a, b)) << "round " << round;
    int64_t last_i = 0, last_j = 0, shifted = 0;
    for (const auto& [i, j] : *common) {
      ASSERT_TRUE(i > last_i && j > last_j) << "round " << round;
      ASSERT_EQ(a[static_cast<size_t>(i - 1)], b[static_cast<size_t>(j - 1)]);
      last_i = i, last_j = j;
      shifted += i != j;
    }
    auto moved = moved_lines(lines(a), lines(b));
    ASSERT_TRUE(moved);
    int64_t in_blocks = 0;
    for (const auto& block : *moved) in_blocks += block.count;
    EXPECT_EQ(in_blocks, shifted) << "round " << round;
  }
}

// --- The export folder ----------------------------------------------------------------

class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "sexpgpu-export-XXXXXX").string();
    if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& entry : fs::directory_iterator(dir)) out.push_back(entry.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::vector<std::pair<std::string, graph::Tensor>> one_weight() {
  graph::Tensor w(graph::DType::f32, {2, 3});
  for (int64_t i = 0; i < 6; ++i) w.set_value(i, static_cast<double>(i) / 4);
  return {{"model.w", w}};
}

TEST(ExportFolder, WrittenWholeUnderItsName) {
  TempDir dir;
  std::string out = dir.file("deep/er/model");
  {
    io::ExportFolderWriter folder(out + "/");
    folder.write_bytes("model.json", "{}\n");
    folder.write_tensors("params.safetensors", one_weight());
    EXPECT_FALSE(fs::exists(out));  // nothing under the name before commit()
    folder.commit();
    EXPECT_EQ(folder.path(), out);
  }
  EXPECT_EQ(names_in(out), (std::vector<std::string>{"model.json", "params.safetensors"}));
  EXPECT_EQ(names_in(dir.file("deep/er")), std::vector<std::string>{"model"});
  EXPECT_EQ(read_file(out + "/model.json"), "{}\n");
  auto file = io::SafetensorsFile::open(out + "/params.safetensors");
  EXPECT_EQ(io::read_tensor(*file, *file->find("model.w"), graph::DType::f32), one_weight()[0].second);
}

TEST(ExportFolder, WhatExistsIsRefused) {
  TempDir dir;
  fs::create_directory(dir.file("folder"));
  std::ofstream(dir.file("file")) << "x";
  fs::create_symlink(dir.file("nowhere"), dir.file("link"));
  for (const char* name : {"folder", "file", "link", "folder/"}) {
    try {
      io::ExportFolderWriter folder(dir.file(name));
      FAIL() << name << ": no error";
    } catch (const io::ExportError& e) {
      EXPECT_EQ(e.code(), "E-SERVE-020") << name;
      EXPECT_NE(std::string(e.what()).find("it exists"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(names_in(dir.path()), (std::vector<std::string>{"file", "folder", "link"}));
}

TEST(ExportFolder, AFolderThatAppearsMeanwhileIsNotReplaced) {
  TempDir dir;
  std::string out = dir.file("model");
  io::ExportFolderWriter folder(out);
  folder.write_bytes("model.json", "{}\n");
  fs::create_directory(out);  // empty: a plain rename would replace it
  try {
    folder.commit();
    FAIL() << "no error";
  } catch (const io::ExportError& e) {
    EXPECT_EQ(e.code(), "E-SERVE-020");
  }
  EXPECT_TRUE(fs::is_empty(out));
}

TEST(ExportFolder, NotCommittedLeavesNothing) {
  TempDir dir;
  {
    io::ExportFolderWriter folder(dir.file("model"));
    folder.write_bytes("model.json", "{}\n");
    EXPECT_TRUE(fs::is_directory(folder.temporary_path()));
  }
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

TEST(ExportFolder, AnUnwritablePlaceIsACodedError) {
  TempDir dir;
  std::ofstream(dir.file("file")) << "x";
  try {
    io::ExportFolderWriter folder(dir.file("file/model"));
    FAIL() << "no error";
  } catch (const io::ExportError& e) {
    EXPECT_EQ(e.code(), "E-SERVE-021");
    EXPECT_NE(std::string(e.what()).find(dir.file("file/model")), std::string::npos) << e.what();
  }
}

TEST(ExportFolder, AFullDiskLeavesNothing) {
  // The file-size limit makes write() fail part-way, as a full disk does.
  TempDir dir;
  std::string out = dir.file("model");
  pid_t pid = fork();
  if (pid == 0) {
    std::signal(SIGXFSZ, SIG_IGN);
    rlimit limit{4096, 4096};
    if (setrlimit(RLIMIT_FSIZE, &limit) != 0) _exit(20);
    try {
      io::ExportFolderWriter folder(out);
      folder.write_bytes("model.json", std::string(1 << 20, 'm'));
      folder.commit();
      _exit(21);
    } catch (const io::ExportError& e) {
      if (e.code() != "E-SERVE-021") _exit(22);
      if (std::string(e.what()).find(out + "/model.json: cannot write it") == std::string::npos) _exit(23);
    }
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

TEST(ExportFolder, StaleTemporariesOfDeadProcessesAreRemoved) {
  TempDir dir;
  // A process that has exited: its pid is free (unless reused in this instant).
  pid_t dead = fork();
  if (dead == 0) _exit(0);
  waitpid(dead, nullptr, 0);
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  std::string stale = fmt::format(".model.export-{}-0-{}", dead, host);
  std::string live = fmt::format(".model.export-{}-0-{}", getppid(), host);
  std::string elsewhere = fmt::format(".model.export-{}-0-another-host", dead);
  std::string other_name = fmt::format(".model2.export-{}-0-{}", dead, host);
  for (const auto& name : {stale, live, elsewhere, other_name}) fs::create_directory(dir.path() / name);
  io::ExportFolderWriter folder(dir.file("model"));
  folder.commit();
  std::vector<std::string> kept{live, elsewhere, other_name, "model"};
  std::sort(kept.begin(), kept.end());
  EXPECT_EQ(names_in(dir.path()), kept);
}

// --- What export prints ---------------------------------------------------------------

TEST(ExportLines, Sizes) {
  EXPECT_EQ(format_size(0), "0 B");
  EXPECT_EQ(format_size(1023), "1023 B");
  EXPECT_EQ(format_size(1024), "1.0 KiB");
  EXPECT_EQ(format_size(112435), "109.8 KiB");
  EXPECT_EQ(format_size(uint64_t{3} << 30), "3.0 GiB");
}

TEST(ExportLines, SignatureAsServePrintsIt) {
  auto model = nlohmann::json::parse(R"({"inputs": [{"name": "inputs", "shape": [1, 16], "dtype": "i32"}],
      "outputs": [{"name": "output", "shape": [1, 16, 32], "dtype": "f32"}, {"name": "aux.0", "shape": [], "dtype": "bf16"}]})");
  EXPECT_EQ(describe_signature(model),
            (std::vector<std::string>{"  inputs  inputs [1, 16] i32", "  outputs output [1, 16, 32] f32",
                                      "  outputs aux.0 [] bf16"}));
}

}  // namespace
}  // namespace sx::train
