#include "common/validate.h"

namespace fp4kit::detail {

bool checked_mul(int64_t a, int64_t b, int64_t* out) {
  if (a < 0 || b < 0) return false;
  if (a != 0 && b > INT64_MAX / a) return false;
  *out = a * b;
  return true;
}

ArgCheck& ArgCheck::fail(StatusCode code, const std::string& message) {
  if (status_.is_ok()) status_ = Status(code, std::string(fn_) + ": " + message);
  return *this;
}

ArgCheck& ArgCheck::require(bool cond, StatusCode code, const std::string& message) {
  if (ok() && !cond) fail(code, message);
  return *this;
}

ArgCheck& ArgCheck::not_null(const void* p, const char* name) {
  return require(p != nullptr, StatusCode::kInvalidArgument, std::string(name) + " is null");
}

ArgCheck& ArgCheck::positive(int64_t v, const char* name) {
  return require(v > 0, StatusCode::kInvalidArgument,
                 std::string(name) + " (=" + std::to_string(v) + ") must be positive");
}

ArgCheck& ArgCheck::non_negative(int64_t v, const char* name) {
  return require(v >= 0, StatusCode::kInvalidArgument,
                 std::string(name) + " (=" + std::to_string(v) + ") must not be negative");
}

ArgCheck& ArgCheck::multiple_of(int64_t v, int64_t m, const char* name, const char* why) {
  return require(m > 0 && v % m == 0, StatusCode::kInvalidArgument,
                 std::string(name) + " (=" + std::to_string(v) + ") must be a multiple of " +
                     std::to_string(m) + " (" + why + ")");
}

ArgCheck& ArgCheck::at_least(int64_t v, int64_t min, const char* name, const char* min_name) {
  return require(v >= min, StatusCode::kInvalidArgument,
                 std::string(name) + " (=" + std::to_string(v) + ") must be >= " + min_name + " (=" +
                     std::to_string(min) + ")");
}

ArgCheck& ArgCheck::aligned(const void* p, int64_t bytes, const char* name) {
  return require(reinterpret_cast<uintptr_t>(p) % uintptr_t(bytes) == 0, StatusCode::kMisaligned,
                 std::string(name) + " must be " + std::to_string(bytes) + "-byte aligned");
}

ArgCheck& ArgCheck::buffer(int64_t capacity, int64_t needed, const char* name) {
  return require(capacity >= needed, StatusCode::kBufferTooSmall,
                 std::string(name) + " holds " + std::to_string(capacity) + " bytes, needs " +
                     std::to_string(needed));
}

ArgCheck& ArgCheck::workspace(size_t capacity, size_t needed, const char* name) {
  return require(capacity >= needed, StatusCode::kBufferTooSmall,
                 std::string(name) + " holds " + std::to_string(capacity) + " bytes, needs " +
                     std::to_string(needed));
}

ArgCheck& ArgCheck::size_fits(int64_t rows, int64_t cols, int64_t elem_bytes, const char* what) {
  int64_t n = 0;
  const bool fits = checked_mul(rows, cols, &n) && checked_mul(n, elem_bytes, &n);
  return require(fits, StatusCode::kInvalidArgument,
                 std::string(what) + " size " + std::to_string(rows) + " x " + std::to_string(cols) +
                     " overflows 64-bit byte counts");
}

ArgCheck& ArgCheck::dtype_in(DType t, std::initializer_list<DType> allowed, const char* name) {
  if (!ok()) return *this;
  std::string list;
  for (DType a : allowed) {
    if (a == t) return *this;
    list += (list.empty() ? "" : ", ") + std::string(dtype_name(a));
  }
  return fail(StatusCode::kInvalidArgument,
              std::string(name) + " dtype " + dtype_name(t) + " not supported (expected " + list + ")");
}

}  // namespace fp4kit::detail
