// The errors the C API returns (sexpgpu_error, include/sexpgpu.h): a code and a message,
// made from the exception being handled as `sexpgpu serve` would report it.
#pragma once

#include <string>
#include <string_view>

struct sexpgpu_error {
  std::string code;
  std::string message;
};

namespace sx::library {

// A new error; where the machine refuses its memory, a static E-MEM-001 instead.
sexpgpu_error* make_error(std::string_view code, std::string_view message) noexcept;
// The error of the exception being handled (call it in a catch block): serve's code and
// words for serve's failures (E-SERVE, E-CKPT, E-LOAD, E-DEVICE, E-MEM), E-API-005 naming
// `function` (the C function) for any other.
sexpgpu_error* current_error(const char* function) noexcept;
// Frees what make_error or current_error made; null is allowed.
void free_error(sexpgpu_error* error) noexcept;

// body(), or the error of what it throws: no exception leaves.
template <class Body>
sexpgpu_error* guarded(const char* function, Body&& body) noexcept {
  try {
    return body();
  } catch (...) {
    return current_error(function);
  }
}

}  // namespace sx::library
