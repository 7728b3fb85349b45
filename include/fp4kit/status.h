// fp4kit/status.h — the error model shared by every entry point.
//
// Every public function returns a Status. A non-OK status carries a code and a message that
// names the offending argument and the rule it broke, e.g.
//   "quantize_nvfp4: cols (=40) must be a multiple of 16 (NVFP4 block size)".
// Entry points validate all arguments before touching memory or launching work, so a bad call
// never writes anything.
#pragma once

#include <string>
#include <utility>

namespace fp4kit {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,       // null pointer, bad shape, bad stride, inconsistent dtypes/layouts
  kMisaligned,            // pointer or stride violates the documented alignment
  kBufferTooSmall,        // an output buffer or the workspace is smaller than required
  kNotSupported,          // valid request that this build/GPU does not implement
  kCudaError,             // a CUDA runtime call failed (message has the CUDA error string)
  kNoDevice,              // a GPU entry point was called on a machine without a usable GPU
  kInternal,              // a bug in fp4kit
};

const char* status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return {}; }

  bool is_ok() const { return code_ == StatusCode::kOk; }
  explicit operator bool() const { return is_ok(); }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "kInvalidArgument: <message>" (or "ok").
  std::string to_string() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

}  // namespace fp4kit

// Propagates a non-OK status to the caller.
#define FP4KIT_RETURN_IF_ERROR(expr)            \
  do {                                          \
    ::fp4kit::Status fp4kit_status_ = (expr);   \
    if (!fp4kit_status_.is_ok()) return fp4kit_status_; \
  } while (0)
