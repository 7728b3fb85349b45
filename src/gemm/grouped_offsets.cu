// Validates the public grouped GEMM's device offsets and lists its non-empty groups (grouped_offsets.h).
// Invalid offsets become all-zero clean offsets and an empty list, so the GEMM behind writes nothing
// and never leaves A or D; the error word says which entry broke the rule.
#include "gemm/grouped_offsets.h"

#include <cuda_runtime.h>

#include <climits>

#include "common/cuda_check.h"
#include "common/launch_kernel.h"
#include "gemm/sm90/grid_dependency.cuh"

namespace fp4kit::gemm_impl {
namespace {

constexpr int kThreads = 1024;
constexpr int kWarps = kThreads / 32;

__global__ void __launch_bounds__(kThreads) group_offsets_kernel(GroupOffsetsArgs a) {
  __shared__ int first_bad_s;
  __shared__ int warp_count_s[kWarps];
  sm90::grid_dependency_wait();  // the offsets may come from the previous kernel (no-op without PDL)
  sm90::grid_launch_dependents();  // the kernels behind wait for this one's completion anyway
  if (threadIdx.x == 0) first_bad_s = INT_MAX;
  __syncthreads();
  // The lowest offending index (a min, so the result does not depend on the thread order).
  int first_bad = INT_MAX;
  if (threadIdx.x == 0 && a.offsets[0] != 0) first_bad = 0;
  for (int64_t g = threadIdx.x; g < a.groups; g += kThreads) {
    const int64_t lo = a.offsets[g], hi = a.offsets[g + 1];
    if (hi < lo || hi > a.max_rows || hi - lo > a.max_group_rows) {
      first_bad = min(first_bad, int(g + 1));
      break;  // later entries of this thread are higher
    }
  }
  if (first_bad != INT_MAX) atomicMin(&first_bad_s, first_bad);
  __syncthreads();
  const bool bad = first_bad_s != INT_MAX;

  // Ascending list of the groups with rows: a ballot per warp, the warp counts through shared memory.
  const int lane = int(threadIdx.x) & 31, warp = int(threadIdx.x) >> 5;
  int carry = 0;
  for (int64_t base = 0; base < a.groups; base += kThreads) {
    const int64_t g = base + threadIdx.x;
    const bool in = g < a.groups;
    const bool has = !bad && in && a.offsets[g + 1] > a.offsets[g];
    const unsigned mask = __ballot_sync(0xffffffffu, has);
    if (lane == 0) warp_count_s[warp] = __popc(mask);
    __syncthreads();
    int before = carry + __popc(mask & ((1u << lane) - 1u)), total = 0;
    for (int w = 0; w < kWarps; ++w) {
      const int c = warp_count_s[w];
      before += w < warp ? c : 0;
      total += c;
    }
    if (has) a.active[before] = int32_t(g);
    if (in) a.clean_offsets[g] = bad ? 0 : a.offsets[g];
    carry += total;
    __syncthreads();  // warp_count_s is rewritten by the next round
  }
  if (threadIdx.x == 0) {
    a.clean_offsets[a.groups] = bad ? 0 : a.offsets[a.groups];
    *a.num_active = carry;
    *a.error = bad ? first_bad_s + 1 : 0;
  }
}

}  // namespace

Status launch_group_offsets(const GroupOffsetsArgs& a, bool pdl, cudaStream_t stream) {
  FP4KIT_CUDA_RETURN(launch_kernel(group_offsets_kernel, dim3(1), dim3(kThreads), 0, stream, pdl, a),
                     "grouped_gemm: group_offsets_kernel launch");
  return Status::ok();
}

}  // namespace fp4kit::gemm_impl
