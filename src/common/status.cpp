#include "fp4kit/status.h"

namespace fp4kit {

const char* status_code_name(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "ok";
    case StatusCode::kInvalidArgument: return "invalid_argument";
    case StatusCode::kMisaligned: return "misaligned";
    case StatusCode::kBufferTooSmall: return "buffer_too_small";
    case StatusCode::kNotSupported: return "not_supported";
    case StatusCode::kCudaError: return "cuda_error";
    case StatusCode::kNoDevice: return "no_device";
    case StatusCode::kInternal: return "internal";
  }
  return "unknown";
}

std::string Status::to_string() const {
  if (is_ok()) return "ok";
  return std::string(status_code_name(code_)) + ": " + message_;
}

}  // namespace fp4kit
