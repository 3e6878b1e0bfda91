// AWS Signature Version 4 (see sigv4.h).
#include "io/sigv4.h"

#include <fmt/format.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <cctype>
#include <span>
#include <stdexcept>

#include "io/identity.h"

namespace sx::io {
namespace {

std::string hmac_sha256(std::string_view key, std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (!HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(data.data()),
            data.size(), digest, &length)) {
    throw std::runtime_error("hmac-sha256 failed");
  }
  return std::string(reinterpret_cast<const char*>(digest), length);
}

std::string hex(std::string_view bytes) {
  std::string out;
  for (unsigned char c : bytes) out += fmt::format("{:02x}", c);
  return out;
}

}  // namespace

std::string uri_encoded(std::string_view text, bool keep_slash) {
  std::string out;
  for (unsigned char c : text) {
    bool unreserved = std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~';
    if (unreserved || (keep_slash && c == '/')) {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

std::string sigv4_authorization(const SigningInput& request, const AwsCredentials& credentials, std::string_view region,
                                std::string_view service, std::string_view amz_date) {
  std::string canonical_headers, signed_headers;
  for (const auto& [name, value] : request.headers) {
    canonical_headers += fmt::format("{}:{}\n", name, value);
    signed_headers += (signed_headers.empty() ? "" : ";") + name;
  }
  std::string canonical_request =
      fmt::format("{}\n{}\n{}\n{}\n{}\n{}", request.method, request.canonical_path, request.canonical_query,
                  canonical_headers, signed_headers, request.payload_sha256);
  std::string_view date = amz_date.substr(0, 8);
  std::string scope = fmt::format("{}/{}/{}/aws4_request", date, region, service);
  std::string string_to_sign =
      fmt::format("AWS4-HMAC-SHA256\n{}\n{}\n{}", amz_date, scope, sha256_hex(canonical_request));
  std::string key = hmac_sha256("AWS4" + credentials.secret_access_key, date);
  key = hmac_sha256(key, region);
  key = hmac_sha256(key, service);
  key = hmac_sha256(key, "aws4_request");
  return fmt::format("AWS4-HMAC-SHA256 Credential={}/{},SignedHeaders={},Signature={}", credentials.access_key_id,
                     scope, signed_headers, hex(hmac_sha256(key, string_to_sign)));
}

}  // namespace sx::io
