// A checkpoint's manifest: each file's size and checksum recorded as it is written, every
// read checked against it, a damaged file refused by name (E-CKPT-008), a file the
// checkpoint does not hold refused as a mismatch (E-CKPT-006), and a checkpoint without a
// manifest read unchecked.
#include "io/checkpoint_files.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>

#include "io/checksum.h"
#include "test_util.h"

namespace sx::io {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::read_file;
using testing::TempDir;
using testing::write_file;

const graph::Tensor kWeight =
    graph::Tensor::from_doubles(graph::DType::f32, {2, 3}, std::vector<double>{1, 2, 3, 4, 5, 6});

// Every way a file is written: bytes, tensors, and by a writer of its own.
Checkpoint checkpoint_written_in(const TempDir& dir) {
  return write_checkpoint(
      dir.file("run"), 20,
      {CheckpointFile::bytes("experiment.json", R"({"slug": "tiny"})"),
       CheckpointFile::tensors("params.safetensors", {{"model.w", kWeight}}),
       CheckpointFile::bytes("state.json", R"({"step": 20})"),
       CheckpointFile{"model.json", [](CheckpointWriter& w) {
                        w.write_with("model.json", [](const std::string& path) { write_file(path, R"({"v": 1})"); });
                      }}});
}

// The code of what `body` throws ("none" when nothing), and its message.
std::string code_of(const std::function<void()>& body, std::string* message = nullptr) {
  try {
    body();
  } catch (const CheckpointError& e) {
    if (message) *message = e.what();
    return e.code();
  } catch (const LoadError& e) {
    if (message) *message = e.what();
    return e.code();
  }
  return "none";
}

// Reads the file `name` as the commands do.
void read_as_commands_do(const CheckpointReader& files, const std::string& name) {
  if (name.ends_with(".safetensors")) files.read_tensors(name);
  else if (name == "model.json") files.checked_path(name);
  else files.read_json(name);
}

void flip_byte(const std::string& path, size_t at) {
  std::string bytes = read_file(path);
  bytes.at(at) ^= 0x01;
  write_file(path, bytes);
}

TEST(Checksum, IsXxh3OfTheBytesHoweverTheyAreFed) {
  EXPECT_EQ(checksum_of(std::string_view()), 0x2d06800538d394c2u);  // XXH3-64 of nothing
  Checksum pieces;
  pieces.update("check", 5);
  pieces.update("sum", 3);
  EXPECT_EQ(pieces.value(), checksum_of(std::string_view("checksum")));
  EXPECT_EQ(checksum_hex(0x2d06800538d394c2u), "2d06800538d394c2");
  EXPECT_EQ(parse_checksum_hex("2d06800538d394c2"), 0x2d06800538d394c2u);
  for (const char* other : {"", "2d06800538d394c", "2D06800538D394C2", "2d06800538d394c2 ", "xd06800538d394c2"})
    EXPECT_EQ(parse_checksum_hex(other), std::nullopt) << other;
}

TEST(CheckpointFiles, TheManifestRecordsEachFileAsWritten) {
  TempDir dir;
  Checkpoint checkpoint = checkpoint_written_in(dir);
  json manifest = json::parse(read_file(checkpoint.path + "/manifest.json"));
  EXPECT_EQ(manifest["format"], kCheckpointFormat);
  std::vector<std::string> names;
  for (const json& entry : manifest["files"]) {
    std::string path = checkpoint.path + "/" + entry["name"].get<std::string>();
    names.push_back(entry["name"]);
    EXPECT_EQ(entry["size"], fs::file_size(path)) << path;
    EXPECT_EQ(entry["xxh3"], checksum_hex(checksum_of_file(path))) << path;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"experiment.json", "params.safetensors", "state.json", "model.json"}));

  CheckpointReader files(checkpoint);
  EXPECT_TRUE(files.checked());
  EXPECT_TRUE(files.has("state.json"));
  EXPECT_FALSE(files.has("ema.safetensors"));
  EXPECT_EQ(files.read_text("state.json"), R"({"step": 20})");
  EXPECT_EQ(files.read_json("experiment.json")["slug"], "tiny");
  auto params = files.read_tensors("params.safetensors");
  EXPECT_EQ(read_tensor(*params, *params->find("model.w"), graph::DType::f32), kWeight);
  EXPECT_EQ(files.checked_path("model.json"), checkpoint.path + "/model.json");
}

TEST(CheckpointFiles, OneFlippedByteInAnyFileIsRefusedNamingIt) {
  for (std::string name : {"experiment.json", "params.safetensors", "state.json", "model.json"}) {
    // In the data of the tensors, and in the header where a reader would trip on it first.
    for (bool early : {false, true}) {
      TempDir dir;
      Checkpoint checkpoint = checkpoint_written_in(dir);
      const std::string path = checkpoint.path + "/" + name;
      flip_byte(path, early ? 1 : fs::file_size(path) - 2);
      CheckpointReader files(checkpoint);
      std::string message;
      EXPECT_EQ(code_of([&] { read_as_commands_do(files, name); }, &message), kCheckpointDamaged) << name;
      EXPECT_NE(message.find(path + ": its bytes are not those written"), std::string::npos) << message;
      for (std::string other : {"experiment.json", "params.safetensors", "state.json", "model.json"}) {
        if (other == name) continue;
        EXPECT_EQ(code_of([&] { read_as_commands_do(files, other); }), "none") << other;
      }
    }
  }
}

TEST(CheckpointFiles, AFileMissingOrOfAnotherSizeIsDamaged) {
  TempDir dir;
  Checkpoint checkpoint = checkpoint_written_in(dir);
  CheckpointReader files(checkpoint);
  fs::remove(checkpoint.path + "/state.json");
  EXPECT_TRUE(files.has("state.json")) << "the manifest says what the checkpoint holds";
  std::string message;
  EXPECT_EQ(code_of([&] { files.read_json("state.json"); }, &message), kCheckpointDamaged);
  EXPECT_NE(message.find(checkpoint.path + "/state.json: it is missing, though manifest.json names it"),
            std::string::npos)
      << message;
  // Cut short: the checkpoint's error, not the safetensors reader's E-LOAD-004.
  const std::string params = checkpoint.path + "/params.safetensors";
  fs::resize_file(params, fs::file_size(params) - 4);
  EXPECT_EQ(code_of([&] { files.read_tensors("params.safetensors"); }, &message), kCheckpointDamaged);
  EXPECT_NE(message.find(params + ": it is"), std::string::npos) << message;
}

TEST(CheckpointFiles, AFileTheCheckpointDoesNotHoldIsAMismatch) {
  TempDir dir;
  Checkpoint checkpoint = checkpoint_written_in(dir);
  // Put there after the checkpoint was written: not one of its files.
  write_safetensors(checkpoint.path + "/ema.safetensors", {{"model.w", kWeight}});
  CheckpointReader files(checkpoint);
  EXPECT_FALSE(files.has("ema.safetensors"));
  std::string message;
  EXPECT_EQ(code_of([&] { files.read_tensors("ema.safetensors"); }, &message), kCheckpointMismatch);
  EXPECT_NE(message.find(checkpoint.path + ": the checkpoint holds no ema.safetensors"), std::string::npos) << message;
}

TEST(CheckpointFiles, AManifestThatIsNotOneIsRefused) {
  TempDir dir;
  Checkpoint checkpoint = checkpoint_written_in(dir);
  const std::string path = checkpoint.path + "/manifest.json";
  const json good = json::parse(read_file(path));
  auto code_with = [&](const std::string& text, std::string* message = nullptr) {
    write_file(path, text);
    return code_of([&] { CheckpointReader files(checkpoint); }, message);
  };
  std::string message;
  EXPECT_EQ(code_with("{\"format\": 2, \"files\": [", &message), kCheckpointDamaged);
  EXPECT_NE(message.find(path + ": not a manifest"), std::string::npos) << message;
  json newer = good;
  newer["format"] = kCheckpointFormat + 1;
  EXPECT_EQ(code_with(newer.dump(), &message), kCheckpointMismatch);
  EXPECT_NE(message.find("newer than this build reads"), std::string::npos) << message;
  for (const char* field : {"name", "size", "xxh3"}) {
    json entry_without = good;
    entry_without["files"][0].erase(field);
    EXPECT_EQ(code_with(entry_without.dump()), kCheckpointDamaged) << field;
  }
  json escaping = good;
  escaping["files"][0]["name"] = "../experiment.json";
  EXPECT_EQ(code_with(escaping.dump()), kCheckpointDamaged);
  json twice = good;
  twice["files"].push_back(good["files"][0]);
  EXPECT_EQ(code_with(twice.dump()), kCheckpointDamaged);
  EXPECT_EQ(code_with(good.dump()), "none");
}

// A checkpoint of format 1, written before checkpoints recorded checksums.
TEST(CheckpointFiles, ACheckpointWithoutAManifestIsReadUnchecked) {
  TempDir dir;
  Checkpoint checkpoint = checkpoint_written_in(dir);
  fs::remove(checkpoint.path + "/manifest.json");
  flip_byte(checkpoint.path + "/state.json", 10);
  CheckpointReader files(checkpoint);
  EXPECT_FALSE(files.checked());
  EXPECT_NE(files.unchecked_message().find(checkpoint.path + ": the checkpoint records no checksums"),
            std::string::npos);
  EXPECT_EQ(files.read_text("state.json"), R"({"step": 21})");
  auto params = files.read_tensors("params.safetensors");
  EXPECT_EQ(read_tensor(*params, *params->find("model.w"), graph::DType::f32), kWeight);
  EXPECT_FALSE(files.has("ema.safetensors"));
  EXPECT_EQ(code_of([&] { files.read_tensors("ema.safetensors"); }), kCheckpointMismatch);
  // Its files' own faults are still caught where the format shows them.
  write_file(checkpoint.path + "/experiment.json", "{");
  EXPECT_EQ(code_of([&] { files.read_json("experiment.json"); }), kCheckpointMismatch);
  fs::resize_file(checkpoint.path + "/params.safetensors", fs::file_size(checkpoint.path + "/params.safetensors") - 4);
  EXPECT_EQ(code_of([&] { files.read_tensors("params.safetensors"); }), kTruncated);
}

}  // namespace
}  // namespace sx::io
