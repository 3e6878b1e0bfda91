// The workers of a data-parallel run (docs/distributed.md) and the collectives the
// training loop calls between them. A process started alone is a world of one; a process
// launched by mpirun (or srun) loads the MPI implementation, libsexpgpu-mpi.so, which
// alone links MPI, so that no other command or library starts it. Another transport (NCCL)
// implements the same interface.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>
#include <stdexcept>

namespace sx::distributed {

// A collective failed: a worker is gone, or the transport refused. The message says which.
class __attribute__((visibility("default"))) WorldError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class World {
 public:
  virtual ~World() = default;
  // This worker's rank, 0 ... size()-1, and the number of workers.
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // `all` (size() times mine's bytes) receives every worker's `mine`, in rank order.
  virtual void all_gather(std::span<const std::byte> mine, std::span<std::byte> all) = 0;
  // `send` holds size() blocks of equal bytes, block j for worker j; `received` (as many
  // bytes) receives block rank() of every worker's send, in rank order.
  virtual void all_to_all(std::span<const std::byte> send, std::span<std::byte> received) = 0;
  // Stops every worker at once, the process exiting with `code`: for an error that one
  // worker alone meets, which the others, waiting in a collective, would never see.
  [[noreturn]] void abort(int code) {
    stop_all(code);
    std::_Exit(code);
  }

 protected:
  // Asks the transport to end every worker (it may end this process too).
  virtual void stop_all(int code) = 0;
};

// The world of a process alone: rank 0 of 1.
std::unique_ptr<World> world_alone();

// Whether the environment says this process is one of several launched by mpirun (or srun).
bool launched_by_mpi();

// MPI's world when launched_by_mpi(), else world_alone(). WorldError when the MPI library
// cannot be loaded or started (the message names it).
std::unique_ptr<World> world_from_environment();

// The symbol libsexpgpu-mpi.so exports: a new World on MPI_COMM_WORLD, MPI started, or
// nullptr with `error` (of `error_size` bytes) saying why.
extern "C" using OpenMpiWorld = World * (*)(char* error, size_t error_size);
inline constexpr const char* kOpenMpiWorldSymbol = "sexpgpu_open_mpi_world";
inline constexpr const char* kMpiLibraryName = "libsexpgpu-mpi.so";

}  // namespace sx::distributed
