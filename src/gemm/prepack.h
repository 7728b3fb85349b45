// The prepack launch shared by prepack_weights (one matrix) and prepack_moe_weights (stacked
// experts): `count` checkpoint-layout matrices [n, k] -> consecutive prepacked buffers of
// prepacked_shape(n, k).bytes() each. Arguments are validated by the callers.
#pragma once

#include <cstdint>

#include "fp4kit/status.h"
#include "fp4kit/types.h"

typedef struct CUstream_st* cudaStream_t;

namespace fp4kit::gemm_impl {

// Matrix e reads codes + e * code_stride and scales + e * scale_stride. One launch, then one
// stream synchronization for the NaN-scale check (kInvalidArgument "<api>: a block scale is NaN").
Status prepack_batched(const uint8_t* codes, const uint8_t* scales, ScaleLayout scale_layout, int64_t n, int64_t k,
                       int64_t count, int64_t code_stride, int64_t scale_stride, void* out, cudaStream_t stream,
                       const char* api);

}  // namespace fp4kit::gemm_impl
