// Instantiation of the decode family. Each operand type is instantiated in its own translation
// unit (decode_w4a16_*.cu) so they compile in parallel.
#pragma once

#include <cuda_runtime.h>

#include "gemm/sm90/decode_kernel.cuh"

namespace fp4kit::gemm_impl::sm90 {

using DecodeKernelFn = void (*)(DecodeGemmArgs);

// The kernel for (NT, R, U), or null when that configuration is not instantiated.
// Keep in sync with the decode entries of tactics.cpp (TacticTables.EveryTacticIsInstantiated checks).
template <typename T, typename OutT>
DecodeKernelFn decode_kernel_for(int nt, int r, int u) {
#define FP4KIT_DECODE_CASE(NT, R, U) \
  if (nt == NT && r == R && u == U) return &decode_gemm_kernel<T, OutT, NT, R, U>;
  FP4KIT_DECODE_CASE(1, 1, 4)
  FP4KIT_DECODE_CASE(1, 2, 4)
  FP4KIT_DECODE_CASE(1, 4, 2)
  FP4KIT_DECODE_CASE(2, 2, 2)
  FP4KIT_DECODE_CASE(2, 4, 2)
  FP4KIT_DECODE_CASE(4, 2, 1)
  FP4KIT_DECODE_CASE(4, 4, 1)
#undef FP4KIT_DECODE_CASE
  return nullptr;
}

// Grouped mode (gemm/grouped.h): the configurations the grouped tactic table lists.
// Keep in sync with grouped.cu. Instantiated in grouped_decode_*.cu.
template <typename T>
DecodeKernelFn grouped_decode_kernel_for(int nt, int r, int u) {
#define FP4KIT_GROUPED_DECODE_CASE(NT, R, U) \
  if (nt == NT && r == R && u == U) return &decode_gemm_kernel<T, T, NT, R, U, true>;
  FP4KIT_GROUPED_DECODE_CASE(1, 1, 4)
  FP4KIT_GROUPED_DECODE_CASE(1, 2, 4)
  FP4KIT_GROUPED_DECODE_CASE(2, 2, 2)
  FP4KIT_GROUPED_DECODE_CASE(4, 2, 1)
#undef FP4KIT_GROUPED_DECODE_CASE
  return nullptr;
}

// Data-parallel variant (decode_dp_kernel), dense and grouped. Keep in sync with tactics.cpp and
// grouped.cu. Instantiated with the stream-K kernels of the same operand type.
// `roll`: rolling load groups (Tactic::roll, GroupedTactic::roll).
template <typename T, typename OutT, bool G>
DecodeKernelFn decode_dp_kernel_for(int nt, int r, int u, bool roll = false) {
#define FP4KIT_DECODE_DP_CASE(NT, R, U) \
  if (!roll && nt == NT && r == R && u == U) return &decode_dp_kernel<T, OutT, NT, R, U, G>;
#define FP4KIT_DECODE_DPR_CASE(NT, R, U) \
  if (roll && nt == NT && r == R && u == U) return &decode_dp_kernel<T, OutT, NT, R, U, G, false, false, true>;
  FP4KIT_DECODE_DP_CASE(1, 1, 4)
  FP4KIT_DECODE_DP_CASE(1, 2, 4)
  FP4KIT_DECODE_DP_CASE(2, 2, 2)
  FP4KIT_DECODE_DPR_CASE(1, 1, 4)
  FP4KIT_DECODE_DPR_CASE(1, 2, 4)
#undef FP4KIT_DECODE_DP_CASE
#undef FP4KIT_DECODE_DPR_CASE
  return nullptr;
}

// Dense dp kernels of the fragment-order tiles (Tactic::frag_a): on A arranged in B-fragment order
// by arrange_activations first, or (`ring`, W4A16 where decode_host.cu ring_a holds) on row-major A
// through per-warp shared-memory rings (kRingA), with no arrangement kernel and dynamic shared
// memory ring_bytes_per_warp<nt>() x kDecodeWarps. Keep in sync with tactics.cpp. Instantiated in
// decode_dpf_*.cu.
template <typename T, typename OutT>
DecodeKernelFn decode_dpf_kernel_for(int nt, int r, int u, bool roll, bool ring) {
#define FP4KIT_DECODE_DPF_CASE(NT, R, U)                                                                          \
  if (!roll && nt == NT && r == R && u == U)                                                                      \
    return ring ? &decode_dp_kernel<T, OutT, NT, R, U, false, false, false, false, false, true>                  \
                : &decode_dp_kernel<T, OutT, NT, R, U, false, false, true>;
#define FP4KIT_DECODE_DPFR_CASE(NT, R, U)                                                                         \
  if (roll && nt == NT && r == R && u == U)                                                                       \
    return ring ? &decode_dp_kernel<T, OutT, NT, R, U, false, false, false, true, false, true>                   \
                : &decode_dp_kernel<T, OutT, NT, R, U, false, false, true, true>;
  FP4KIT_DECODE_DPF_CASE(1, 1, 4)
  FP4KIT_DECODE_DPF_CASE(1, 2, 4)
  FP4KIT_DECODE_DPF_CASE(2, 1, 4)
  FP4KIT_DECODE_DPF_CASE(2, 2, 2)
  FP4KIT_DECODE_DPF_CASE(2, 1, 8)
  FP4KIT_DECODE_DPF_CASE(2, 2, 4)
  FP4KIT_DECODE_DPF_CASE(4, 1, 4)
  FP4KIT_DECODE_DPF_CASE(4, 2, 2)
  FP4KIT_DECODE_DPFR_CASE(1, 1, 4)
  FP4KIT_DECODE_DPFR_CASE(1, 2, 4)
  FP4KIT_DECODE_DPFR_CASE(2, 1, 4)
  FP4KIT_DECODE_DPFR_CASE(2, 2, 4)
  FP4KIT_DECODE_DPFR_CASE(3, 1, 4)
  FP4KIT_DECODE_DPFR_CASE(3, 2, 2)
#undef FP4KIT_DECODE_DPF_CASE
#undef FP4KIT_DECODE_DPFR_CASE
  return nullptr;
}

// W4A4 on the rolling 8-token 32-row fragment-order tile with the NVFP4 ring (kRingA == kRingNvfp4, RingA4):
// output OutT, no kernel in front; null for the other tiles (the host then arranges A: the per-warp
// decode of A lost on them, docs/PERF.md session 23 run 4).
// Instantiated in decode_dpf_w4a4_ring.cu.
template <typename OutT>
DecodeKernelFn decode_dpf_w4a4_ring_kernel_for(int nt, int r, int u, bool roll) {
  if (roll && nt == 1 && r == 2 && u == 4)
    return &decode_dp_kernel<__nv_bfloat16, OutT, 1, 2, 4, false, false, false, true, false, kRingNvfp4>;
  return nullptr;
}

// Dense dp kernels that decode W4A4's NVFP4 A into shared memory themselves (kStageA), or null.
// Instantiated in decode_w4a16_*.cu.
template <typename T>
DecodeKernelFn decode_dp_stage_kernel_for(int nt, int r, int u, bool roll) {
#define FP4KIT_DECODE_STAGE_CASE(NT, R, U)                                                                  \
  if (nt == NT && r == R && u == U)                                                                         \
    return roll ? &decode_dp_kernel<T, T, NT, R, U, false, false, false, true, true>                        \
                : &decode_dp_kernel<T, T, NT, R, U, false, false, false, false, true>;
  FP4KIT_DECODE_STAGE_CASE(1, 1, 4)
  FP4KIT_DECODE_STAGE_CASE(1, 2, 4)
#undef FP4KIT_DECODE_STAGE_CASE
  return nullptr;
}

// Grouped balanced dp kernels (decode_dp_balanced_kernel: kw = 1, units per warp round-robin), or
// null for configurations without one. Instantiated in grouped_decode_*.cu.
template <typename T>
DecodeKernelFn decode_dp_balanced_kernel_for(int nt, int r, int u) {
  if (nt == 1 && r == 2 && u == 4) return &decode_dp_balanced_kernel<T, 1, 2, 4>;
  if (nt == 1 && r == 1 && u == 4) return &decode_dp_balanced_kernel<T, 1, 1, 4>;
  return nullptr;
}

// Grouped dp kernels that read the group list before the PDL wait (GroupedGemmParams::groups_ready;
// the MoE's FC2 at small T), or null for configurations without such an instantiation.
template <typename T>
DecodeKernelFn decode_dp_ready_kernel_for(int nt, int r, int u) {
  if (nt == 1 && r == 2 && u == 4) return &decode_dp_kernel<T, T, 1, 2, 4, true, true>;
  return nullptr;
}

}  // namespace fp4kit::gemm_impl::sm90

// The instantiations live in their own translation units (decode_w4a16_*.cu, decode_dpf_*.cu,
// grouped_decode_*.cu), which compile in parallel; without these declarations every file that calls
// a *_kernel_for (decode_host.cu) would instantiate — and compile — every decode kernel again, and the
// linker would take those copies and never pull in the split objects from the static library.
namespace fp4kit::gemm_impl::sm90 {
#define FP4KIT_DECODE_EXTERN(T)                                                        \
  extern template DecodeKernelFn decode_kernel_for<T, T>(int, int, int);               \
  extern template DecodeKernelFn decode_dp_kernel_for<T, T, false>(int, int, int, bool); \
  extern template DecodeKernelFn decode_dpf_kernel_for<T, T>(int, int, int, bool, bool); \
  extern template DecodeKernelFn decode_dp_stage_kernel_for<T>(int, int, int, bool);   \
  extern template DecodeKernelFn grouped_decode_kernel_for<T>(int, int, int);          \
  extern template DecodeKernelFn decode_dp_kernel_for<T, T, true>(int, int, int, bool);  \
  extern template DecodeKernelFn decode_dp_ready_kernel_for<T>(int, int, int);         \
  extern template DecodeKernelFn decode_dp_balanced_kernel_for<T>(int, int, int);
FP4KIT_DECODE_EXTERN(__nv_bfloat16)
FP4KIT_DECODE_EXTERN(__half)
#undef FP4KIT_DECODE_EXTERN
extern template DecodeKernelFn decode_dpf_w4a4_ring_kernel_for<__nv_bfloat16>(int, int, int, bool);
}  // namespace fp4kit::gemm_impl::sm90
