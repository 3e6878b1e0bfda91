// AWS Signature V4 against AWS's published example: "GET Object" of the S3 API reference
// (sig-v4-header-based-auth.html), a ranged GET of examplebucket/test.txt.
#include "io/sigv4.h"

#include <gtest/gtest.h>

namespace sx::io {
namespace {

constexpr const char* kEmptySha256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

TEST(SigV4, PublishedGetObjectExample) {
  SigningInput request{"GET",
                       "/test.txt",
                       "",
                       {{"host", "examplebucket.s3.amazonaws.com"},
                        {"range", "bytes=0-9"},
                        {"x-amz-content-sha256", kEmptySha256},
                        {"x-amz-date", "20130524T000000Z"}},
                       kEmptySha256};
  AwsCredentials credentials{"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", ""};
  EXPECT_EQ(sigv4_authorization(request, credentials, "us-east-1", "s3", "20130524T000000Z"),
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
            "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,"
            "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

TEST(SigV4, AnotherSecretAnotherSignature) {
  SigningInput request{"GET", "/test.txt", "", {{"host", "h"}}, kEmptySha256};
  std::string a = sigv4_authorization(request, {"AK", "secret-a", ""}, "us-east-1", "s3", "20130524T000000Z");
  std::string b = sigv4_authorization(request, {"AK", "secret-b", ""}, "us-east-1", "s3", "20130524T000000Z");
  EXPECT_NE(a, b);
  EXPECT_EQ(a.find("secret"), std::string::npos);
}

TEST(SigV4, UriEncoding) {
  EXPECT_EQ(uri_encoded("a b/c~d_e-f.g", true), "a%20b/c~d_e-f.g");
  EXPECT_EQ(uri_encoded("a b/c", false), "a%20b%2Fc");
  EXPECT_EQ(uri_encoded("é+=&", false), "%C3%A9%2B%3D%26");
}

}  // namespace
}  // namespace sx::io
