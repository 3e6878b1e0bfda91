// Upload and download throughput of a 200 MB checkpoint file to an S3-compatible server,
// SexpGPU's client (src/io/s3) against boto3's upload_file/download_file (as `aws s3 cp`
// does it) in the same run, as a ratio. Run it under a server, e.g. moto's:
//
//   .venv/bin/python3 tests/moto_fixture.py build/bench/s3_throughput [MB]
//
// which sets AWS_ENDPOINT_URL and the credentials, and SEXPGPU_TEST_BUCKET.
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "io/s3.h"

namespace {

double seconds_of(const auto& work) {
  auto start = std::chrono::steady_clock::now();
  work();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  const char* bucket = std::getenv("SEXPGPU_TEST_BUCKET");
  if (!bucket) {
    std::fprintf(stderr, "run it under tests/moto_fixture.py (or set SEXPGPU_TEST_BUCKET and AWS_*)\n");
    return 2;
  }
  const uint64_t megabytes = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 200;
  const std::string dir = (std::filesystem::temp_directory_path() / fmt::format("s3-bench-{}", ::getpid())).string();
  std::filesystem::create_directories(dir);
  const std::string file = dir + "/params.safetensors";
  {
    std::string block(1 << 20, '\0');
    for (size_t i = 0; i < block.size(); ++i) block[i] = static_cast<char>(i * 2654435761u >> 13);
    std::ofstream out(file, std::ios::binary);
    for (uint64_t i = 0; i < megabytes; ++i) out.write(block.data(), static_cast<std::streamsize>(block.size()));
  }
  sx::io::S3Client client(sx::io::S3Config::from_environment());
  const std::string downloaded = file + ".ours";
  double up = seconds_of([&] { client.put_file(bucket, "bench/ours", file); });
  double down =
      seconds_of([&] { client.get_to_file(bucket, "bench/ours", downloaded, client.head(bucket, "bench/ours")); });
  if (std::filesystem::file_size(downloaded) != megabytes << 20) {
    std::fprintf(stderr, "downloaded %llu bytes of %llu MB\n",
                 static_cast<unsigned long long>(std::filesystem::file_size(downloaded)),
                 static_cast<unsigned long long>(megabytes));
    return 1;
  }

  // boto3's managed transfer (8 MiB parts, 10 threads), as `aws s3 cp` does it.
  std::string peer = fmt::format(
      "{} -c \"import boto3,os,time; s=boto3.client('s3'); t=time.time(); s.upload_file('{}','{}','bench/boto3'); "
      "u=time.time()-t; t=time.time(); s.download_file('{}','bench/boto3','{}.down'); print(u, time.time()-t)\"",
      SEXPGPU_PYTHON, file, bucket, bucket, file);
  FILE* pipe = popen(peer.c_str(), "r");
  double peer_up = 0, peer_down = 0;
  if (!pipe || std::fscanf(pipe, "%lf %lf", &peer_up, &peer_down) != 2 || pclose(pipe) != 0) {
    std::fprintf(stderr, "the boto3 peer failed\n");
    return 1;
  }
  std::filesystem::remove_all(dir);
  const double mb = static_cast<double>(megabytes);
  std::printf("%llu MB  upload: sexpgpu %.0f MB/s, boto3 %.0f MB/s, ratio %.2f\n",
              static_cast<unsigned long long>(megabytes), mb / up, mb / peer_up, peer_up / up);
  std::printf("%llu MB  download: sexpgpu %.0f MB/s, boto3 %.0f MB/s, ratio %.2f\n",
              static_cast<unsigned long long>(megabytes), mb / down, mb / peer_down, peer_down / down);
  return 0;
}
