// The parts of `sexpgpu export` that need no run file: the folder written whole or not
// at all, and the size and signature lines it prints.
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

#include "io/export_folder.h"
#include "io/safetensors.h"

namespace sx::train {
namespace {

namespace fs = std::filesystem;

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
