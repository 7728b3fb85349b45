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

}  // namespace fp4kit::gemm_impl::sm90
