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
  long status = 0;
  std::string body;
  std::map<std::string, std::string> headers;  // lower-case names
};

}  // namespace sx::io
