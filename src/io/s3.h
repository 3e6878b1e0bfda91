// An S3 client over HTTP(S) with libcurl, signed with AWS Signature V4 (sigv4.h), for any
// S3-compatible store. Path-style addressing (ENDPOINT/bucket/key), which local servers
// (moto, MinIO) and AWS both take. Configuration comes from the standard variables:
//
//   AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL   the server; else https://s3.REGION.amazonaws.com
//   AWS_REGION, else AWS_DEFAULT_REGION          the region signed for; else us-east-1
//   AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY     the credentials (both, or a request is refused)
//   AWS_SESSION_TOKEN                            with temporary credentials
//   AWS_CA_BUNDLE                                a PEM file of the CA certificates an https
//                                                endpoint's certificate is checked against
//                                                (a private CA's), instead of the system's
//
// A request that fails to connect, times out, breaks off or gets a 5xx (or 429) answer is
// retried with doubling waits (a certificate that does not verify is not: it will not
// change); what still fails is a LoadError with an E-LOC code whose
// message names the s3:// URL and the server, never a secret:
//   E-LOC-003 refused (403, or no credentials), E-LOC-004 no such key or bucket (404),
//   E-LOC-005 the server cannot be reached or keeps failing, E-LOC-006 any other answer.
// A refusal names the HTTP status and S3's error code and message (SignatureDoesNotMatch,
// InvalidAccessKeyId, NoSuchBucket, ...). A HEAD's answer has no body to hold them, so a
// failed HEAD is followed by a GET of the object's first byte, whose answer does.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "io/sigv4.h"

namespace sx::io {

struct S3Config {
  std::string endpoint;  // "http://127.0.0.1:9000", no trailing '/'
  std::string region;
  AwsCredentials credentials;
  std::string ca_bundle;              // AWS_CA_BUNDLE; "" for the system's CA certificates
  uint64_t part_bytes = 16ull << 20;  // a larger transfer goes in parts of this size (uploads: S3's least is 5 MiB)
  int transfer_threads = 4;           // parts sent or fetched at once
  int attempts = 5;                   // tries of one request, the first included
  int first_wait_ms = 200;            // before the first retry; doubled before each next one

  // From the variables above; throws LoadError (E-LOC-003) naming the missing variable
  // when the credentials are not set.
  static S3Config from_environment();
};

struct ObjectInfo {
  uint64_t size = 0;
  std::string etag;        // as the server gives it, quotes removed
  std::string version_id;  // "" where the bucket keeps no versions
};

struct ListedObject {
  std::string key;
  uint64_t size = 0;
  std::string etag;  // quotes removed
};

class S3Client {
 public:
  explicit S3Client(S3Config config);
  S3Client(const S3Client&) = delete;
  S3Client& operator=(const S3Client&) = delete;
  ~S3Client();

  // The object's size and ETag; E-LOC-004 when it does not exist.
  ObjectInfo head(const std::string& bucket, const std::string& key);
  // The same, or nullopt when it does not exist.
  std::optional<ObjectInfo> head_if_exists(const std::string& bucket, const std::string& key);
  // The whole object, in memory: for small ones (markers, JSON); see get_to_file.
  std::string get(const std::string& bucket, const std::string& key);
  // Downloads the object into the local file `path` as it arrives, never holding it whole:
  // one GET up to part_bytes, above that one ranged GET per transfer thread (each range at
  // least part_bytes), in parallel, each retried as any request and written at its offset. `object` is what head()
  // said of it: each GET asks for its ETag (If-Match), so an object replaced meanwhile is
  // an error rather than a mix of two, and anything but `object.size` bytes is E-LOC-006.
  // The file is written under a temporary name and renamed to `path` when whole: on any
  // error `path` is as it was (E-LOAD-002 when the file cannot be written).
  void get_to_file(const std::string& bucket, const std::string& key, const std::string& path,
                   const ObjectInfo& object);
  // Exactly `length` bytes from `offset` (one ranged GET); E-LOC-006 when the object
  // gives fewer (it is shorter than that).
  std::string get_range(const std::string& bucket, const std::string& key, uint64_t offset, uint64_t length);
  // Writes the object in one PUT; returns its ETag.
  std::string put(const std::string& bucket, const std::string& key, std::string_view bytes);
  // Uploads a local file: one PUT up to part_bytes, a multipart upload above, its parts
  // sent transfer_threads at a time (aborted on failure, so no parts are left behind). A
  // file that cannot be read is E-LOAD-002. Returns the object's ETag.
  std::string put_file(const std::string& bucket, const std::string& key, const std::string& path);
  // Every object whose key starts with `prefix`, by key; with `below` false, only those
  // with no '/' after the prefix (S3's delimiter: one folder's files, not its subfolders').
  std::vector<ListedObject> list(const std::string& bucket, const std::string& prefix, bool below = true);
  // Removes the object; one that does not exist is no error (as S3 has it).
  void remove(const std::string& bucket, const std::string& key);

  const S3Config& config() const { return config_; }

 private:
  struct Request;
  struct Response;
  // The request, tried again as above; an answer that failed throws (fail_with).
  Response send(const Request& request);
  // One try of the request: the answer, or (status 0) what kept it from coming.
  Response exchange(const Request& request);
  // Throws the LoadError of `response`, a failed answer to `request` after `attempts` tries.
  [[noreturn]] void fail_with(const Request& request, Response response, int attempts);
  // Runs part(client, i) for each i < count from up to transfer_threads threads, each with
  // a client (a connection) of its own; the first failure stops the others and is rethrown.
  void in_parallel(uint64_t count, const std::function<void(S3Client&, uint64_t)>& part);
  std::string put_in_parts(const std::string& bucket, const std::string& key, const std::string& path, int fd,
                           uint64_t size);

  S3Config config_;
  void* curl_;  // one CURL handle, so connections are reused
};

// "s3://bucket/key", as messages name an object.
std::string s3_url(std::string_view bucket, std::string_view key);

}  // namespace sx::io
