// fp4kit_micro_tma_rows: the cost of loading a wgmma activation tile [R tokens x 64 K] (BF16, 128B
// swizzle) as one TMA box against R single-row boxes [1 x 64] gathered through a row -> token map
// (the MoE FC1's in-place row gather, sm90::wg_gather_producer).
//
// One CTA per SM streams stages through a ring of S = 4 shared-memory slots guarded by full / empty
// mbarriers, as the GEMM's producer does, but with nothing to compute: one consumer warp waits for each
// stage and releases it at once. So the time per stage is what the loads alone cost the SM. Producer:
// one thread issuing one [R x 64] box (the gathered copy's tile), or 1 / 4 / 8 warps issuing R
// single-row boxes (each lane its own rows, or lane 0 with shuffled tokens; warp 0's lane 0 announces
// the stage's bytes). The source is a
// [rows x 2048] BF16 matrix (rows = 4096: 16 MB, L2-resident after the first pass); the map sends
// tile row r of stage i to a pseudo-random token. Prints ns per stage and per box, and the cycles per
// box at the measured SM clock.
//
// Question behind it (session 35, docs/MOE.md "FC1 reading the tokens in place"): FC1 with single-row
// boxes ran 1.07-1.97x the layer time on 128-row tiles; a stage there has ~4 cycles of tensor work
// per token row at the dense peak (8 at 256 rows). How much does one row box cost?
//
// Usage: fp4kit_micro_tma_rows [stages]   (needs an sm_90 GPU; no arguments needed)
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "gemm/sm90/mbarrier.cuh"
#include "gemm/sm90/wgmma_kernel.cuh"  // tma_load_2d

namespace {

using fp4kit::gemm_impl::sm90::mbar_arrive;
using fp4kit::gemm_impl::sm90::mbar_arrive_expect_tx;
using fp4kit::gemm_impl::sm90::mbar_init;
using fp4kit::gemm_impl::sm90::mbar_wait;
using fp4kit::gemm_impl::sm90::smem_u32;
using fp4kit::gemm_impl::sm90::tma_load_2d;

constexpr int kStages = 4;
constexpr int kMaxRows = 256;
constexpr int kCols = 2048;
constexpr int kSrcRows = 4096;

// kWarps 0: one [R x 64] box per stage (thread 0); else R row boxes from warps 0..kWarps-1. kShfl:
// each warp walks its rows 32 at a time, every lane loading one token, then issues the 32 boxes one
// after another with the token broadcast by __shfl_sync (a warp-uniform operand: no per-lane loop
// around the copy); else every lane issues its own rows (per-lane operands).
constexpr int kThreads = 9 * 32;  // up to 8 producer warps + the consumer warp
template <int kWarps, bool kShfl>
__global__ void __launch_bounds__(kThreads, 1)
    rows_kernel(const __grid_constant__ CUtensorMap box_map, const __grid_constant__ CUtensorMap row_map,
                const int* tokens, int rows, int stages, long long* cycles) {
  extern __shared__ uint8_t smem_raw[];
  const uint32_t base = (smem_u32(smem_raw) + 1023u) & ~1023u;
  const uint32_t full = base + kStages * kMaxRows * 128;
  const uint32_t empty = full + 8 * kStages;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      mbar_init(full + 8 * s, 1);
      mbar_init(empty + 8 * s, 1);
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  const long long t0 = clock64();
  if (warp == 8) {  // consumer: wait for each stage, release it
    int stage = 0;
    uint32_t phase = 0;
    for (int i = 0; i < stages; ++i) {
      mbar_wait(full + 8 * stage, phase);
      if (lane == 0) mbar_arrive(empty + 8 * stage);
      __syncwarp();
      if (++stage == kStages) stage = 0, phase ^= 1u;
    }
  } else if (kWarps == 0 ? threadIdx.x == 0 : warp < kWarps) {
    constexpr int kW = kWarps == 0 ? 1 : kWarps;
    int stage = 0;
    uint32_t phase = 0;
    for (int i = 0; i < stages; ++i) {
      const uint32_t fb = full + 8 * stage;
      const uint32_t dst = base + stage * kMaxRows * 128;
      mbar_wait(empty + 8 * stage, phase ^ 1u);
      const int kb = (i * 7 + blockIdx.x) % (kCols / 64);
      const int tile = (i * 13 + blockIdx.x * 3) % (kSrcRows / kMaxRows);
      if (kWarps == 0) {
        mbar_arrive_expect_tx(fb, uint32_t(rows * 128));
        tma_load_2d(dst, &box_map, fb, kb * 64, tile * kMaxRows);
      } else {
        if (warp == 0 && lane == 0) mbar_arrive_expect_tx(fb, uint32_t(rows * 128));
        if constexpr (kShfl) {
          for (int r0 = warp * 32; r0 < rows; r0 += 32 * kW) {
            const int n = min(32, rows - r0);
            const int tok = lane < n ? __ldg(tokens + tile * kMaxRows + r0 + lane) : 0;
            for (int j = 0; j < n; ++j) {
              const int t = __shfl_sync(0xffffffffu, tok, j);
              if (lane == 0) tma_load_2d(dst + (r0 + j) * 128, &row_map, fb, kb * 64, t);
            }
          }
        } else {
          for (int r = warp + kW * lane; r < rows; r += 32 * kW)
            tma_load_2d(dst + r * 128, &row_map, fb, kb * 64, __ldg(tokens + tile * kMaxRows + r));
        }
      }
      if (++stage == kStages) stage = 0, phase ^= 1u;
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) cycles[blockIdx.x] = clock64() - t0;
}

using EncodeTiledFn = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                   const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                   CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

bool encode(EncodeTiledFn fn, CUtensorMap* map, void* src, int box_rows) {
  const cuuint64_t dims[2] = {kCols, kSrcRows};
  const cuuint64_t strides[1] = {kCols * 2};
  const cuuint32_t box[2] = {64, cuuint32_t(box_rows)};
  const cuuint32_t elem[2] = {1, 1};
  return fn(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, src, dims, strides, box, elem, CU_TENSOR_MAP_INTERLEAVE_NONE,
            CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

template <int kWarps, bool kShfl>
float run(const CUtensorMap& box_map, const CUtensorMap& row_map, const int* tokens, int rows, int stages, int sms,
          long long* cycles, double* cyc_per_stage) {
  const size_t smem = kStages * kMaxRows * 128 + 2 * kStages * 8 + 1024;
  cudaFuncSetAttribute(rows_kernel<kWarps, kShfl>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem));
  rows_kernel<kWarps, kShfl><<<sms, kThreads, smem>>>(box_map, row_map, tokens, rows, stages / 8, cycles);  // warm-up
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  cudaEventRecord(a);
  rows_kernel<kWarps, kShfl><<<sms, kThreads, smem>>>(box_map, row_map, tokens, rows, stages, cycles);
  cudaEventRecord(b);
  cudaEventSynchronize(b);
  float ms = 0.f;
  cudaEventElapsedTime(&ms, a, b);
  std::vector<long long> c(sms);
  cudaMemcpy(c.data(), cycles, sms * sizeof(long long), cudaMemcpyDeviceToHost);
  long long mx = 0;
  for (long long v : c) mx = v > mx ? v : mx;
  *cyc_per_stage = double(mx) / stages;
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return ms;
}

}  // namespace

int main(int argc, char** argv) {
  const long st = argc > 1 ? std::atol(argv[1]) : 20000;
  if (st <= 0 || st > (1L << 24)) {
    std::fprintf(stderr, "fp4kit_micro_tma_rows: stages must be in [1, 2^24]\n");
    return 2;
  }
  const int stages = int(st);
  int dev = 0, major = 0, sms = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) ||
      major != 9) {
    std::printf("fp4kit_micro_tma_rows: skipped (needs an sm_90 GPU)\n");
    return 0;
  }
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  void* p = nullptr;
  cudaDriverEntryPointQueryResult q;
  if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q) != cudaSuccess ||
      p == nullptr) {
    std::fprintf(stderr, "fp4kit_micro_tma_rows: no cuTensorMapEncodeTiled\n");
    return 1;
  }
  const EncodeTiledFn fn = reinterpret_cast<EncodeTiledFn>(p);
  __nv_bfloat16* src = nullptr;
  int* tokens = nullptr;
  long long* cycles = nullptr;
  std::vector<int> h(kSrcRows);
  uint32_t x = 12345;
  for (int& t : h) t = int((x = x * 1664525u + 1013904223u) >> 8) % kSrcRows;
  bool ok = cudaMalloc(&src, size_t(kSrcRows) * kCols * 2) == cudaSuccess &&
            cudaMemset(src, 0x3c, size_t(kSrcRows) * kCols * 2) == cudaSuccess &&
            cudaMalloc(&tokens, h.size() * sizeof(int)) == cudaSuccess &&
            cudaMemcpy(tokens, h.data(), h.size() * sizeof(int), cudaMemcpyHostToDevice) == cudaSuccess &&
            cudaMalloc(&cycles, sms * sizeof(long long)) == cudaSuccess;
  CUtensorMap row_map;
  std::printf("fp4kit_micro_tma_rows: %d SMs, %d stages of [R x 64] BF16 (128B swizzle) per CTA, ring of %d\n", sms,
              stages, kStages);
  std::printf("%6s %-22s %10s %12s %12s %14s\n", "R", "loads", "ns/stage", "cyc/stage", "cyc/box", "GB/s (all SMs)");
  for (int rows : {64, 128, 144, 256}) {
    CUtensorMap box_map;
    ok = ok && encode(fn, &box_map, src, rows) && encode(fn, &row_map, src, 1);
    if (!ok) break;
    struct Mode {
      const char* what;
      float (*fn)(const CUtensorMap&, const CUtensorMap&, const int*, int, int, int, long long*, double*);
      bool one_box;
    };
    const Mode modes[] = {
        {"one box", run<0, false>, true},
        {"row boxes, 1 warp", run<1, false>, false},
        {"row boxes, 4 warps", run<4, false>, false},
        {"row boxes, 8 warps", run<8, false>, false},
        {"shfl rows, 1 warp", run<1, true>, false},
        {"shfl rows, 4 warps", run<4, true>, false},
        {"shfl rows, 8 warps", run<8, true>, false},
    };
    for (const Mode& m : modes) {
      double cps = 0;
      const float ms = m.fn(box_map, row_map, tokens, rows, stages, sms, cycles, &cps);
      const double ns = ms * 1e6 / stages;
      const double gbs = double(sms) * stages * rows * 128 / (ms * 1e-3) / 1e9;
      std::printf("%6d %-22s %10.1f %12.0f %12.2f %14.0f\n", rows, m.what, ns, cps, m.one_box ? cps : cps / rows, gbs);
    }
  }
  const cudaError_t e = cudaDeviceSynchronize();
  if (!ok || e != cudaSuccess) std::fprintf(stderr, "fp4kit_micro_tma_rows: %s\n", cudaGetErrorString(cudaGetLastError()));
  cudaFree(src);
  cudaFree(tokens);
  cudaFree(cycles);
  return ok && e == cudaSuccess ? 0 : 1;
}
