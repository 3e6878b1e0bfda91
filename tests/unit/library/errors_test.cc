// The C API's errors made from exceptions: serve's codes and words for serve's failures,
// E-API-005 for a failure nothing foresaw, and an error even when memory runs out.
#include "library/errors.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "device/device.h"
#include "io/checkpoint.h"
#include "serve/errors.h"

namespace sx::library {
namespace {

using CodeAndMessage = std::pair<std::string, std::string>;

template <class Exception>
CodeAndMessage error_of(const Exception& thrown) {
  sexpgpu_error* error = guarded("sexpgpu_test", [&]() -> sexpgpu_error* { throw thrown; });
  CodeAndMessage out{error->code, error->message};
  free_error(error);
  return out;
}

TEST(LibraryErrors, ServesFailuresKeepTheirCodesAndWords) {
  EXPECT_EQ(error_of(serve::ServeError("E-SERVE-004", "--at: no second axis", "serve it without --at")),
            CodeAndMessage("E-SERVE-004", "--at: no second axis\nhelp: serve it without --at"));
  EXPECT_EQ(error_of(io::CheckpointError("E-CKPT-003", "/x: no checkpoint")),
            CodeAndMessage("E-CKPT-003", "/x: no checkpoint"));
  EXPECT_EQ(error_of(device::DeviceError("no metal", "E-DEVICE-001")).first, "E-DEVICE-001");
}

TEST(LibraryErrors, AFailureNothingForesawIsInternal) {
  EXPECT_EQ(error_of(std::logic_error("a broken promise")),
            CodeAndMessage("E-API-005", "sexpgpu_test: a broken promise"));
  EXPECT_EQ(error_of(42).second, "sexpgpu_test: an unknown exception");
}

TEST(LibraryErrors, RunningOutOfMemoryIsStillAnError) {
  EXPECT_EQ(error_of(std::bad_alloc()).first, "E-MEM-001");
  free_error(nullptr);
}

}  // namespace
}  // namespace sx::library
