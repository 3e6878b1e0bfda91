// The errors serve reports: a code (explained by `sexpgpu explain-error`, in
// src/serve/codes.cc), a message naming what is wrong and where, and what to do.
// serve knows no Lisp, so the cli turns a ServeError into a diagnostic.
#pragma once

#include <stdexcept>
#include <string>

namespace sx::serve {

inline constexpr const char* kNoModel = "E-SERVE-001";            // a checkpoint without model.json
inline constexpr const char* kBadModelFile = "E-SERVE-002";       // model.json unreadable or not the format
inline constexpr const char* kWeightsDoNotFit = "E-SERVE-003";    // a weight missing, or of another shape or dtype
inline constexpr const char* kFlagDoesNotFit = "E-SERVE-004";     // --output, --at, --trained, --batch vs the model
inline constexpr const char* kSocketUnusable = "E-SERVE-006";     // --socket: live, not a socket, too long, bind
inline constexpr const char* kCallLength = "E-SERVE-007";         // a call frame of the wrong length
inline constexpr const char* kCallValue = "E-SERVE-008";          // a bool byte not 0/1, an `at` off the axis
inline constexpr const char* kRunFailed = "E-SERVE-009";          // the device failed to run a batch
inline constexpr const char* kUnreadableOperand = "E-SERVE-010";  // the operand cannot be read at all
inline constexpr const char* kTooManyClients = "E-SERVE-011";     // a client beyond the cap, refused
inline constexpr const char* kFrameUnfinished = "E-SERVE-012";    // a frame begun and left for 10 s

class ServeError : public std::runtime_error {
 public:
  ServeError(std::string code, std::string message, std::string help = {})
      : std::runtime_error(std::move(message)), code_(std::move(code)), help_(std::move(help)) {}
  const std::string& code() const { return code_; }
  // What the user can do about it; may be empty.
  const std::string& help() const { return help_; }

 private:
  std::string code_;
  std::string help_;
};

}  // namespace sx::serve
