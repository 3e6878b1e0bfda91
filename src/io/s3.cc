// The S3 client (see s3.h): its requests, and the small ones (HEAD, GET, PUT, listing,
// DELETE). Transfers of whole files are in s3_transfer.cc.
#include "io/s3.h"

#include <curl/curl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <exception>
#include <map>
#include <mutex>
#include <span>
#include <thread>

#include "graph/shown.h"
#include "io/identity.h"
#include "io/location.h"
#include "io/s3_internal.h"
#include "io/safetensors.h"
#include "io/util.h"

namespace sx::io {

using s3_detail::answer_said;
using s3_detail::RangeWriter;
using s3_detail::unquoted;
using s3_detail::xml_element;
using s3_detail::xml_text;

namespace {

std::string environment(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

std::string amz_date_now() {
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y%m%dT%H%M%SZ", &utc);
  return text;
}

// Keeps each response header by lower-case name.
size_t keep_header(char* data, size_t size, size_t count, void* headers) {
  std::string_view line(data, size * count);
  size_t colon = line.find(':');
  if (colon != std::string_view::npos) {
    std::string name(line.substr(0, colon));
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    while (!value.empty() && (value.back() == '\r' || value.back() == '\n' || value.back() == ' ')) {
      value.remove_suffix(1);
    }
    (*static_cast<std::map<std::string, std::string>*>(headers))[name] = std::string(value);
  }
  return size * count;
}

// What curl's write callback fills: the request's RangeWriter for a 2xx answer's body
// (an error's body is read for its code), else the response's body. A writer's error
// stops the transfer and is kept, so that it leaves curl as the exception it was.
struct BodyTarget {
  CURL* curl;
  RangeWriter* into;
  std::string* body;
  std::exception_ptr failure;
};

size_t take_body(char* data, size_t size, size_t count, void* target_ptr) {
  auto* target = static_cast<BodyTarget*>(target_ptr);
  const size_t n = size * count;
  long status = 0;
  if (target->into) curl_easy_getinfo(target->curl, CURLINFO_RESPONSE_CODE, &status);
  if (status >= 200 && status < 300) {
    try {
      target->into->take(status, std::string_view(data, n));
    } catch (...) {
      target->failure = std::current_exception();
      return 0;  // curl stops: CURLE_WRITE_ERROR
    }
  } else {
    target->body->append(data, n);
  }
  return n;
}

// The s3:// URL a request's failure names: its object, or the prefix a listing asked for.
std::string shown_url(const std::string& bucket, const std::string& key,
                      const std::map<std::string, std::string>& query) {
  auto prefix = query.find("prefix");
  return s3_url(bucket, key.empty() && prefix != query.end() ? prefix->second : key);
}

// A certificate that does not verify, or a CA file that cannot be read: trying again
// changes nothing.
bool is_certificate_failure(CURLcode result) {
  return result == CURLE_PEER_FAILED_VERIFICATION || result == CURLE_SSL_CACERT_BADFILE ||
         result == CURLE_SSL_CERTPROBLEM;
}

}  // namespace

namespace s3_detail {

std::optional<std::string_view> xml_element(std::string_view xml, std::string_view tag, size_t from, size_t* end) {
  std::string open = fmt::format("<{}>", tag), close = fmt::format("</{}>", tag);
  size_t start = xml.find(open, from);
  if (start == std::string_view::npos) return std::nullopt;
  start += open.size();
  size_t stop = xml.find(close, start);
  if (stop == std::string_view::npos) return std::nullopt;
  if (end) *end = stop + close.size();
  return xml.substr(start, stop - start);
}

std::optional<std::string> xml_text(std::string_view xml, std::string_view tag) {
  std::optional<std::string_view> text = xml_element(xml, tag);
  if (!text) return std::nullopt;
  static const std::pair<std::string_view, char> entities[] = {
      {"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''}};
  std::string out;
  for (size_t i = 0; i < text->size(); ++i) {
    bool replaced = false;
    for (const auto& [entity, c] : entities) {
      if (text->substr(i, entity.size()) == entity) {
        out += c;
        i += entity.size() - 1;
        replaced = true;
        break;
      }
    }
    if (!replaced) out += (*text)[i];
  }
  return out;
}

std::string unquoted(std::string text) {
  if (text.size() >= 2 && text.front() == '"' && text.back() == '"') return text.substr(1, text.size() - 2);
  return text;
}

std::string answer_said(long status, std::string_view body, const AwsCredentials& credentials) {
  std::optional<std::string> code = xml_text(body, "Code");
  if (!code || code->empty()) return fmt::format("HTTP {}", status);
  std::string text = *code + ": " + xml_text(body, "Message").value_or("");
  for (const std::string* secret : {&credentials.secret_access_key, &credentials.session_token}) {
    for (size_t at; !secret->empty() && (at = text.find(*secret)) != std::string::npos;) {
      text.replace(at, secret->size(), "(secret)");
    }
  }
  // A SigV4 signature is 64 hex digits: a server that quotes one is not echoed.
  constexpr std::string_view kSignature = "(signature)";
  for (size_t i = 0; i < text.size();) {
    size_t run = 0;
    while (i + run < text.size() && std::isxdigit(static_cast<unsigned char>(text[i + run]))) ++run;
    if (run >= 64) {
      text.replace(i, run, kSignature);
      i += kSignature.size();
    } else {
      i += std::max<size_t>(run, 1);
    }
  }
  while (!text.empty() && (text.back() == ' ' || text.back() == ':')) text.pop_back();
  return fmt::format("HTTP {}, {}", status, graph::shown_in_message(text));
}

}  // namespace s3_detail

std::string s3_url(std::string_view bucket, std::string_view key) { return fmt::format("s3://{}/{}", bucket, key); }

S3Config S3Config::from_environment() {
  S3Config config;
  config.region = environment("AWS_REGION");
  if (config.region.empty()) config.region = environment("AWS_DEFAULT_REGION");
  if (config.region.empty()) config.region = "us-east-1";
  config.endpoint = environment("AWS_ENDPOINT_URL_S3");
  if (config.endpoint.empty()) config.endpoint = environment("AWS_ENDPOINT_URL");
  if (config.endpoint.empty()) config.endpoint = fmt::format("https://s3.{}.amazonaws.com", config.region);
  while (config.endpoint.ends_with('/')) config.endpoint.pop_back();
  config.ca_bundle = environment("AWS_CA_BUNDLE");
  config.credentials = {environment("AWS_ACCESS_KEY_ID"), environment("AWS_SECRET_ACCESS_KEY"),
                        environment("AWS_SESSION_TOKEN")};
  for (const char* name : {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"}) {
    if (environment(name).empty()) {
      throw LoadError(kStorageRefused, fmt::format("s3:// locations need credentials, and {} is not set", name));
    }
  }
  return config;
}

S3Client::S3Client(S3Config config) : config_(std::move(config)) {
  static std::once_flag curl_ready;
  std::call_once(curl_ready, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  curl_ = curl_easy_init();
  if (!curl_) throw std::runtime_error("libcurl: cannot create a handle");
}

S3Client::~S3Client() { curl_easy_cleanup(static_cast<CURL*>(curl_)); }

S3Client::Response S3Client::exchange(const Request& request) {
  CURL* curl = static_cast<CURL*>(curl_);
  std::string path = "/" + uri_encoded(request.bucket, false);
  if (!request.key.empty()) path += "/" + uri_encoded(request.key, true);
  std::string query;
  for (const auto& [name, value] : request.query) {
    query += fmt::format("{}{}={}", query.empty() ? "" : "&", uri_encoded(name, false), uri_encoded(value, false));
  }
  std::string_view scheme_end = "://";
  size_t host_start = config_.endpoint.find(scheme_end);
  host_start = host_start == std::string::npos ? 0 : host_start + scheme_end.size();
  std::string host = config_.endpoint.substr(host_start, config_.endpoint.find('/', host_start) - host_start);
  std::string url = config_.endpoint + path + (query.empty() ? "" : "?" + query);

  SigningInput signing{request.method, path, query, request.headers, sha256_hex(request.body)};
  std::string amz_date = amz_date_now();
  signing.headers["host"] = host;
  signing.headers["x-amz-date"] = amz_date;
  signing.headers["x-amz-content-sha256"] = signing.payload_sha256;
  if (!config_.credentials.session_token.empty()) {
    signing.headers["x-amz-security-token"] = config_.credentials.session_token;
  }
  curl_slist* headers = nullptr;
  for (const auto& [name, value] : signing.headers) {
    headers = curl_slist_append(headers, fmt::format("{}: {}", name, value).c_str());
  }
  std::string authorization = sigv4_authorization(signing, config_.credentials, config_.region, "s3", amz_date);
  headers = curl_slist_append(headers, ("authorization: " + authorization).c_str());
  headers = curl_slist_append(headers, "Expect:");        // no 100-continue round trip
  headers = curl_slist_append(headers, "Content-Type:");  // none, rather than curl's form type

  Response response;
  if (request.into) request.into->written = 0;  // a retry writes the body again from its start
  BodyTarget target{curl, request.into, &response.body, nullptr};
  char error_text[CURL_ERROR_SIZE] = "";
  curl_easy_reset(curl);
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, 10L);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);  // a transfer stalled for 30 s has timed out
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, 30L);
  curl_easy_setopt(curl, CURLOPT_BUFFERSIZE, 512L * 1024);  // fewer, larger writes of a download
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error_text);
  if (!config_.ca_bundle.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO, config_.ca_bundle.c_str());
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, take_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &target);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, keep_header);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &response.headers);
  if (request.method == "HEAD") {
    curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
  } else if (request.method != "GET") {
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, request.method.c_str());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, request.body.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
  }
  CURLcode result = curl_easy_perform(curl);
  curl_slist_free_all(headers);
  if (target.failure) std::rethrow_exception(target.failure);
  response.transfer = result;
  if (result == CURLE_OK) curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response.status);
  else response.transfer_error = error_text[0] ? error_text : curl_easy_strerror(result);
  return response;
}

S3Client::Response S3Client::send(const Request& request) {
  for (int attempt = 1;; ++attempt) {
    Response response = exchange(request);
    const auto result = static_cast<CURLcode>(response.transfer);
    bool transient =
        (result != CURLE_OK && !is_certificate_failure(result)) || response.status >= 500 || response.status == 429;
    if (transient && attempt < config_.attempts) {
      std::this_thread::sleep_for(std::chrono::milliseconds(config_.first_wait_ms << (attempt - 1)));
      continue;
    }
    if (result != CURLE_OK) {
      std::string help = is_certificate_failure(result)
                             ? config_.ca_bundle.empty()
                                   ? "; set AWS_CA_BUNDLE to a PEM file of the CA certificate that signed the server's"
                                   : fmt::format("; AWS_CA_BUNDLE is {}", graph::shown_in_message(config_.ca_bundle))
                             : "";
      throw LoadError(kStorageUnreachable,
                      fmt::format("{}: the storage server {} cannot be reached: {} ({} attempt{}){}",
                                  shown_url(request.bucket, request.key, request.query), config_.endpoint,
                                  response.transfer_error, attempt, attempt == 1 ? "" : "s", help));
    }
    if (response.status < 300 || (request.method == "HEAD" && response.status == 404)) return response;
    fail_with(request, std::move(response), attempt);
  }
}

void S3Client::fail_with(const Request& request, Response response, int attempts) {
  if (request.method == "HEAD") {
    // The first byte, so that a GET that succeeds where the HEAD did not costs nothing.
    Request probe{"GET", request.bucket, request.key, request.query, request.headers, {}};
    probe.headers["range"] = "bytes=0-0";
    Response answered = exchange(probe);
    if (answered.status >= 300) response.body = std::move(answered.body);
  }
  const std::string url = shown_url(request.bucket, request.key, request.query);
  const std::string said = answer_said(response.status, response.body, config_.credentials);
  const long status = response.status;
  if (status == 403) {
    throw LoadError(kStorageRefused, fmt::format("{}: the storage server {} refused access ({}); check "
                                                 "AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and the bucket's policy",
                                                 url, config_.endpoint, said));
  }
  if (status == 404) {
    const bool no_bucket = xml_text(response.body, "Code") == "NoSuchBucket";
    throw LoadError(kStorageNotFound,
                    fmt::format("{}: {} on the storage server {} ({})", url,
                                no_bucket ? "there is no such bucket" : "not found", config_.endpoint, said));
  }
  if (status == 412) {
    throw LoadError(kStorageAnswer, fmt::format("{}: the object changed on the storage server {} while it was read "
                                                "(its ETag is no longer the one asked for; {})",
                                                url, config_.endpoint, said));
  }
  throw LoadError(status >= 500 || status == 429 ? kStorageUnreachable : kStorageAnswer,
                  fmt::format("{}: the storage server {} answered {} with {}{}", url, config_.endpoint, request.method,
                              said, attempts > 1 ? fmt::format(", {} attempts", attempts) : ""));
}

std::optional<ObjectInfo> S3Client::head_if_exists(const std::string& bucket, const std::string& key) {
  Response response = send({"HEAD", bucket, key, {}, {}, {}});
  if (response.status == 404) return std::nullopt;
  ObjectInfo info;
  info.size = std::strtoull(response.headers["content-length"].c_str(), nullptr, 10);
  info.etag = unquoted(response.headers["etag"]);
  info.version_id = response.headers["x-amz-version-id"];
  if (info.version_id == "null") info.version_id.clear();
  return info;
}

ObjectInfo S3Client::head(const std::string& bucket, const std::string& key) {
  std::optional<ObjectInfo> info = head_if_exists(bucket, key);
  if (!info) fail_with({"HEAD", bucket, key, {}, {}, {}}, Response{404, "", {}, 0, ""}, 1);
  return *info;
}

std::string S3Client::get(const std::string& bucket, const std::string& key) {
  return send({"GET", bucket, key, {}, {}, {}}).body;
}

std::string S3Client::get_range(const std::string& bucket, const std::string& key, uint64_t offset, uint64_t length) {
  if (length == 0) return "";
  Response response =
      send({"GET", bucket, key, {}, {{"range", fmt::format("bytes={}-{}", offset, offset + length - 1)}}, {}});
  if (response.status != 206 && response.status != 200) {
    throw LoadError(kStorageAnswer, fmt::format("{}: asked for bytes {} to {}, the storage server answered HTTP {}",
                                                s3_url(bucket, key), offset, offset + length, response.status));
  }
  // A server that ignores Range sends the whole object (200).
  std::string body = response.status == 200 ? response.body.substr(std::min<size_t>(offset, response.body.size()))
                                            : std::move(response.body);
  if (body.size() < length) {
    throw LoadError(kStorageAnswer, fmt::format("{}: asked for bytes {} to {}, and the object ends at byte {}",
                                                s3_url(bucket, key), offset, offset + length, offset + body.size()));
  }
  body.resize(length);
  return body;
}

std::string S3Client::put(const std::string& bucket, const std::string& key, std::string_view bytes) {
  return unquoted(send({"PUT", bucket, key, {}, {}, bytes}).headers["etag"]);
}

std::vector<ListedObject> S3Client::list(const std::string& bucket, const std::string& prefix, bool below) {
  std::vector<ListedObject> out;
  std::string token;
  while (true) {
    std::map<std::string, std::string> query{{"list-type", "2"}, {"prefix", prefix}};
    if (!below) query["delimiter"] = "/";
    if (!token.empty()) query["continuation-token"] = token;
    Response response = send({"GET", bucket, "", query, {}, {}});
    size_t at = 0, end = 0;
    while (std::optional<std::string_view> entry = xml_element(response.body, "Contents", at, &end)) {
      at = end;
      std::optional<std::string> key = xml_text(*entry, "Key");
      if (!key) continue;
      out.push_back({*key, std::strtoull(xml_text(*entry, "Size").value_or("0").c_str(), nullptr, 10),
                     unquoted(xml_text(*entry, "ETag").value_or(""))});
    }
    if (xml_text(response.body, "IsTruncated").value_or("false") != "true") break;
    token = xml_text(response.body, "NextContinuationToken").value_or("");
    if (token.empty()) {
      throw LoadError(kStorageAnswer, fmt::format("{}: the storage server cut a listing short without a "
                                                  "continuation token",
                                                  s3_url(bucket, prefix)));
    }
  }
  return out;
}

void S3Client::remove(const std::string& bucket, const std::string& key) { send({"DELETE", bucket, key, {}, {}, {}}); }

}  // namespace sx::io
