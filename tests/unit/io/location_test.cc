// Locations of every kind resolved: local paths, file://, s3://, and o41:// under
// SEXPGPU_O41_ROOT (a local folder or an s3:// URL); malformed ones are coded errors
// that show the location as written.
#include "io/location.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include "io/safetensors.h"

namespace sx::io {
namespace {

std::string code_of(const std::string& location) {
  try {
    resolve_location(location);
  } catch (const LoadError& e) {
    EXPECT_NE(std::string(e.what()).find(location), std::string::npos) << e.what();
    return e.code();
  }
  return "";
}

class O41Root {
 public:
  explicit O41Root(const char* root) {
    if (const char* old = getenv("SEXPGPU_O41_ROOT")) old_ = old;
    root ? setenv("SEXPGPU_O41_ROOT", root, 1) : unsetenv("SEXPGPU_O41_ROOT");
  }
  ~O41Root() { old_.empty() ? unsetenv("SEXPGPU_O41_ROOT") : setenv("SEXPGPU_O41_ROOT", old_.c_str(), 1); }

 private:
  std::string old_;
};

TEST(Location, LocalPathsAndFileUrls) {
  ResolvedLocation plain = resolve_location("w/model.safetensors");
  EXPECT_FALSE(plain.is_s3());
  EXPECT_EQ(plain.path, "w/model.safetensors");
  EXPECT_EQ(resolve_location("file:///a%20b/c").path, "/a b/c");
  EXPECT_EQ(resolve_location("/x/run").child("step-00000001").path, "/x/run/step-00000001");
}

TEST(Location, S3BucketAndKey) {
  ResolvedLocation s3 = resolve_location("s3://my-bucket/llama/model.safetensors");
  EXPECT_TRUE(s3.is_s3());
  EXPECT_EQ(s3.bucket, "my-bucket");
  EXPECT_EQ(s3.key, "llama/model.safetensors");
  EXPECT_EQ(s3.url(), "s3://my-bucket/llama/model.safetensors");
  ResolvedLocation prefix = resolve_location("s3://my-bucket/runs/");
  EXPECT_EQ(prefix.key, "runs");
  EXPECT_EQ(prefix.child("step-00000002").key, "runs/step-00000002");
  EXPECT_EQ(resolve_location("s3://my-bucket").child("a").key, "a");
  EXPECT_EQ(resolve_location("S3://my-bucket/k").key, "k");
}

TEST(Location, MalformedS3) {
  EXPECT_EQ(code_of("s3://"), "E-LOC-001");
  EXPECT_EQ(code_of("s3://My_Bucket/k"), "E-LOC-001");
  EXPECT_EQ(code_of("s3://ab/k"), "E-LOC-001");
  EXPECT_EQ(code_of("s3://bucket/a//b"), "E-LOC-001");
  EXPECT_EQ(code_of("s3://bucket/a/../b"), "E-LOC-001");
}

TEST(Location, O41UnderALocalRoot) {
  O41Root root("/srv/o41/");
  ResolvedLocation run = resolve_location("o41://team/run");
  EXPECT_FALSE(run.is_s3());
  EXPECT_EQ(run.path, "/srv/o41/team/run");
  EXPECT_EQ(run.written, "o41://team/run");
  EXPECT_EQ(resolve_location("o41://team/run/w.safetensors").path, "/srv/o41/team/run/w.safetensors");
}

TEST(Location, O41UnderAnS3Root) {
  O41Root root("s3://bucket/root");
  ResolvedLocation run = resolve_location("o41://team/run/");
  EXPECT_TRUE(run.is_s3());
  EXPECT_EQ(run.bucket, "bucket");
  EXPECT_EQ(run.key, "root/team/run");
  O41Root bare("s3://bucket");
  EXPECT_EQ(resolve_location("o41://team/run").key, "team/run");
}

TEST(Location, O41Refusals) {
  {
    O41Root root(nullptr);
    EXPECT_EQ(code_of("o41://team/run"), "E-LOC-002");
  }
  O41Root root("https://example.com/root");
  EXPECT_EQ(code_of("o41://team/run"), "E-LOC-002");
  O41Root local("/srv");
  EXPECT_EQ(code_of("o41://team"), "E-LOC-001");
  EXPECT_EQ(code_of("o41://team/../run"), "E-LOC-001");
}

TEST(Location, OtherSchemes) { EXPECT_EQ(code_of("https://example.com/w.safetensors"), "E-LOAD-013"); }

// Where only a local file is read, a storage location is refused by name.
TEST(Location, LocalPathRefusesStorage) {
  for (const char* location : {"s3://bucket/w.safetensors", "o41://team/run/w.safetensors"}) {
    try {
      local_path(location);
      FAIL() << location;
    } catch (const LoadError& e) {
      EXPECT_EQ(e.code(), "E-LOAD-010");
      EXPECT_NE(std::string(e.what()).find(location), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace sx::io
