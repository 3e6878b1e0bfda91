// The S3 client against a real S3-compatible server: moto's, started by
// tests/moto_fixture.py, which passes its endpoint and bucket in the environment.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <string>

#include "io/location.h"
#include "io/s3.h"
#include "io/safetensors.h"
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

}  // namespace
}  // namespace sx::io
