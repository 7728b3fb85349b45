// Programmatic dependent launch (GemmParams::enable_pdl) inside the GEMM kernels. Both are no-ops
// when the grid was not launched with cudaLaunchAttributeProgrammaticStreamSerialization.
#pragma once

namespace fp4kit::gemm_impl::sm90 {

// Blocks the calling thread until the previous grid in the stream has completed and its memory
// is visible. Whatever the previous kernel may write (activations, alpha, bias, D, the workspace)
// is touched only after it; the prepacked weights may be read before (API contract).
__device__ __forceinline__ void grid_dependency_wait() { asm volatile("griddepcontrol.wait;" ::: "memory"); }
// Lets the next grid in the stream launch now; its CTAs take SM resources as ours retire.
__device__ __forceinline__ void grid_launch_dependents() { asm volatile("griddepcontrol.launch_dependents;" ::: "memory"); }

// A word the previous kernel published before its trigger (a __threadfence, then launch_dependents:
// the MoE permutation's group list), read before this grid's wait: from L2 with a gpu-scope relaxed
// load, not the non-coherent path (ld.global.nc, __ldg), which assumes nothing writes the data while
// this grid runs and may serve a line an older kernel left in the SM's L1.
__device__ __forceinline__ int ld_published(const int* p) {
  int v;
  asm volatile("ld.relaxed.gpu.global.s32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");  // not moved across the wait
  return v;
}

}  // namespace fp4kit::gemm_impl::sm90
