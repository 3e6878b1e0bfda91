// libsexpgpu-mpi.so: the World of MPI_COMM_WORLD (see world.h), the one file that calls MPI.
#include <mpi.h>

#include <cstdio>
#include <string>

#include "distributed/world.h"

namespace sx::distributed {
namespace {

class MpiWorld final : public World {
 public:
  MpiWorld(int rank, int size) : rank_(rank), size_(size) {}
  ~MpiWorld() override { MPI_Finalize(); }

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void all_gather(std::span<const std::byte> mine, std::span<std::byte> all) override {
    check(MPI_Allgather(mine.data(), static_cast<int>(mine.size()), MPI_BYTE, all.data(), static_cast<int>(mine.size()),
                        MPI_BYTE, MPI_COMM_WORLD),
          "all-gather");
  }
  void all_to_all(std::span<const std::byte> send, std::span<std::byte> received) override {
    const int block = static_cast<int>(send.size() / static_cast<size_t>(size_));
    check(MPI_Alltoall(send.data(), block, MPI_BYTE, received.data(), block, MPI_BYTE, MPI_COMM_WORLD), "all-to-all");
  }

 protected:
  void stop_all(int code) override {
    std::fflush(stdout);
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, code);
  }

 private:
  // MPI_ERRORS_RETURN is set: a failed collective returns here rather than killing the
  // process without a word.
  void check(int status, const char* what) const {
    if (status == MPI_SUCCESS) return;
    char text[MPI_MAX_ERROR_STRING] = {};
    int length = 0;
    MPI_Error_string(status, text, &length);
    throw WorldError("worker " + std::to_string(rank_) + " of " + std::to_string(size_) + ": the " + what +
                     " failed: " + std::string(text, static_cast<size_t>(length)));
  }

  int rank_, size_;
};

}  // namespace
}  // namespace sx::distributed

extern "C" __attribute__((visibility("default"))) sx::distributed::World* sexpgpu_open_mpi_world(char* error,
                                                                                                 size_t error_size) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized && MPI_Init(nullptr, nullptr) != MPI_SUCCESS) {
    std::snprintf(error, error_size, "MPI_Init failed");
    return nullptr;
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return new sx::distributed::MpiWorld(rank, size);
}
