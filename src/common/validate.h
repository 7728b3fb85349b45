// Argument validation shared by every entry point.
//
//   FP4KIT_RETURN_IF_ERROR(ArgCheck("quantize_nvfp4")
//       .not_null(p.input, "input")
//       .positive(p.rows, "rows")
//       .multiple_of(p.cols, 16, "cols", "NVFP4 block size")
//       .status());
//
// The first failing check wins; later checks are skipped, so a check may rely on earlier ones.
#pragma once

#include <cstdint>
#include <string>

#include "fp4kit/status.h"
#include "fp4kit/types.h"

namespace fp4kit::detail {

// The GEMMs' limit on M, N, K (and on what becomes one of them: expert ids, expanded rows): each < 2^31, so
// that the kernels' int32 index arithmetic holds.
inline constexpr int64_t kGemmDimLimit = int64_t(1) << 31;

// a*b in 64 bits; false on overflow or a negative operand.
bool checked_mul(int64_t a, int64_t b, int64_t* out);

class ArgCheck {
 public:
  explicit ArgCheck(const char* function) : fn_(function) {}

  ArgCheck& not_null(const void* p, const char* name);
  ArgCheck& positive(int64_t v, const char* name);
  ArgCheck& non_negative(int64_t v, const char* name);
  ArgCheck& multiple_of(int64_t v, int64_t m, const char* name, const char* why);
  ArgCheck& at_least(int64_t v, int64_t min, const char* name, const char* min_name);
  // Pointer aligned to `bytes` (e.g. 16 for 128-bit loads).
  ArgCheck& aligned(const void* p, int64_t bytes, const char* name);
  // capacity >= needed, or kBufferTooSmall.
  ArgCheck& buffer(int64_t capacity, int64_t needed, const char* name);
  // A caller's workspace (size_t, compared unsigned: SIZE_MAX is a large buffer, not -1 bytes).
  ArgCheck& workspace(size_t capacity, size_t needed, const char* name = "workspace");
  // rows*cols*elem_bytes must fit in int64 (sizes are computed in 64 bits everywhere).
  ArgCheck& size_fits(int64_t rows, int64_t cols, int64_t elem_bytes, const char* what);
  ArgCheck& dtype_in(DType t, std::initializer_list<DType> allowed, const char* name);
  ArgCheck& require(bool cond, StatusCode code, const std::string& message);

  Status status() const { return status_; }
  bool ok() const { return status_.is_ok(); }

 private:
  ArgCheck& fail(StatusCode code, const std::string& message);
  const char* fn_;
  Status status_;
};

}  // namespace fp4kit::detail
