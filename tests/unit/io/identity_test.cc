// File identities: size and SHA-256, against known digests, and check_unchanged.
#include "io/identity.h"

#include <gtest/gtest.h>

#include "io/safetensors.h"
#include "test_util.h"

namespace sx::io {
namespace {

using testing::TempDir;

TEST(Identity, KnownDigests) {
  TempDir dir;
  testing::write_file(dir.file("empty"), "");
  EXPECT_EQ(identify(dir.file("empty")),
            (FileIdentity{0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "", ""}));
  testing::write_file(dir.file("abc"), "abc");
  EXPECT_EQ(identify(dir.file("abc")),
            (FileIdentity{3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", "", ""}));
  // Larger than one read chunk: the same as hashing it at once.
  std::string big(3 * (1 << 20) + 17, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 7919 % 251);
  testing::write_file(dir.file("big"), big);
  FileIdentity id = identify(dir.file("big"));
  EXPECT_EQ(id.size, big.size());
  EXPECT_EQ(id.sha256, sha256_hex(testing::as_vector(big)));
}

TEST(Identity, ChangedFileRefused) {
  TempDir dir;
  const std::string path = dir.file("w.safetensors");
  testing::write_file(path, "abc");
  FileIdentity recorded = identify(path);
  check_unchanged(path, recorded);
  testing::write_file(path, "abd");
  try {
    check_unchanged(path, recorded);
    ADD_FAILURE();
  } catch (const LoadError& e) {
    EXPECT_EQ(e.code(), "E-LOAD-001");
    EXPECT_EQ(std::string(e.what()), path + ": the file changed since the checkpoint recorded it: its sha256 is " +
                                         identify(path).sha256 + ", and was " + recorded.sha256);
  }
  testing::write_file(path, "abcd");
  try {
    check_unchanged(path, recorded);
    ADD_FAILURE();
  } catch (const LoadError& e) {
    EXPECT_EQ(e.code(), "E-LOAD-001");
    EXPECT_EQ(std::string(e.what()),
              path + ": the file changed since the checkpoint recorded it: it is 4 bytes, and was 3 bytes");
  }
}

TEST(Identity, Unreadable) {
  TempDir dir;
  try {
    identify(dir.file("gone"));
    ADD_FAILURE();
  } catch (const LoadError& e) {
    EXPECT_EQ(e.code(), "E-LOAD-002");
    EXPECT_EQ(std::string(e.what()), dir.file("gone") + ": the file does not exist");
  }
  EXPECT_THROW(identify(dir.path().string()), LoadError);
}

}  // namespace
}  // namespace sx::io
