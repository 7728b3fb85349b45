// The check in front of the public grouped GEMM (fp4kit/grouped_gemm.h): the caller's group offsets
// live on the device, so one small kernel validates them and derives what the grouped kernels walk.
#pragma once

#include <cstdint>

#include "fp4kit/status.h"

typedef struct CUstream_st* cudaStream_t;

namespace fp4kit::gemm_impl {

struct GroupOffsetsArgs {
  const int32_t* offsets = nullptr;  // caller's [groups + 1]
  int64_t groups = 0;
  int64_t max_rows = 0;
  int64_t max_group_rows = 0;        // > 0
  int32_t* clean_offsets = nullptr;  // [groups + 1]: a copy, or all zeros when the offsets are invalid
  int32_t* active = nullptr;         // [groups]: non-empty groups, ascending
  int32_t* num_active = nullptr;     // 1
  // 0: valid; else 1 + the lowest index i whose entry breaks the rule (i = 0: offsets[0] != 0;
  // i >= 1: offsets[i] < offsets[i-1], offsets[i] > max_rows, or offsets[i] - offsets[i-1] >
  // max_group_rows).
  int32_t* error = nullptr;
};

// One CTA; deterministic. With pdl the kernel may start early and waits for the previous one first.
Status launch_group_offsets(const GroupOffsetsArgs& a, bool pdl, cudaStream_t stream);

}  // namespace fp4kit::gemm_impl
