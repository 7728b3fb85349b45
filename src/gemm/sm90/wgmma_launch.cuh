// Instantiation table of the large-M (wgmma) family. Each (operand type, BN x BM tile) is
// instantiated in its own translation unit (wgmma_*.cu) so they compile in parallel.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include "gemm/sm90/wgmma_kernel.cuh"

namespace fp4kit::gemm_impl::sm90 {

using WgmmaKernelFn = void (*)(const CUtensorMap, const CUtensorMap, const CUtensorMap, const WgmmaGemmArgs);

struct WgmmaKernel {
  WgmmaKernelFn fn = nullptr;
  int smem_bytes = 0;
  bool cluster_reduce = false;  // WgCfg::kClusterReduce: split-K can reduce inside a cluster
};

template <typename T, int BN, int BM, int S, int kStep = 1>
WgmmaKernel wgmma_kernel_instance() {
  return {&wgmma_gemm_kernel<T, BN, BM, S, false, kStep>, WgCfg<BN, BM, S>::kSmemBytes,
          WgCfg<BN, BM, S>::kClusterReduce};
}

// Every instantiated configuration: X(BN, BM, S, STEP), STEP = 64-K stages per consumer step (2:
// wgmma_kernel.cuh kStep, the wgmma_{type}_pairs.cu TUs). One TU per (type, BN, BM) holds all its S.
#define FP4KIT_WGMMA_CONFIGS(X) \
  X(128, 16, 8, 1)  \
  X(128, 32, 8, 1)  \
  X(256, 16, 8, 1)  \
  X(256, 32, 8, 1)  \
  X(128, 64, 6, 1)  \
  X(256, 64, 8, 1)  \
  X(128, 48, 8, 1)  \
  X(256, 48, 8, 1)  \
  X(128, 96, 6, 1)  \
  X(256, 96, 6, 1)  \
  X(128, 24, 8, 1)  \
  X(256, 24, 8, 1)  \
  X(128, 80, 6, 1)  \
  X(256, 80, 6, 1)  \
  X(128, 112, 6, 1) \
  X(256, 112, 6, 1) \
  X(128, 144, 4, 1) \
  X(128, 160, 4, 1) \
  X(128, 192, 4, 1) \
  X(128, 224, 4, 1) \
  X(128, 128, 4, 1) \
  X(128, 128, 6, 1) \
  X(128, 256, 4, 1) \
  X(256, 128, 4, 1) \
  X(256, 128, 6, 1) \
  X(128, 24, 8, 2)  \
  X(128, 32, 8, 2)  \
  X(128, 48, 8, 2)  \
  X(128, 64, 8, 2)  \
  X(128, 24, 12, 2) \
  X(128, 32, 12, 2) \
  X(128, 48, 12, 2) \
  X(128, 64, 12, 2)

#define FP4KIT_WGMMA_DECLARE(T, BN, BM, S, STEP) \
  extern template WgmmaKernel wgmma_kernel_instance<T, BN, BM, S, STEP>();
#define FP4KIT_WGMMA_DECLARE_BF16(BN, BM, S, STEP) FP4KIT_WGMMA_DECLARE(__nv_bfloat16, BN, BM, S, STEP)
#define FP4KIT_WGMMA_DECLARE_FP16(BN, BM, S, STEP) FP4KIT_WGMMA_DECLARE(__half, BN, BM, S, STEP)
FP4KIT_WGMMA_CONFIGS(FP4KIT_WGMMA_DECLARE_BF16)
FP4KIT_WGMMA_CONFIGS(FP4KIT_WGMMA_DECLARE_FP16)
#undef FP4KIT_WGMMA_DECLARE_BF16
#undef FP4KIT_WGMMA_DECLARE_FP16

// The kernel for (BN, BM, S, stages per consumer step), or a null fn when that configuration is not
// instantiated.
template <typename T>
WgmmaKernel wgmma_kernel_for(int bn, int bm, int s, int step = 1) {
#define FP4KIT_WGMMA_CASE(BN, BM, S, STEP) \
  if (bn == BN && bm == BM && s == S && step == STEP) return wgmma_kernel_instance<T, BN, BM, S, STEP>();
  FP4KIT_WGMMA_CONFIGS(FP4KIT_WGMMA_CASE)
#undef FP4KIT_WGMMA_CASE
  return {};
}

// Grouped mode (gemm/grouped.h): the configurations of the grouped tactic table (grouped.cu),
// instantiated in grouped_wgmma_*.cu.
template <typename T, int BN, int BM, int S>
WgmmaKernel grouped_wgmma_kernel_instance() {
  return {&wgmma_gemm_kernel<T, BN, BM, S, true>, WgCfg<BN, BM, S>::kSmemBytes};
}

#define FP4KIT_GROUPED_WGMMA_CONFIGS(X) \
  X(128, 64, 6)                         \
  X(128, 128, 4)                        \
  X(128, 256, 4)                        \
  X(256, 128, 4)                        \
  X(128, 144, 6)                        \
  X(128, 160, 6)

#define FP4KIT_GROUPED_WGMMA_DECLARE(T, BN, BM, S) \
  extern template WgmmaKernel grouped_wgmma_kernel_instance<T, BN, BM, S>();
#define FP4KIT_GROUPED_WGMMA_DECLARE_BF16(BN, BM, S) FP4KIT_GROUPED_WGMMA_DECLARE(__nv_bfloat16, BN, BM, S)
#define FP4KIT_GROUPED_WGMMA_DECLARE_FP16(BN, BM, S) FP4KIT_GROUPED_WGMMA_DECLARE(__half, BN, BM, S)
FP4KIT_GROUPED_WGMMA_CONFIGS(FP4KIT_GROUPED_WGMMA_DECLARE_BF16)
FP4KIT_GROUPED_WGMMA_CONFIGS(FP4KIT_GROUPED_WGMMA_DECLARE_FP16)
#undef FP4KIT_GROUPED_WGMMA_DECLARE_BF16
#undef FP4KIT_GROUPED_WGMMA_DECLARE_FP16

template <typename T>
WgmmaKernel grouped_wgmma_kernel_for(int bn, int bm, int s) {
#define FP4KIT_GROUPED_WGMMA_CASE(BN, BM, S) \
  if (bn == BN && bm == BM && s == S) return grouped_wgmma_kernel_instance<T, BN, BM, S>();
  FP4KIT_GROUPED_WGMMA_CONFIGS(FP4KIT_GROUPED_WGMMA_CASE)
#undef FP4KIT_GROUPED_WGMMA_CASE
  return {};
}

}  // namespace fp4kit::gemm_impl::sm90
