// The S3 client's transfers of whole files (see s3.h): a download into a file, in ranges
// above part_bytes, and an upload of a file, in parts above part_bytes; the ranges and the
// parts go from several connections at once.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>

#include "io/location.h"
#include "io/s3.h"
#include "io/s3_internal.h"
#include "io/safetensors.h"
#include "io/util.h"

namespace sx::io {

using s3_detail::answer_said;
using s3_detail::RangeWriter;
using s3_detail::unquoted;
using s3_detail::xml_text;

void RangeWriter::take(long answered, std::string_view bytes) {
  if (answered != status) {
    throw LoadError(kStorageAnswer, fmt::format("{}: asked for bytes {} to {}, the storage server answered HTTP {}",
                                                url, offset, offset + length, answered));
  }
  if (bytes.size() > length - written) {
    throw LoadError(kStorageAnswer, fmt::format("{}: asked for bytes {} to {}, the storage server sent more", url,
                                                offset, offset + length));
  }
  file.write_at(offset + written, bytes.data(), bytes.size());
  written += bytes.size();
}

void S3Client::in_parallel(uint64_t count, const std::function<void(S3Client&, uint64_t)>& part) {
  std::atomic<uint64_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr failure;
  std::mutex failure_mutex;
  auto work = [&] {
    try {
      S3Client client(config_);
      for (uint64_t i = next++; i < count && !failed; i = next++) part(client, i);
    } catch (...) {
      std::lock_guard lock(failure_mutex);
      if (!failure) failure = std::current_exception();
      failed = true;
    }
  };
  std::vector<std::thread> threads;
  const uint64_t thread_count = std::min<uint64_t>(count, std::max(config_.transfer_threads, 1));
  for (uint64_t t = 0; t < thread_count; ++t) threads.emplace_back(work);
  for (std::thread& thread : threads) thread.join();
  if (failure) std::rethrow_exception(failure);
}

void S3Client::get_to_file(const std::string& bucket, const std::string& key, const std::string& path,
                           const ObjectInfo& object) {
  AtomicFile file(path);
  const uint64_t size = object.size;
  const bool in_ranges = size > config_.part_bytes;
  // One range a connection, each at least part_bytes: every request costs the server a
  // lookup (moto, a Python server, copies the object for each), so fewer, larger ones.
  const uint64_t connections = std::max<uint64_t>(1, static_cast<uint64_t>(config_.transfer_threads));
  const uint64_t range_bytes = std::max(config_.part_bytes, (size + connections - 1) / connections);
  std::map<std::string, std::string> headers;
  if (!object.etag.empty()) headers["if-match"] = fmt::format("\"{}\"", object.etag);
  auto fetch = [&](S3Client& client, uint64_t i) {
    const uint64_t offset = i * range_bytes;
    RangeWriter into{file, s3_url(bucket, key), offset, in_ranges ? std::min(range_bytes, size - offset) : size,
                     in_ranges ? 206 : 200};
    std::map<std::string, std::string> range_headers = headers;
    if (in_ranges) range_headers["range"] = fmt::format("bytes={}-{}", offset, offset + into.length - 1);
    client.send({"GET", bucket, key, {}, range_headers, {}, &into});
    if (into.written != into.length) {
      throw LoadError(kStorageAnswer,
                      fmt::format("{}: asked for bytes {} to {} of its {}, and the object ends at byte {}", into.url,
                                  offset, offset + into.length, size, offset + into.written));
    }
  };
  if (in_ranges) {
    in_parallel((size + range_bytes - 1) / range_bytes, fetch);
  } else {
    fetch(*this, 0);
  }
  file.commit();
}

std::string S3Client::put_file(const std::string& bucket, const std::string& key, const std::string& path) {
  OpenFile file = open_regular_file(path);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{file.fd};
  if (file.size > config_.part_bytes) return put_in_parts(bucket, key, path, file.fd, file.size);
  std::string bytes;
  read_chunks(::dup(file.fd), path, [&](const char* data, size_t n) { bytes.append(data, n); });
  return put(bucket, key, bytes);
}

std::string S3Client::put_in_parts(const std::string& bucket, const std::string& key, const std::string& path, int fd,
                                   uint64_t size) {
  Response started = send({"POST", bucket, key, {{"uploads", ""}}, {}, {}});
  std::optional<std::string> upload_id = xml_text(started.body, "UploadId");
  if (!upload_id) {
    throw LoadError(kStorageAnswer,
                    fmt::format("{}: the storage server started a multipart upload without an "
                                "UploadId ({})",
                                s3_url(bucket, key), answer_said(started.status, started.body, config_.credentials)));
  }
  try {
    const uint64_t count = (size + config_.part_bytes - 1) / config_.part_bytes;
    std::vector<std::string> etags(count);
    in_parallel(count, [&](S3Client& client, uint64_t i) {
      const uint64_t offset = i * config_.part_bytes;
      std::string part(std::min<uint64_t>(config_.part_bytes, size - offset), '\0');
      for (size_t done = 0; done < part.size();) {
        ssize_t n = ::pread(fd, part.data() + done, part.size() - done, static_cast<off_t>(offset + done));
        if (n <= 0) {
          if (n < 0 && errno == EINTR) continue;
          throw LoadError(kUnreadable, fmt::format("{}: cannot read it to upload it: {}", path,
                                                   n == 0 ? "it became shorter" : std::strerror(errno)));
        }
        done += static_cast<size_t>(n);
      }
      std::map<std::string, std::string> query{{"partNumber", std::to_string(i + 1)}, {"uploadId", *upload_id}};
      etags[i] = client.send({"PUT", bucket, key, query, {}, part}).headers["etag"];
    });
    std::string parts = "<CompleteMultipartUpload>";
    for (uint64_t i = 0; i < count; ++i) {
      parts += fmt::format("<Part><PartNumber>{}</PartNumber><ETag>{}</ETag></Part>", i + 1, etags[i]);
    }
    parts += "</CompleteMultipartUpload>";
    Response completed = send({"POST", bucket, key, {{"uploadId", *upload_id}}, {}, parts});
    // S3 may answer 200 and still report an error in the body.
    std::optional<std::string> etag = xml_text(completed.body, "ETag");
    if (!etag) {
      throw LoadError(kStorageAnswer, fmt::format("{}: the storage server did not complete the multipart upload ({})",
                                                  s3_url(bucket, key),
                                                  answer_said(completed.status, completed.body, config_.credentials)));
    }
    return unquoted(*etag);
  } catch (...) {
    try {
      send({"DELETE", bucket, key, {{"uploadId", *upload_id}}, {}, {}});
    } catch (const LoadError&) {
      // The server is gone: its lifecycle rules, not this process, clear the parts.
    }
    throw;
  }
}

}  // namespace sx::io
