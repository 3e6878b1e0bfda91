// The S3 client against a real S3-compatible server: moto's, started by
// tests/moto_fixture.py, which passes its endpoint and bucket in the environment.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <string>

#include "io/identity.h"
#include "io/location.h"
#include "io/s3.h"
#include "io/safetensors.h"
#include "io/tensor_source.h"
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

}  // namespace
}  // namespace sx::io
