// Tensor sources: sharded checkpoints by their index, and the indexes refused.
#include "io/tensor_source.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace sx::io {
namespace {

using testing::TempDir;
using testing::write_file;

// Writes shard `name` holding f32 tensors of one element each.
void write_shard(const TempDir& dir, const std::string& name, const std::vector<std::string>& tensors) {
  std::filesystem::create_directories(std::filesystem::path(dir.file(name)).parent_path());
  std::vector<std::pair<std::string, graph::Tensor>> contents;
  for (const auto& t : tensors) contents.emplace_back(t, graph::Tensor::scalar(graph::DType::f32, 1.5));
  write_safetensors(dir.file(name), contents);
}

std::string index_json(const std::string& weight_map) {
  return R"({"metadata": {"total_size": 8}, "weight_map": )" + weight_map + "}";
}

void expect_refused(const std::string& path, const char* code, const std::string& message) {
  try {
    TensorSource::open(path);
    ADD_FAILURE() << "opened " << path;
  } catch (const LoadError& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_EQ(std::string(e.what()), path + ": " + message);
  }
}

TEST(Index, ShardsOpenedLazilyAndOnce) {
  TempDir dir;
  write_shard(dir, "a.safetensors", {"x", "y"});
  write_shard(dir, "sub/b.safetensors", {"z"});
  const std::string index = dir.file("model.safetensors.index.json");
  write_file(index, index_json(R"({"x": "a.safetensors", "y": "a.safetensors", "z": "sub/b.safetensors"})"));
  auto source = TensorSource::open(index);
  EXPECT_EQ(source->files(),
            (std::vector<std::string>{index, dir.file("a.safetensors"), dir.file("sub/b.safetensors")}));
  EXPECT_EQ(source->tensor_names(), (std::vector<std::string>{"x", "y", "z"}));
  // A shard that went bad after open is noticed only when one of its tensors is asked for.
  write_file(dir.file("sub/b.safetensors"), "garbage");
  auto x = source->find("x");
  ASSERT_TRUE(x);
  EXPECT_EQ(x->second.name, "x");
  EXPECT_EQ(read_tensor(*x->first, x->second, graph::DType::f32).data<float>()[0], 1.5f);
  EXPECT_EQ(source->find("y")->first.get(), x->first.get());
  EXPECT_FALSE(source->find("w"));
  try {
    source->find("z");
    ADD_FAILURE();
  } catch (const LoadError& e) {
    EXPECT_EQ(e.code(), "E-LOAD-004");
    EXPECT_EQ(std::string(e.what()).rfind(dir.file("sub/b.safetensors") + ": ", 0), 0u) << e.what();
  }
}

TEST(Index, EmptyWeightMapAndNoMetadata) {
  TempDir dir;
  const std::string index = dir.file("m.index.json");
  write_file(index, R"({"weight_map": {}})");
  auto source = TensorSource::open(index);
  EXPECT_EQ(source->files(), std::vector<std::string>{index});
  EXPECT_FALSE(source->find("x"));
}

TEST(Index, Refused) {
  TempDir dir;
  write_shard(dir, "a.safetensors", {"x"});
  const std::string index = dir.file("model.safetensors.index.json");
  struct Case {
    const char* name;
    std::string text;
    const char* code;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"a shard with a `..` segment", index_json(R"({"x": "../a.safetensors"})"), "E-LOAD-009",
       "the shard `../a.safetensors` of tensor `x` has a `..` that leads out of the index's folder; a shard must "
       "be a file in the index's folder"},
      {"a shard deeper with `..`", index_json(R"({"x": "sub/../../etc/passwd"})"), "E-LOAD-009",
       "the shard `sub/../../etc/passwd` of tensor `x` has a `..` that leads out of the index's folder; a shard "
       "must be a file in the index's folder"},
      {"a `..` after a `.`", index_json(R"({"x": "./sub/./../.././a.safetensors"})"), "E-LOAD-009",
       "the shard `./sub/./../.././a.safetensors` of tensor `x` has a `..` that leads out of the index's folder; a "
       "shard must be a file in the index's folder"},
      {"an absolute shard", index_json(R"({"x": "/etc/passwd"})"), "E-LOAD-009",
       "the shard `/etc/passwd` of tensor `x` is an absolute path; a shard must be a file in the index's folder"},
      {"an empty shard name", index_json(R"({"x": ""})"), "E-LOAD-009",
       "the shard `` of tensor `x` is empty; a shard must be a file in the index's folder"},
      {"a missing shard", index_json(R"({"x": "a.safetensors", "y": "model-00002-of-00002.safetensors"})"),
       "E-LOAD-002",
       "the index names the shard `model-00002-of-00002.safetensors`, but " +
           dir.file("model-00002-of-00002.safetensors") + " cannot be found"},
      {"a shard that is a folder", index_json(R"({"x": "."})"), "E-LOAD-002",
       "the index names the shard `.`, but " + dir.file(".") + " is not a file"},
      {"a weight_map that is a list", index_json(R"(["a.safetensors"])"), "E-LOAD-009",
       "the index's `weight_map` is not an object of tensor names to shard file names"},
      {"a weight_map value that is not a string", index_json(R"({"x": 1})"), "E-LOAD-009",
       "the `weight_map` entry of tensor `x` is not a shard file name (a string) but 1"},
      {"no weight_map", R"({"metadata": {}})", "E-LOAD-009",
       "the index has no `weight_map` naming each tensor's shard"},
      {"metadata that is not an object", R"({"metadata": 3, "weight_map": {}})", "E-LOAD-009",
       "the index's `metadata` is not an object"},
      {"an unknown key", R"({"weight_map": {}, "shards": 2})", "E-LOAD-009",
       "the index has the key `shards`; an index has only `metadata` and `weight_map`"},
      {"invalid JSON", R"({"weight_map": {"x": "a.safetensors",})", "E-LOAD-009", ""},
      {"not an object", "[]", "E-LOAD-009", "the index is not a JSON object with a `weight_map`"},
      {"a number too large for a double", R"({"metadata": {"total_size": 1e999}, "weight_map": {}})", "E-LOAD-009",
       "the index is not valid JSON: number overflow parsing '1e999'"},
      {"a duplicate tensor", index_json(R"({"x": "a.safetensors", "x": "b.safetensors"})"), "E-LOAD-009",
       "the index has the key `x` twice in the entry of `weight_map`"},
      {"not UTF-8", index_json("{\"x\xfe\": \"a.safetensors\"}"), "E-LOAD-009",
       "the index is not valid UTF-8 (byte 49)"},
      {"a git-lfs pointer", "version https://git-lfs.github.com/spec/v1\noid sha256:00\nsize 9\n", "E-LOAD-003", ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    write_file(index, c.text);
    if (c.message.empty()) {
      try {
        TensorSource::open(index);
        ADD_FAILURE() << "opened";
      } catch (const LoadError& e) {
        EXPECT_EQ(e.code(), c.code) << e.what();
      }
    } else {
      expect_refused(index, c.code, c.message);
    }
  }
}

TEST(Index, ADotDotThatStaysInsideTheFolderIsCheckedOnTheNameAlone) {
  TempDir dir;
  write_shard(dir, "models/a.safetensors", {"x", "y"});
  write_shard(dir, "a.safetensors", {"x"});
  // `models/link` is a link to the folder `outside`: on the name, `link/..` is the index's
  // folder, where the system would take it to the parent of `outside`.
  std::filesystem::create_directories(dir.path() / "outside");
  std::filesystem::create_directory_symlink(dir.path() / "outside", dir.path() / "models" / "link");
  const std::string index = dir.file("models/i.index.json");
  write_file(index, index_json(R"({"x": "sub/../a.safetensors", "y": "link/../a.safetensors"})"));
  auto source = TensorSource::open(index);
  EXPECT_EQ(source->files(), (std::vector<std::string>{index, dir.file("models/a.safetensors")}));
  auto y = source->find("y");
  ASSERT_TRUE(y);
  EXPECT_EQ(y->first->path(), dir.file("models/a.safetensors"));
}

TEST(Index, ShardsThatAreLinksAreFollowedWhereverTheyPoint) {
  TempDir dir;
  write_shard(dir, "blobs/0123abcd", {"x"});
  std::filesystem::create_directories(dir.path() / "snapshot");
  std::filesystem::create_symlink("../blobs/0123abcd", dir.path() / "snapshot" / "model-00001-of-00001.safetensors");
  write_file(dir.file("blobs/index"), index_json(R"({"x": "model-00001-of-00001.safetensors"})"));
  std::filesystem::create_symlink("../blobs/index", dir.path() / "snapshot" / "model.safetensors.index.json");
  // The index is itself a link: its shards are named from the folder it is named in.
  auto source = TensorSource::open(dir.file("snapshot/model.safetensors.index.json"));
  auto x = source->find("x");
  ASSERT_TRUE(x);
  EXPECT_EQ(read_tensor(*x->first, x->second, graph::DType::f32).data<float>()[0], 1.5f);
}

TEST(Index, TensorNotInItsShard) {
  TempDir dir;
  write_shard(dir, "a.safetensors", {"x"});
  const std::string index = dir.file("i.index.json");
  write_file(index, index_json(R"({"x": "a.safetensors", "y": "a.safetensors"})"));
  auto source = TensorSource::open(index);
  try {
    source->find("y");
    ADD_FAILURE();
  } catch (const LoadError& e) {
    EXPECT_EQ(e.code(), "E-LOAD-009");
    EXPECT_EQ(std::string(e.what()), index + ": the index puts tensor `y` in " + dir.file("a.safetensors") +
                                         ", which has no tensor of that name");
  }
}

TEST(Index, MissingIndexAndBadSingleFile) {
  TempDir dir;
  expect_refused(dir.file("nope.index.json"), "E-LOAD-002", "the file does not exist");
  write_file(dir.file("x.safetensors"), testing::le64(2) + "{}");
  auto source = TensorSource::open(dir.file("x.safetensors"));
  EXPECT_TRUE(source->tensor_names().empty());
  write_file(dir.file("y.safetensors"), "1234");
  expect_refused(dir.file("y.safetensors"), "E-LOAD-004",
                 "the file is 4 bytes, too short for the 8-byte header length a safetensors file starts with");
}

}  // namespace
}  // namespace sx::io
