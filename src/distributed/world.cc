// The world of a process alone, and loading MPI's (see world.h).
#include "distributed/world.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

namespace sx::distributed {
namespace {

class WorldAlone final : public World {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void all_gather(std::span<const std::byte> mine, std::span<std::byte> all) override {
    std::memcpy(all.data(), mine.data(), mine.size());
  }
  void all_to_all(std::span<const std::byte> send, std::span<std::byte> received) override {
    std::memcpy(received.data(), send.data(), send.size());
  }

 protected:
  void stop_all(int) override {}
};

// libsexpgpu-mpi.so beside the program (the build tree), or in ../lib (installed).
std::filesystem::path mpi_library_path() {
  std::error_code error;
  std::filesystem::path program = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) return kMpiLibraryName;
  for (const auto& candidate :
       {program.parent_path() / kMpiLibraryName, program.parent_path().parent_path() / "lib" / kMpiLibraryName}) {
    if (std::filesystem::exists(candidate, error)) return candidate;
  }
  return kMpiLibraryName;  // the loader's own search
}

}  // namespace

std::unique_ptr<World> world_alone() { return std::make_unique<WorldAlone>(); }

bool launched_by_mpi() {
  // Open MPI's mpirun, then PMIx and PMI (srun under Slurm, other launchers).
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK"}) {
    if (std::getenv(name)) return true;
  }
  return false;
}

std::unique_ptr<World> world_from_environment() {
  if (!launched_by_mpi()) return world_alone();
  const std::filesystem::path path = mpi_library_path();
  // RTLD_GLOBAL: Open MPI's own plugins, which it loads later, resolve libmpi's symbols.
  void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (!library) {
    throw WorldError("launched by mpirun, but " + path.string() + " cannot be loaded (" + dlerror() +
                     "): build sexpgpu where Open MPI is installed (scripts/setup installs it)");
  }
  auto open = reinterpret_cast<OpenMpiWorld>(dlsym(library, kOpenMpiWorldSymbol));
  if (!open) throw WorldError(path.string() + " holds no " + kOpenMpiWorldSymbol);
  char error[512] = {};
  World* world = open(error, sizeof error);
  if (!world) throw WorldError(std::string("MPI cannot start: ") + error);
  return std::unique_ptr<World>(world);
}

}  // namespace sx::distributed
