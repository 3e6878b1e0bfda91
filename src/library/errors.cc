// Exceptions as the C API's errors.
#include "library/errors.h"

#include <fmt/format.h>

#include <new>

#include "device/device.h"
#include "graph/memory.h"
#include "io/checkpoint.h"
#include "io/safetensors.h"
#include "library/codes.h"
#include "serve/errors.h"

namespace sx::library {
namespace {

// The error given when the machine refuses the memory an error's own text needs; made at
// load, never freed.
sexpgpu_error& out_of_memory =
    *new sexpgpu_error{"E-MEM-001", "ran out of memory: the machine refused an allocation, and the memory to say more"};

std::string with_help(std::string_view message, std::string_view help) {
  return help.empty() ? std::string(message) : fmt::format("{}\nhelp: {}", message, help);
}

sexpgpu_error* error_of_current(const char* function) {
  try {
    throw;
  } catch (const serve::ServeError& e) {
    return make_error(e.code(), with_help(e.what(), e.help()));
  } catch (const io::CheckpointError& e) {
    return make_error(e.code(), e.what());
  } catch (const io::LoadError& e) {
    return make_error(e.code(), e.what());
  } catch (const device::DeviceError& e) {
    return make_error(e.code(), e.what());
  } catch (const graph::MemoryLimitError& e) {
    return make_error("E-MEM-001", e.what());
  } catch (const std::bad_alloc&) {
    return make_error("E-MEM-001", graph::out_of_memory_message(fmt::format("in {}", function)));
  } catch (const std::exception& e) {
    return make_error(kInternal, fmt::format("{}: {}", function, e.what()));
  } catch (...) {
    return make_error(kInternal, fmt::format("{}: an unknown exception", function));
  }
}

}  // namespace

sexpgpu_error* make_error(std::string_view code, std::string_view message) noexcept {
  try {
    return new sexpgpu_error{std::string(code), std::string(message)};
  } catch (...) {
    return &out_of_memory;
  }
}

sexpgpu_error* current_error(const char* function) noexcept {
  try {
    return error_of_current(function);
  } catch (...) {
    // Formatting the message ran out of memory too.
    return &out_of_memory;
  }
}

void free_error(sexpgpu_error* error) noexcept {
  if (error != &out_of_memory) delete error;
}

}  // namespace sx::library
