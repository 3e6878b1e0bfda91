// The S3 client against a real S3-compatible server: moto's, started by
// tests/moto_fixture.py, which passes its endpoint and bucket in the environment.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "io/checkpoint.h"
#include "io/identity.h"
#include "io/location.h"
#include "io/s3.h"
#include "io/safetensors.h"
#include "io/storage_cache.h"
#include "io/tensor_source.h"
#include "io/util.h"
#include "test_util.h"

namespace sx::io {
namespace {

class S3Client_ : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* bucket = getenv("SEXPGPU_TEST_BUCKET");
    ASSERT_NE(bucket, nullptr) << "run s3_tests under tests/moto_fixture.py, which starts the server";
    bucket_ = bucket;
    // A key prefix of its own per test, so tests share the bucket without seeing each other.
    prefix_ = std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "/";
  }
  std::string bucket_, prefix_;
};

TEST_F(S3Client_, PutGetHeadRemove) {
  S3Client client(S3Config::from_environment());
  std::string key = prefix_ + "dir/a file é.bin";
  client.put(bucket_, key, "0123456789");
  EXPECT_EQ(client.get(bucket_, key), "0123456789");
  ObjectInfo info = client.head(bucket_, key);
  EXPECT_EQ(info.size, 10u);
  EXPECT_EQ(info.etag, "781e5e245d69b566979b86e28d23f2c7");  // MD5 of the bytes, for a single PUT
  client.put(bucket_, key, "another");
  EXPECT_NE(client.head(bucket_, key).etag, info.etag);
  client.remove(bucket_, key);
  EXPECT_FALSE(client.head_if_exists(bucket_, key));
  client.remove(bucket_, key);  // removing what is not there is no error
}

TEST_F(S3Client_, RangedGets) {
  S3Client client(S3Config::from_environment());
  client.put(bucket_, prefix_ + "k", "0123456789");
  EXPECT_EQ(client.get_range(bucket_, prefix_ + "k", 2, 3), "234");
  EXPECT_EQ(client.get_range(bucket_, prefix_ + "k", 0, 10), "0123456789");
  try {
    client.get_range(bucket_, prefix_ + "k", 8, 5);
    FAIL() << "a range past the end";
  } catch (const LoadError& e) {
    EXPECT_EQ(e.code(), kStorageAnswer) << e.what();
  }
}

TEST_F(S3Client_, MissingKeyAndBucket) {
  S3Client client(S3Config::from_environment());
  try {
    client.get(bucket_, prefix_ + "absent");
    FAIL();
  } catch (const LoadError& e) {
    EXPECT_EQ(e.code(), kStorageNotFound);
    EXPECT_NE(std::string(e.what()).find("s3://" + bucket_ + "/" + prefix_ + "absent"), std::string::npos);
  }
  try {
    client.list("no-such-bucket-here", "");
    FAIL();
  } catch (const LoadError& e) {
    EXPECT_EQ(e.code(), kStorageNotFound) << e.what();
  }
}

TEST_F(S3Client_, ListsAPrefixAcrossPages) {
  S3Client client(S3Config::from_environment());
  for (int i = 0; i < 1005; ++i) client.put(bucket_, fmt::format("{}many/{:04}", prefix_, i), "x");
  client.put(bucket_, prefix_ + "other", "y");
  std::vector<ListedObject> listed = client.list(bucket_, prefix_ + "many/");
  ASSERT_EQ(listed.size(), 1005u);  // more than one page of 1000
  EXPECT_EQ(listed.front().key, prefix_ + "many/0000");
  EXPECT_EQ(listed.back().key, prefix_ + "many/1004");
  EXPECT_EQ(listed.back().size, 1u);
}

TEST_F(S3Client_, MultipartUpload) {
  S3Config config = S3Config::from_environment();
  config.part_bytes = 5 << 20;  // S3's least part size
  S3Client client(config);
  testing::TempDir dir;
  std::string bytes(12 << 20, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 131 % 251);
  testing::write_file(dir.file("big.bin"), bytes);
  client.put_file(bucket_, prefix_ + "big.bin", dir.file("big.bin"));
  ObjectInfo info = client.head(bucket_, prefix_ + "big.bin");
  EXPECT_EQ(info.size, bytes.size());
  EXPECT_NE(info.etag.find("-3"), std::string::npos) << info.etag;  // three parts
  EXPECT_EQ(client.get(bucket_, prefix_ + "big.bin"), bytes);
  testing::write_file(dir.file("small.bin"), "small");
  client.put_file(bucket_, prefix_ + "small.bin", dir.file("small.bin"));
  EXPECT_EQ(client.get(bucket_, prefix_ + "small.bin"), "small");
}

// A download into a file: above part_bytes in a range per connection (each at least
// part_bytes), equal to what was uploaded either way; an object replaced since its HEAD is refused (If-Match).
TEST_F(S3Client_, DownloadsToAFile) {
  S3Config config = S3Config::from_environment();
  config.part_bytes = 1000;
  config.transfer_threads = 3;
  S3Client client(config);
  testing::TempDir dir;
  std::string bytes(10'500, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 131 % 251);
  client.put(bucket_, prefix_ + "obj", bytes);  // one PUT: moto takes no parts of 1000 bytes
  client.get_to_file(bucket_, prefix_ + "obj", dir.file("ranged"), client.head(bucket_, prefix_ + "obj"));
  EXPECT_EQ(testing::read_file(dir.file("ranged")), bytes);  // 3 ranges of 3500 bytes
  client.put(bucket_, prefix_ + "small", "small");
  client.get_to_file(bucket_, prefix_ + "small", dir.file("whole"), client.head(bucket_, prefix_ + "small"));
  EXPECT_EQ(testing::read_file(dir.file("whole")), "small");
  client.put(bucket_, prefix_ + "empty", "");
  client.get_to_file(bucket_, prefix_ + "empty", dir.file("empty"), client.head(bucket_, prefix_ + "empty"));
  EXPECT_EQ(testing::read_file(dir.file("empty")), "");

  ObjectInfo before = client.head(bucket_, prefix_ + "obj");
  client.put(bucket_, prefix_ + "obj", std::string(bytes.size(), 'x'));
  try {
    client.get_to_file(bucket_, prefix_ + "obj", dir.file("changed"), before);
    FAIL() << "an object replaced since its HEAD";
  } catch (const LoadError& e) {
    EXPECT_EQ(e.code(), kStorageAnswer) << e.what();
    EXPECT_NE(std::string(e.what()).find("changed"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(dir.file("changed")));
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.file("")), {}), 3);  // no temporary left
}

// A loader's object is downloaded into the cache once per version: an unchanged object is
// read from the copy, a replaced one is downloaded again.
TEST_F(S3Client_, CachedObjects) {
  testing::TempDir cache;
  setenv("SEXPGPU_CACHE_DIR", cache.file("c").c_str(), 1);
  S3Client client(S3Config::from_environment());
  client.put(bucket_, prefix_ + "data/input.txt", "first version");
  const ResolvedLocation where = resolve_location("s3://" + bucket_ + "/" + prefix_ + "data/input.txt");
  const std::string first = cached_object(where);
  EXPECT_TRUE(first.starts_with(cache.file("c/objects/"))) << first;
  EXPECT_TRUE(first.ends_with("/input.txt")) << first;
  EXPECT_EQ(testing::read_file(first), "first version");
  testing::write_file(first, "FIRST VERSION");  // were it downloaded again, this would go
  EXPECT_EQ(cached_object(where), first);
  EXPECT_EQ(testing::read_file(first), "FIRST VERSION");
  client.put(bucket_, prefix_ + "data/input.txt", "second version");
  const std::string second = cached_object(where);
  EXPECT_NE(second, first);
  EXPECT_EQ(testing::read_file(second), "second version");
  try {
    cached_object(resolve_location("s3://" + bucket_ + "/" + prefix_ + "data/absent.txt"));
    FAIL();
  } catch (const LoadError& e) {
    EXPECT_EQ(e.code(), kStorageNotFound);
    EXPECT_NE(std::string(e.what()).find("/data/absent.txt"), std::string::npos) << e.what();
  }
  unsetenv("SEXPGPU_CACHE_DIR");
}

TEST_F(S3Client_, AFileThatCannotBeRead) {
  S3Client client(S3Config::from_environment());
  try {
    client.put_file(bucket_, prefix_ + "x", "/nonexistent/file");
    FAIL();
  } catch (const LoadError& e) {
    EXPECT_EQ(e.code(), kUnreadable);
  }
  EXPECT_FALSE(client.head_if_exists(bucket_, prefix_ + "x"));
}

// Tensors read from s3:// and o41:// files, whole or sharded, and their identities.
class S3Files : public S3Client_ {
 protected:
  // Uploads f32 tensors of one element each as a safetensors file at `key`.
  void upload(const std::string& key, const std::vector<std::string>& names, float value = 1.5f) {
    std::vector<std::pair<std::string, graph::Tensor>> contents;
    for (const auto& name : names) contents.emplace_back(name, graph::Tensor::scalar(graph::DType::f32, value));
    write_safetensors(dir_.file("upload"), contents);
    client_.put_file(bucket_, key, dir_.file("upload"));
  }
  std::string url(const std::string& key) { return "s3://" + bucket_ + "/" + key; }

  testing::TempDir dir_;
  S3Client client_{S3Config::from_environment()};
};

TEST_F(S3Files, ASingleFile) {
  upload(prefix_ + "w.safetensors", {"a", "b"});
  auto source = TensorSource::open(url(prefix_ + "w.safetensors"));
  auto b = source->find("b");
  ASSERT_TRUE(b);
  EXPECT_EQ(read_tensor(*b->first, b->second, graph::DType::f32).data<float>()[0], 1.5f);
  EXPECT_FALSE(source->find("c"));
  EXPECT_EQ(source->files(), std::vector<std::string>{url(prefix_ + "w.safetensors")});
}

TEST_F(S3Files, AShardedIndex) {
  upload(prefix_ + "m/a.safetensors", {"x"});
  upload(prefix_ + "m/sub/b.safetensors", {"y"}, 2.5f);
  client_.put(bucket_, prefix_ + "m/model.safetensors.index.json",
              R"({"weight_map": {"x": "a.safetensors", "y": "sub/b.safetensors"}})");
  auto source = TensorSource::open(url(prefix_ + "m/model.safetensors.index.json"));
  EXPECT_EQ(source->files(),
            (std::vector<std::string>{url(prefix_ + "m/model.safetensors.index.json"), url(prefix_ + "m/a.safetensors"),
                                      url(prefix_ + "m/sub/b.safetensors")}));
  auto y = source->find("y");
  ASSERT_TRUE(y);
  EXPECT_EQ(read_tensor(*y->first, y->second, graph::DType::f32).data<float>()[0], 2.5f);
  // A shard the index names that is not there.
  client_.put(bucket_, prefix_ + "m/bad.index.json", R"({"weight_map": {"x": "gone.safetensors"}})");
  try {
    TensorSource::open(url(prefix_ + "m/bad.index.json"));
    FAIL();
  } catch (const LoadError& e) {
    EXPECT_EQ(e.code(), "E-LOAD-002") << e.what();
    EXPECT_NE(std::string(e.what()).find("gone.safetensors cannot be found"), std::string::npos) << e.what();
  }
}

TEST_F(S3Files, MissingAndTruncated) {
  try {
    TensorSource::open(url(prefix_ + "absent.safetensors"));
    FAIL();
  } catch (const LoadError& e) {
    EXPECT_EQ(e.code(), "E-LOC-004") << e.what();
  }
  upload(prefix_ + "whole.safetensors", {"a"});
  std::string bytes = client_.get(bucket_, prefix_ + "whole.safetensors");
  client_.put(bucket_, prefix_ + "cut.safetensors", bytes.substr(0, bytes.size() - 2));
  try {
    TensorSource::open(url(prefix_ + "cut.safetensors"));
    FAIL();
  } catch (const LoadError& e) {
    EXPECT_EQ(e.code(), "E-LOAD-004") << e.what();
    EXPECT_EQ(std::string(e.what()).rfind(url(prefix_ + "cut.safetensors") + ": ", 0), 0u) << e.what();
  }
}

TEST_F(S3Files, IdentityIsTheETag) {
  upload(prefix_ + "w.safetensors", {"a"});
  FileIdentity identity = identify(url(prefix_ + "w.safetensors"));
  EXPECT_FALSE(identity.etag.empty());
  EXPECT_EQ(identity.sha256, "");
  check_unchanged(url(prefix_ + "w.safetensors"), identity);
  upload(prefix_ + "w.safetensors", {"a"}, 9.0f);  // the same size, other bytes
  try {
    check_unchanged(url(prefix_ + "w.safetensors"), identity);
    FAIL();
  } catch (const LoadError& e) {
    EXPECT_EQ(e.code(), "E-LOAD-001") << e.what();
    EXPECT_NE(std::string(e.what()).find("its ETag is"), std::string::npos) << e.what();
  }
}

TEST_F(S3Files, O41UnderAnS3Root) {
  upload(prefix_ + "root/team/run/w.safetensors", {"a"});
  setenv("SEXPGPU_O41_ROOT", url(prefix_ + "root").c_str(), 1);
  auto source = TensorSource::open("o41://team/run/w.safetensors");
  unsetenv("SEXPGPU_O41_ROOT");
  EXPECT_TRUE(source->find("a"));
  EXPECT_EQ(source->path(), url(prefix_ + "root/team/run/w.safetensors"));
}

// Checkpoints at s3:// and o41:// locations: files first, the completion marker last;
// listing by markers; local copies in the cache; pruning and stale uploads.
class S3Checkpoints : public S3Files {
 protected:
  void SetUp() override {
    S3Files::SetUp();
    setenv("SEXPGPU_CACHE_DIR", cache_.path().c_str(), 1);
    location_ = url(prefix_ + "runs");
  }
  void TearDown() override { unsetenv("SEXPGPU_CACHE_DIR"); }

  Checkpoint write(int64_t step, const std::string& state) {
    return write_checkpoint(
        location_, step,
        {CheckpointFile::bytes("state.json", state),
         CheckpointFile::tensors("params.safetensors", {{"w", graph::Tensor::scalar(graph::DType::f32, 1.0 * step)}})});
  }
  std::vector<int64_t> steps() {
    std::vector<int64_t> out;
    for (const Checkpoint& c : list_checkpoints(location_)) out.push_back(c.step);
    return out;
  }
  std::vector<std::string> keys(const std::string& under) {
    std::vector<std::string> out;
    for (const ListedObject& o : client_.list(bucket_, prefix_ + under)) out.push_back(o.key.substr(prefix_.size()));
    return out;
  }
  std::string code_of_resolving(const std::string& location) {
    try {
      resolve_checkpoint(location);
    } catch (const CheckpointError& e) {
      EXPECT_NE(std::string(e.what()).find("s3://"), std::string::npos) << e.what();
      return e.code();
    }
    return "";
  }

  testing::TempDir cache_;
  std::string location_;
};

TEST_F(S3Checkpoints, WrittenListedReadAndPruned) {
  EXPECT_EQ(steps(), std::vector<int64_t>{});
  Checkpoint first = write(1, "one");
  EXPECT_EQ(first, (Checkpoint{1, location_ + "/step-00000001", location_ + "/step-00000001"}));
  write(2, "two");
  EXPECT_EQ(steps(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(keys("runs/"),
            (std::vector<std::string>{"runs/step-00000001.complete", "runs/step-00000001/manifest.json",
                                      "runs/step-00000001/params.safetensors", "runs/step-00000001/state.json",
                                      "runs/step-00000002.complete", "runs/step-00000002/manifest.json",
                                      "runs/step-00000002/params.safetensors", "runs/step-00000002/state.json"}));
  // LOC means its newest; LOC/step-N that one; each read from a local copy in the cache.
  Checkpoint newest = resolve_checkpoint(location_);
  EXPECT_EQ(newest.step, 2);
  EXPECT_EQ(newest.path.rfind(cache_.path().string(), 0), 0u) << newest.path;
  EXPECT_EQ(testing::read_file(newest.path + "/state.json"), "two");
  EXPECT_EQ(testing::read_file(resolve_checkpoint(location_ + "/step-00000001").path + "/state.json"), "one");
  EXPECT_EQ(resolve_checkpoint(location_).path, newest.path);  // downloaded once
  // A step written again is another checkpoint, read again.
  write(2, "two again");
  EXPECT_EQ(testing::read_file(resolve_checkpoint(location_).path + "/state.json"), "two again");
  EXPECT_EQ(prune_checkpoints(location_, 1), (std::vector<Checkpoint>{first}));
  EXPECT_EQ(steps(), std::vector<int64_t>{2});
  EXPECT_EQ(keys("runs/step-00000001"), std::vector<std::string>{});
}

TEST_F(S3Checkpoints, NoneHere) {
  EXPECT_EQ(code_of_resolving(location_), "E-CKPT-003");
  write(1, "one");
  EXPECT_EQ(code_of_resolving(location_ + "/step-00000002"), "E-CKPT-003");
}

// A writer that died mid-upload leaves files and its temporary object but no marker: no
// checkpoint is listed, and the next writer clears them.
TEST_F(S3Checkpoints, AnUploadCutShortNeverLooksWhole) {
  write(1, "one");
  pid_t child = fork();
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);  // a process that is gone
  std::string temporary = fmt::format(".step-00000002.tmp-{}-0-{}", child, host_name());
  client_.put(bucket_, prefix_ + "runs/" + temporary, "");
  client_.put(bucket_, prefix_ + "runs/step-00000002/state.json", "half");
  EXPECT_EQ(steps(), std::vector<int64_t>{1});
  EXPECT_EQ(resolve_checkpoint(location_).step, 1);
  EXPECT_EQ(remove_stale_temporaries(location_), 1);
  EXPECT_EQ(keys("runs/step-00000002"), std::vector<std::string>{});
  EXPECT_EQ(keys("runs/.step"), std::vector<std::string>{});
  EXPECT_EQ(steps(), std::vector<int64_t>{1});
}

// A marker whose files are missing or not the ones it names is E-CKPT-007, never used.
TEST_F(S3Checkpoints, AMarkerWithoutItsFiles) {
  write(1, "one");
  client_.put(bucket_, prefix_ + "runs/step-00000003.complete",
              R"({"step": 3, "files": [{"name": "state.json", "size": 3, "etag": "abc"}]})");
  EXPECT_EQ(steps(), (std::vector<int64_t>{1, 3}));  // listing reads markers alone
  EXPECT_EQ(code_of_resolving(location_), "E-CKPT-007");
  client_.put(bucket_, prefix_ + "runs/step-00000003/state.json", "xyz");  // there, but not the one named
  EXPECT_EQ(code_of_resolving(location_), "E-CKPT-007");
  client_.put(bucket_, prefix_ + "runs/step-00000003.complete", "not json");
  EXPECT_EQ(code_of_resolving(location_), "E-CKPT-007");
  client_.put(bucket_, prefix_ + "runs/step-00000003.complete",
              R"({"files": [{"name": "../x", "size": 1, "etag": "e"}]})");
  EXPECT_EQ(code_of_resolving(location_), "E-CKPT-007");
  // Nothing half downloaded is left in the cache either.
  for (const auto& entry : std::filesystem::recursive_directory_iterator(cache_.path() / "checkpoints")) {
    EXPECT_EQ(entry.path().filename().string().find("step-"), std::string::npos) << entry.path();
  }
}

TEST_F(S3Checkpoints, O41UnderAnS3RootAndFilesBeside) {
  setenv("SEXPGPU_O41_ROOT", url(prefix_ + "root").c_str(), 1);
  write_checkpoint("o41://team/run", 4, {CheckpointFile::bytes("state.json", "four")});
  // Each is named as the location was written, whether listed, named or read from the cache.
  const Checkpoint four{4, url(prefix_ + "root/team/run/step-00000004"), "o41://team/run/step-00000004"};
  EXPECT_EQ(list_checkpoints("o41://team/run"), std::vector<Checkpoint>{four});
  EXPECT_EQ(find_checkpoint("o41://team/run/step-00000004/"), four);
  Checkpoint cached = resolve_checkpoint("o41://team/run");
  EXPECT_EQ(cached.path.rfind(cache_.path().string(), 0), 0u) << cached.path;
  EXPECT_EQ(cached.written, four.written);
  std::string side = side_folder("o41://team/run", {"metrics.jsonl"});
  testing::write_file(side + "/metrics.jsonl", "{}\n");
  publish_side_file("o41://team/run", "metrics.jsonl");
  EXPECT_EQ(client_.get(bucket_, prefix_ + "root/team/run/metrics.jsonl"), "{}\n");
  std::filesystem::remove(side + "/metrics.jsonl");
  EXPECT_EQ(testing::read_file(side_folder("o41://team/run", {"metrics.jsonl"}) + "/metrics.jsonl"), "{}\n");
  unsetenv("SEXPGPU_O41_ROOT");
}

}  // namespace
}  // namespace sx::io
