// What s3.cc and s3_transfer.cc share: a request and its answer, where a download's body
// goes, and the bits of S3's XML answers read. Internal to src/io.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "io/s3.h"
#include "io/util.h"

namespace sx::io {

namespace s3_detail {

// Where a GET of bytes [offset, offset + length) of an object goes as it arrives: the file,
// at those offsets. The answer must be `status` (200 for a whole object, 206 for a range).
struct RangeWriter {
  AtomicFile& file;
  std::string url;
  uint64_t offset, length;
  long status;
  uint64_t written = 0;  // of this attempt

  // Writes the next bytes of an answer `answered`; E-LOC-006 for another answer than
  // `status`, or more bytes than asked.
  void take(long answered, std::string_view bytes);
};

// The raw text of the first <tag>...</tag> in `xml` from `from` (`end` set past it);
// nullopt when absent. S3's answers are small and regular, so this is all the XML read here.
std::optional<std::string_view> xml_element(std::string_view xml, std::string_view tag, size_t from = 0,
                                            size_t* end = nullptr);

// An element's text with XML's entities decoded.
std::optional<std::string> xml_text(std::string_view xml, std::string_view tag);
// An ETag as S3 quotes it, without the quotes.
std::string unquoted(std::string text);

// What an answer said, for a message: "HTTP 403, SignatureDoesNotMatch: The request
// signature we calculated does not match...", S3's error code and message from its XML
// error document, or "HTTP 403" alone when the body holds none. Nothing else of the body
// is shown (S3 echoes the request it refused there), and no secret of `credentials`
// (nor anything that looks like a signature) even where a server puts one in its message.
std::string answer_said(long status, std::string_view body, const AwsCredentials& credentials);

}  // namespace s3_detail

struct S3Client::Request {
  std::string method;  // GET, HEAD, PUT, POST, DELETE
  std::string bucket, key;
  std::map<std::string, std::string> query;    // name -> value, not yet encoded
  std::map<std::string, std::string> headers;  // lower-case name -> value, signed
  std::string_view body;
  s3_detail::RangeWriter* into = nullptr;  // a 2xx answer's body goes there, not into Response::body
};

struct S3Client::Response {
  long status = 0;  // 0 when no answer came
  std::string body;
  std::map<std::string, std::string> headers;  // lower-case names
  int transfer = 0;                            // curl's CURLcode: 0 when an answer came
  std::string transfer_error;                  // what curl said when none did
};

}  // namespace sx::io
