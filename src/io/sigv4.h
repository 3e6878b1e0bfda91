// AWS Signature Version 4, as S3 takes it in the Authorization header: the canonical
// request (method, path, query, signed headers, payload hash) is hashed into a string to
// sign, which a key derived from the secret, the date, the region and the service signs
// with HMAC-SHA256 (OpenSSL's libcrypto). Pure functions: no clock, no network, so the
// published examples test them.
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace sx::io {

struct AwsCredentials {
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;  // empty unless temporary credentials
};

struct SigningInput {
  std::string method;           // "GET", "PUT", ...
  std::string canonical_path;   // already URI-encoded: "/bucket/some%20key"
  std::string canonical_query;  // sorted, encoded "a=1&b=2", or ""
  // Every header to sign, by lower-case name (host, x-amz-date and x-amz-content-sha256
  // among them), values trimmed.
  std::map<std::string, std::string> headers;
  std::string payload_sha256;  // lowercase hex of the body's SHA-256
};

// The Authorization header's value for a request made at `amz_date` ("20130524T000000Z").
std::string sigv4_authorization(const SigningInput& request, const AwsCredentials& credentials, std::string_view region,
                                std::string_view service, std::string_view amz_date);

// URI encoding as SigV4 wants it: every byte but A-Z a-z 0-9 - _ . ~ as %XX (upper-case
// hex); '/' kept when `keep_slash` (an object key in a path), encoded otherwise (a query value).
std::string uri_encoded(std::string_view text, bool keep_slash);

}  // namespace sx::io
