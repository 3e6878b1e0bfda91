// The record of frozen :load parameters: its JSON both ways, the refusal of a malformed
// one, the check of its files, and reading a referenced tensor.
#include "io/load_record.h"

#include <gtest/gtest.h>

#include "io/checkpoint.h"
#include "io/checkpoint_files.h"
#include "io/safetensors.h"
#include "test_util.h"

namespace sx::io {
namespace {

using nlohmann::json;
using testing::TempDir;

void write_w(const std::string& file, std::vector<double> values) {
  write_safetensors(file, {{"w", graph::Tensor::from_doubles(graph::DType::f32, {2}, values)}});
}

// A record of one parameter loaded from a file written here.
LoadRecord written_record(TempDir& dir) {
  const std::string file = dir.file("w.safetensors");
  write_w(file, {1.5, -2});
  return {{{"teacher.q", file, "w"}}, {{file, identify(file)}}};
}

std::string malformed_message(const json& loads) {
  try {
    parse_load_record(json{{"loads", loads}}, "ckpt/experiment.json");
  } catch (const CheckpointError& e) {
    EXPECT_EQ(e.code(), kCheckpointMismatch);
    return e.what();
  }
  ADD_FAILURE() << "accepted " << loads.dump();
  return {};
}

TEST(LoadRecord, JsonBothWays) {
  TempDir dir;
  LoadRecord record = written_record(dir);
  json experiment{{"step", 3}, {"loads", load_record_json(record)}};
  EXPECT_EQ(parse_load_record(json::parse(experiment.dump()), "here"), record);
  EXPECT_EQ(load_record_json(record)["files"][0]["size"], identify(dir.file("w.safetensors")).size);
  ASSERT_NE(record.find("teacher.q"), nullptr);
  EXPECT_EQ(record.find("teacher.k"), nullptr);
}

TEST(LoadRecord, AbsentMeansNothingWasLoadedFrozen) {
  EXPECT_EQ(parse_load_record(json{{"step", 3}}, "here"), LoadRecord{});
}

TEST(LoadRecord, MalformedIsRefusedNamingTheField) {
  EXPECT_EQ(malformed_message(json::array()), "ckpt/experiment.json: `loads` is not an object");
  EXPECT_EQ(malformed_message(json{{"files", json::array()}}),
            "ckpt/experiment.json: `loads` has no list `parameters`");
  EXPECT_EQ(malformed_message(
                json{{"parameters", json::array({json{{"path", "a"}, {"file", "f"}}})}, {"files", json::array()}}),
            "ckpt/experiment.json: an entry of loads.parameters has no string `tensor`");
  EXPECT_EQ(malformed_message(json{{"parameters", json::array()},
                                   {"files", json::array({json{{"file", "f"}, {"sha256", "00"}, {"size", -1}}})}}),
            "ckpt/experiment.json: the entry of loads.files for f has no whole-number `size`");
}

TEST(LoadRecord, ReadFromACheckpointFolder) {
  TempDir dir;
  LoadRecord record = written_record(dir);
  testing::write_file(dir.file("experiment.json"), json{{"loads", load_record_json(record)}}.dump());
  CheckpointReader checkpoint({0, dir.path().string(), dir.path().string()});
  EXPECT_EQ(read_load_record(checkpoint), record);
  testing::write_file(dir.file("experiment.json"), "{");
  EXPECT_THROW(read_load_record(checkpoint), CheckpointError);
}

TEST(LoadRecord, AChangedFileIsRefused) {
  TempDir dir;
  LoadRecord record = written_record(dir);
  check_files_unchanged(record);
  EXPECT_EQ(read_reference(record.parameters[0], graph::DType::f32).to_doubles(), (std::vector<double>{1.5, -2}));
  write_w(dir.file("w.safetensors"), {1.5, 2});
  try {
    check_files_unchanged(record);
    ADD_FAILURE();
  } catch (const LoadError& e) {
    EXPECT_EQ(e.code(), kFileChanged);
  }
}

TEST(LoadRecord, AReferenceToATensorTheFileLacks) {
  TempDir dir;
  written_record(dir);
  try {
    read_reference({"teacher.k", dir.file("w.safetensors"), "k"}, graph::DType::f32);
    ADD_FAILURE();
  } catch (const LoadError& e) {
    EXPECT_EQ(e.code(), kMissingTensor);
    EXPECT_EQ(std::string(e.what()), dir.file("w.safetensors") + ": holds no tensor `k`, which `teacher.k` loads");
  }
}

}  // namespace
}  // namespace sx::io
