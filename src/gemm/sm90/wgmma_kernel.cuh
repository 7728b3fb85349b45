// Large-M ("wgmma") NVFP4 GEMM: D[M,N] = alpha * A[M,K] · Bᵀ (+bias) for M above a few dozen tokens.
//
// The product is computed transposed, Dᵀ = B · Aᵀ, so that the decoded weights are the wgmma A
// operand, which Hopper can take from registers (RS wgmma, m64nNk16), and the activations the
// B operand from shared memory (Machete's swap, docs/GEMM.md "large-M family").
//
//  * CTA tile: BN weight rows (wgmma M; two consumer warpgroups of BN/2 rows = 1 or 2 m64 slabs
//    each) x BM tokens (wgmma N = BM) x 64 K per pipeline stage; persistent grid over the tiles,
//    n-tiles grouped so that concurrently running CTAs share weights and activations in L2.
//  * Producer warp (one elected thread): per stage, three TMA loads on one mbarrier: the
//    activation box [BM tokens x 64 K] (128B swizzle, the canonical K-major wgmma B layout; rows
//    beyond M and columns beyond K are zero-filled by TMA), the BN/16 code chunks (512 B each)
//    and their scales (64 B each) of the prepacked weights, through 3D tensor maps over the
//    [row tile][k chunk][bytes] layout of prepacked_layout.h (row tiles beyond the buffer are
//    zero-filled).
//  * Consumers: lane l of warp w reads its 16 code bytes (ld.shared.v4) and 8 scale bytes of its
//    16-row chunk — exactly the wgmma register-A fragments of rows 16w..16w+15 of its slab — and
//    decodes them exactly to BF16/FP16 (fragment_decode.cuh). Stage k+1 is decoded while the
//    wgmmas of stage k run (two register sets), then the stage's smem is released; with one slab
//    per warpgroup (BN = 128) stage k+1's batch is issued before stage k's has finished.
//  * Epilogue: acc * 2^7 * alpha + bias in FP32, narrowed. When D's rows are 16-byte aligned
//    (vec_epilogue) the consumers transpose the tile through one CTA-wide shared-memory buffer
//    ([token][2 warpgroups x 64 rows], stmatrix .trans) and each warp store writes 4 whole 128-byte
//    row segments of D; otherwise masked scalar stores of D[token][row] (docs/GEMM.md "Epilogue").
//  * Split-K (dense mode, when there are fewer tiles than SMs: small M on narrow layers): work unit
//    = (tile, split), split s covering K units [s*nk/ks, (s+1)*nk/ks) (64-K chunks, or chunk pairs
//    with kStep = 2: WgmmaGemmArgs::k_chunks). Each unit writes its FP32
//    accumulators to the workspace; the last of a tile's units to finish (atomic counter) sums all
//    ks partials in split order 0..ks-1 and runs the epilogue, so the result is bit-identical run
//    to run whatever order the units finish in. The counter is left at zero for the next launch.
//    With args.cluster_splits (the host's choice, wgmma_host.cu) the ks units of a tile are one
//    thread-block cluster instead and reduce through distributed shared memory (no workspace);
//    the host sets it only for configs with WgCfg::kClusterReduce. Two splits of a tile of 96
//    tokens or more each reduce and write half of its tokens.
//  * Split tail (Tactic::split_tail): where the tiles make full waves plus a last wave at most half
//    full, the full waves run whole tiles and only the last wave's tiles split K in two, each pair
//    of CTAs (a 2-CTA cluster for the whole grid) reducing one tile as the cluster split-K does; that
//    wave then takes about half a tile's time instead of a whole one on a few SMs.
//  * Stream-K (dense mode, Tactic::stream_k): the (tile, k chunk) units are cut into one contiguous
//    equal range per CTA (stream_k.cuh), so every SM streams the same number of chunks whatever the
//    tile count (112 tiles of 256x32 on 8192x28672 leave 20 of 132 SMs idle without it). A tile
//    split between CTAs is finished like a split-K tile, its partials added in CTA order.
//  * Two stages per consumer step (kStep = 2; dense 128-row tiles): the schedule's k units are
//    pairs of 64-K chunks, one pipeline stage each; a consumer step waits for both, decodes both
//    and issues their 8 wgmmas as one batch, so the per-step costs (barrier waits, wgmma fence /
//    commit / wait, the stage release) are paid once per 128 K and the two decodes interleave. The
//    last pair of K may reach one chunk past it: TMA zero-fills that chunk (weights and activations).
//  * Small token tiles (BM = 16, 24, 32: wgmma N; any multiple of 8 up to 256 is allowed) serve
//    decode-sized M: the weights still stream
//    through the TMA pipeline and are decoded once per stage, and the tensor cores do no padded work
//    beyond BM tokens.
#pragma once

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>
#include <utility>

#include <cute/arch/mma_sm90_gmma.hpp>

#include "gemm/prepacked_layout.h"
#include "gemm/sm90/fragment_decode.cuh"
#include "gemm/sm90/grid_dependency.cuh"
#include "gemm/sm90/mbarrier.cuh"
#include "gemm/sm90/pack_pair.cuh"
#include "gemm/sm90/stream_k.cuh"

namespace fp4kit::gemm_impl::sm90 {

constexpr int kWgThreads = 384;  // producer warpgroup + 2 consumer warpgroups
constexpr int kWgConsumerWarps = 8;
constexpr int kWgGroupN = 8;     // n-tiles per raster group

struct WgmmaGemmArgs {
  int m, n;
  int k_chunks;                     // schedule units of K: 64-K chunks, or pairs of them (kStep = 2)
  int n_tiles, m_tiles, num_tiles;  // grouped mode: m_tiles and num_tiles are per group / on device
  const float* alpha;               // grouped mode: [groups]
  const void* bias;
  void* d;
  int64_t ldd;
  // Grouped mode (gemm/grouped.h): group g owns rows [offsets[g], offsets[g+1]) of A and D and its
  // weights are slice g of the 4D tensor maps; tiles are enumerated group by group.
  const int* offsets;
  int groups;
  // Split-K (dense mode only; 1 = off): partials [num_tiles * k_splits][slabs * BM/8][256 consumer
  // threads] float4s, counters [num_tiles], zero before the launch and left zero after it.
  int k_splits;
  // Split tail (dense mode, Tactic::split_tail; else 0): tiles [0, dp_tiles) run whole, one unit each,
  // and only the later tiles split in k_splits units (the host sets dp_tiles to whole waves of the grid).
  int dp_tiles;
  // Stream-K (dense mode only; k_splits is then 1): CTA b of the grid takes the contiguous range
  // b of the num_tiles * k_chunks (tile, k chunk) units (stream_k.cuh); partials [grid][2 slots]
  // [slabs * BM/8][256 consumer threads] float4s, counters [num_tiles] as for split-K.
  int stream_k;
  float* partials;
  int* counters;
  // 1: d, ldd and n are multiples of 8 elements (16 bytes), so the epilogue writes 16-byte vectors.
  int vec_epilogue;
  // Split-K through distributed shared memory (dense mode, k_splits > 1, WgCfg::kClusterReduce):
  // the launch groups each tile's k_splits units (consecutive CTAs, one unit each; with a split
  // tail, the CTAs' last units) into one cluster; partials never leave the cluster (no workspace,
  // no counters, no memset).
  int cluster_splits;
  // Grouped mode, BN = 128, BM > 64: the producer warpgroup's store warps copy the epilogue buffer to
  // D (the host's choice: grouped_store_warps, set only with vec_epilogue; the kernel ignores it on
  // other tiles, and without vec_epilogue the consumers take the scalar path while the final
  // hand-off still releases the store warps).
  int store_warps;
  // Grouped mode, BN = kGatherRowsBN only (else ignored), optional: row r of the grouped A is row
  // row_token[r] of the tensor map's matrix (the MoE's tokens, read in place instead of a gathered
  // copy). The producer warpgroup then loads the activation tile one 128-byte row at a time
  // (wg_gather_producer); the host sets no store warps with it.
  const int* row_token;
};

// The host's rule for WgmmaGemmArgs::store_warps: short K ranges only. H100 session 33 run 6 (ncu, MoE
// T = 4096, grouped 128x144): FC2 at K = 256 / 512 / 768 / 2048 -13.6 / -9.9 / -6.5 / -1.1 %, FC1 at
// K = 2048 -0.6..-1.6 %, but K = 7168 +0.9..+1.4 % (the store warps' copies then cost the long
// mainloop more than they save its consumers).
constexpr int kStoreWarpsMaxKChunks = 32;
inline int grouped_store_warps(int vec_epilogue, int k_chunks) {
  return vec_epilogue && k_chunks <= kStoreWarpsMaxKChunks ? 1 : 0;
}

constexpr int kWgMaxGroups = 1024;  // grouped mode: tile prefix sums live in shared memory

// Grouped mode: the weight rows per tile of the only tiles that gather their activation rows
// (WgmmaGemmArgs::row_token). Single-row TMA boxes cost the SM a fixed time per box whatever its
// bytes, and a stage has only BN / 32 cycles of tensor work per token row at the dense peak: at
// BN = 128 gathering BM rows per stage outlasts the stage's tensor and decode work (H100 session 35,
// whole MoE layer at T = 1024 / 4096 on 128x64 / 128x144 / 128x256 tiles: 1.07-1.97x the time, the
// gather kernel saved included; DeepSeek-V3's FC1 on 128x144 about 2.4-2.5x, i.e. ~16 cycles per
// box if nothing else overlapped). At BN = 256 it about breaks even, so the layer gains where the gather
// kernel it saves weighs more than FC1's extra time (fused_moe.cu, fc1_gathers_rows; docs/MOE.md).
constexpr int kGatherRowsBN = 256;

template <int BN, int BM, int S>
struct WgCfg {
  static_assert(BN == 128 || BN == 256, "BN: 128 or 256 weight rows");
  static_assert(BM % 8 == 0 && BM >= 8 && BM <= 256,
                "BM: a multiple of 8 in [8, 256] tokens (N not in the table below: its GmmaRS "
                "specialization comes from gmma_rs_ext.cuh, included by its TU)");
  static constexpr int kSlabs = BN / 128;        // m64 slabs per consumer warpgroup
  static constexpr int kAcc = BM / 2;            // accumulator floats per thread per slab
  static_assert(kSlabs * kAcc <= 128, "accumulators must fit in registers");
  static constexpr int kABytes = BM * 128;       // [BM][64] 16-bit, 128B rows (swizzled)
  static constexpr int kWBytes = BN * 32;        // BN/16 chunks x 512 B
  static constexpr int kSBytes = BN * 4;         // BN/16 chunks x 64 B
  static constexpr int kStageTx = kABytes + kWBytes + kSBytes;
  static constexpr int kAOff = 0;
  static constexpr int kWOff = S * kABytes;
  static constexpr int kSOff = kWOff + S * kWBytes;
  static constexpr int kBarOff = kSOff + S * kSBytes;
  // Epilogue buffer of one slab pass: [BM tokens][2 warpgroups][64 rows] 16-bit, each token's 256 B
  // followed by 16 B of padding so that the 8 tokens of an stmatrix row set hit distinct banks.
  static constexpr int kEpiRowBytes = 2 * 128 + 16;
  static constexpr int kEpiOff = (kBarOff + 2 * S * 8 + 127) / 128 * 128;
  // Grouped mode: int prefix[kWgMaxGroups + 1] (tiles before each group), int offsets[kWgMaxGroups + 1].
  static constexpr int kPrefixOff = kEpiOff + BM * kEpiRowBytes;
  static constexpr int kSmemBytes = kPrefixOff + 8 * (kWgMaxGroups + 1) + 1024;  // + alignment slack
  static_assert(kSmemBytes <= 227 * 1024, "shared memory per CTA on sm_90");
  // Cluster split-K: a CTA's FP32 accumulators (BN x BM) fit in its pipeline stages [0, kBarOff).
  static constexpr bool kClusterReduce = S * kStageTx >= BN * BM * 4;
};

// ---- PTX helpers -----------------------------------------------------------------------------------
__device__ __forceinline__ void tma_load_2d(uint32_t dst, const CUtensorMap* map, uint32_t bar, int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
      ::"r"(dst), "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(bar)
      : "memory");
}
__device__ __forceinline__ void tma_load_3d(uint32_t dst, const CUtensorMap* map, uint32_t bar, int c0, int c1,
                                            int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], "
      "[%5];" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
      : "memory");
}
__device__ __forceinline__ void tma_load_4d(uint32_t dst, const CUtensorMap* map, uint32_t bar, int c0, int c1,
                                            int c2, int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], "
      "[%6];" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar)
      : "memory");
}
__device__ __forceinline__ void tma_prefetch_desc(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}

__device__ __forceinline__ uint4 lds_u4(uint32_t addr) {
  uint4 v;
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(addr));
  return v;
}
__device__ __forceinline__ uint2 lds_u2(uint32_t addr) {
  uint2 v;
  asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "r"(addr));
  return v;
}

// Four (two) 8x8 16-bit matrices from mma accumulator fragments, stored transposed: the element a
// lane holds at (row lane/4, columns 2(lane%4), +1) goes to row 2(lane%4) (+1), column lane/4 of
// the matrix whose 8 row addresses lanes 8j..8j+7 give.
__device__ __forceinline__ void stmatrix_x4_trans(uint32_t addr, uint32_t r0, uint32_t r1, uint32_t r2, uint32_t r3) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(addr), "r"(r0), "r"(r1),
               "r"(r2), "r"(r3)
               : "memory");
}
__device__ __forceinline__ void stmatrix_x2_trans(uint32_t addr, uint32_t r0, uint32_t r1) {
  asm volatile("stmatrix.sync.aligned.m8n8.x2.trans.shared.b16 [%0], {%1, %2};" ::"r"(addr), "r"(r0), "r"(r1)
               : "memory");
}
__device__ __forceinline__ void stg_u4(void* p, uint4 v) {
  asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
               : "memory");
}

// wgmma smem descriptor of a K-major, 128B-swizzled tile: 8-row x 128 B atoms, 1024 B apart.
__device__ __forceinline__ uint64_t sw128_desc(uint32_t smem_addr) {
  uint64_t d = 0;
  d |= uint64_t((smem_addr & 0x3FFFF) >> 4);  // start address
  d |= uint64_t(1) << 16;                      // leading byte offset (unused for swizzled K-major)
  d |= uint64_t(1024 >> 4) << 32;              // stride byte offset
  d |= uint64_t(1) << 62;                      // SWIZZLE_128B
  return d;
}

template <typename T, int N>
struct GmmaRS;
#define FP4KIT_GMMA_RS(TYPE, N, OP)                                                               \
  template <>                                                                                     \
  struct GmmaRS<TYPE, N> {                                                                        \
    using Op = cute::SM90::GMMA::OP<cute::SM90::GMMA::Major::K, cute::SM90::GMMA::Major::K>;     \
  };
FP4KIT_GMMA_RS(__nv_bfloat16, 8, MMA_64x8x16_F32BF16BF16_RS)
FP4KIT_GMMA_RS(__nv_bfloat16, 16, MMA_64x16x16_F32BF16BF16_RS)
FP4KIT_GMMA_RS(__nv_bfloat16, 32, MMA_64x32x16_F32BF16BF16_RS)
FP4KIT_GMMA_RS(__nv_bfloat16, 64, MMA_64x64x16_F32BF16BF16_RS)
FP4KIT_GMMA_RS(__nv_bfloat16, 96, MMA_64x96x16_F32BF16BF16_RS)
FP4KIT_GMMA_RS(__nv_bfloat16, 128, MMA_64x128x16_F32BF16BF16_RS)
FP4KIT_GMMA_RS(__nv_bfloat16, 192, MMA_64x192x16_F32BF16BF16_RS)
FP4KIT_GMMA_RS(__nv_bfloat16, 256, MMA_64x256x16_F32BF16BF16_RS)
FP4KIT_GMMA_RS(__half, 8, MMA_64x8x16_F32F16F16_RS)
FP4KIT_GMMA_RS(__half, 16, MMA_64x16x16_F32F16F16_RS)
FP4KIT_GMMA_RS(__half, 32, MMA_64x32x16_F32F16F16_RS)
FP4KIT_GMMA_RS(__half, 64, MMA_64x64x16_F32F16F16_RS)
FP4KIT_GMMA_RS(__half, 96, MMA_64x96x16_F32F16F16_RS)
FP4KIT_GMMA_RS(__half, 128, MMA_64x128x16_F32F16F16_RS)
FP4KIT_GMMA_RS(__half, 192, MMA_64x192x16_F32F16F16_RS)
FP4KIT_GMMA_RS(__half, 256, MMA_64x256x16_F32F16F16_RS)
// FP4KIT_GMMA_RS stays defined: gmma_rs_ext.cuh adds the widths of CuTe's extended table, included
// only by the translation units that instantiate them.

template <typename Op, int NA, size_t... I>
__device__ __forceinline__ void gmma_rs_impl(const uint32_t (&a)[4], uint64_t desc, float (&acc)[NA],
                                             std::index_sequence<I...>) {
  Op::fma(a[0], a[1], a[2], a[3], desc, acc[I]...);
}
template <typename T, int N>
__device__ __forceinline__ void gmma_rs(const uint32_t (&a)[4], uint64_t desc, float (&acc)[N / 2]) {
  gmma_rs_impl<typename GmmaRS<T, N>::Op>(a, desc, acc, std::make_index_sequence<N / 2>{});
}

template <int NA>
__device__ __forceinline__ void fence_acc(float (&acc)[NA]) {
#pragma unroll
  for (int i = 0; i < NA; ++i) asm volatile("" : "+f"(acc[i])::"memory");
}

template <typename OutT>
__device__ __forceinline__ OutT wg_to_out(float v) {
  if constexpr (std::is_same_v<OutT, __nv_bfloat16>) return __float2bfloat16_rn(v);
  else return __float2half_rn(v);
}
template <typename OutT>
__device__ __forceinline__ float wg_from_out(OutT v) {
  if constexpr (std::is_same_v<OutT, __nv_bfloat16>) return __bfloat162float(v);
  else return __half2float(v);
}

// Tile t -> (n tile, m tile): groups of kWgGroupN n-tiles, n fastest inside a group.
__device__ __forceinline__ void wg_raster(int n_tiles, int m_tiles, int t, int& nt, int& mt) {
  const int per_group = kWgGroupN * m_tiles;
  const int group = t / per_group;
  const int local = t - group * per_group;
  const int n_first = group * kWgGroupN;
  const int gs = min(kWgGroupN, n_tiles - n_first);
  nt = n_first + local % gs;
  mt = local / gs;
}

// One output tile: weight rows [nt*BN, +BN), rows [row0 + mt*BM, +BM) of A/D of which the first
// `rows - mt*BM` are valid, group g (0 in dense mode).
struct WgTile {
  int nt, mt, g, row0, rows;
};

// Grouped mode: `g` (kept by the caller across calls) is a group with prefix[g] <= t and becomes
// the group whose tile range holds t, the last such g. kWarp (a whole converged warp, the
// consumers): a CTA walks its tiles in increasing order, so the answer lies a few groups ahead and
// the warp compares the next 32 prefixes at once, one shared load and a ballot per 32 groups. The
// binary search (8 dependent shared loads at 256 groups) was 5 % of MoE FC2's consumer samples
// (ncu, H100). The producer is one thread and keeps the search: its latency hides behind the
// stages it runs ahead (a warp-wide producer loop cost dense tiles 4-9 %).
template <bool G, int BM, bool kWarp>
__device__ __forceinline__ WgTile wg_tile(const WgmmaGemmArgs& args, const int* prefix, const int* offsets, int t,
                                          int& g, int lane) {
  WgTile x;
  if constexpr (!G) {
    wg_raster(args.n_tiles, args.m_tiles, t, x.nt, x.mt);
    x.g = 0;
    x.row0 = 0;
    x.rows = args.m;
  } else {
    if constexpr (kWarp) {
      for (;;) {
        const int gi = g + 1 + lane;
        const unsigned ahead = __ballot_sync(0xffffffffu, gi < args.groups && prefix[gi] <= t);
        g += __popc(ahead);
        if (ahead != 0xffffffffu) break;
      }
    } else {
      int hi = args.groups - 1;
      while (g < hi) {
        const int mid = (g + hi + 1) >> 1;
        if (prefix[mid] <= t) g = mid;
        else hi = mid - 1;
      }
    }
    x.g = g;
    x.row0 = offsets[g];
    x.rows = offsets[g + 1] - x.row0;
    wg_raster(args.n_tiles, (x.rows + BM - 1) / BM, t - prefix[g], x.nt, x.mt);
  }
  return x;
}

// Grouped mode, step 1 (all threads): the group offsets into shared memory, one coalesced pass.
__device__ __forceinline__ void wg_load_offsets(const WgmmaGemmArgs& args, int* offsets) {
  for (int i = threadIdx.x; i <= args.groups; i += blockDim.x) offsets[i] = __ldg(args.offsets + i);
}

// Step 2 (warp 0, after a barrier): prefix[g] = tiles of groups < g (prefix[groups] = all tiles).
template <int BM>
__device__ __forceinline__ void wg_group_prefix(const WgmmaGemmArgs& args, const int* offsets, int* prefix, int lane) {
  int carry = 0;
  if (lane == 0) prefix[0] = 0;
  for (int g0 = 0; g0 < args.groups; g0 += 32) {
    const int g = g0 + lane;
    int tiles = 0;
    if (g < args.groups) {
      const int rows = offsets[g + 1] - offsets[g];
      tiles = rows > 0 ? ((rows + BM - 1) / BM) * args.n_tiles : 0;
    }
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
      const int v = __shfl_up_sync(0xffffffffu, tiles, d);
      if (lane >= d) tiles += v;
    }
    if (g < args.groups) prefix[g + 1] = carry + tiles;
    carry += __shfl_sync(0xffffffffu, tiles, 31);
  }
}

// A unit's partial accumulators, in the cluster's pipeline stages or in the split-K / stream-K
// workspace, are [kSlabs * kAcc / 4][256 consumer threads] float4s: conflict-free in shared memory,
// and a warp's global access covers 512 contiguous bytes. (Per-thread rows of kSlabs * kAcc floats
// spread a warp access over 12 lines at BM = 24 and 32 from BM = 64 on: H200, the 4-way workspace
// splits 3-20 % slower, docs/PERF.md session 38.) Consumer thread ct's accumulators i..i+3 of slab
// sl are float4 ct + partial_f4(sl, i).
template <int kAcc>
__device__ __forceinline__ int partial_f4(int sl, int i) {
  return (sl * kAcc + i) / 4 * 256;
}

// Work unit u -> (tile, k chunk range): split-K units of one tile are consecutive.
struct WgUnit {
  int tile, split, kb_begin, kb_end;
};
__device__ __forceinline__ WgUnit wg_unit(int u, int k_splits, int k_chunks, int dp_tiles) {
  WgUnit w;
  if (u < dp_tiles) {
    w.tile = u;
    w.split = 0;
    w.kb_begin = 0;
    w.kb_end = k_chunks;
    return w;
  }
  const int v = u - dp_tiles;
  w.tile = dp_tiles + v / k_splits;
  w.split = v - (w.tile - dp_tiles) * k_splits;
  w.kb_begin = int(int64_t(w.split) * k_chunks / k_splits);
  w.kb_end = int(int64_t(w.split + 1) * k_chunks / k_splits);
  return w;
}

// The work of one CTA, walked identically by the producer and the consumers: units u =
// blockIdx.x, + gridDim.x, ... (data-parallel tiles and split-K; with a split tail the whole tiles
// [0, dp_tiles) first, then the split ones), or with stream-K the tile segments of the CTA's range of
// (tile, k chunk) units (split = its partial slot).
struct WgSchedule {
  int64_t pos, end, begin;  // stream-K: chunk units [begin, end), next at pos; else unit index pos
  int num_units, k_splits, k_chunks, dp_tiles;
  bool stream_k;

  __device__ __forceinline__ WgSchedule(int num_tiles, int k_splits_, int k_chunks_, bool stream_k_, int dp_tiles_)
      : num_units(dp_tiles_ + (num_tiles - dp_tiles_) * k_splits_),
        k_splits(k_splits_),
        k_chunks(k_chunks_),
        dp_tiles(dp_tiles_),
        stream_k(stream_k_) {
    if (stream_k) {
      const int64_t total = int64_t(num_tiles) * k_chunks;
      begin = pos = range_begin(total, gridDim.x, blockIdx.x);
      end = range_begin(total, gridDim.x, blockIdx.x + 1);
    } else {
      begin = pos = blockIdx.x;
      end = num_units;
    }
  }
  __device__ __forceinline__ bool next(WgUnit& w) {
    if (pos >= end) return false;
    if (!stream_k) {
      w = wg_unit(int(pos), k_splits, k_chunks, dp_tiles);
      pos += gridDim.x;
      return true;
    }
    w.tile = int(pos / k_chunks);
    const int64_t first = int64_t(w.tile) * k_chunks;
    const int64_t seg_end = min(end, first + k_chunks);
    w.kb_begin = int(pos - first);
    w.kb_end = int(seg_end - first);
    w.split = pos == begin ? 0 : 1;
    pos = seg_end;
    return true;
  }
};

// The wgmmas of one stage (4 k16 steps x kSlabs m64 slabs) with N = NE tokens: the first NE/2
// accumulators of each slab; NE < BM leaves the rest untouched.
template <typename T, int NE, int kSlabs, int kAcc>
__device__ __forceinline__ void wg_issue_stage(const uint32_t (&a)[kSlabs][4][4], uint32_t a_stage,
                                               float (&acc)[kSlabs][kAcc]) {
  static_assert(NE / 2 <= kAcc, "NE <= BM");
#pragma unroll
  for (int s = 0; s < 4; ++s)
#pragma unroll
    for (int sl = 0; sl < kSlabs; ++sl)
      gmma_rs<T, NE>(a[sl][s], sw128_desc(a_stage + 32 * s), reinterpret_cast<float(&)[NE / 2]>(acc[sl]));
}

// Cluster-wide barrier (every non-exited thread of the cluster's CTAs); release / acquire order
// the shared-memory partials written before it with the remote reads after it.
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
// The shared::cluster address of local shared address `addr` in the CTA of rank `rank`.
__device__ __forceinline__ uint32_t cluster_map(uint32_t addr, int rank) {
  uint32_t r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(addr), "r"(rank));
  return r;
}
__device__ __forceinline__ float4 ld_cluster_f4(uint32_t addr) {
  float4 v;
  asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "r"(addr)
               : "memory");
  return v;
}

// Barrier of the two consumer warpgroups only (id 1; __syncthreads uses 0).
__device__ __forceinline__ void consumer_barrier() { asm volatile("bar.sync 1, 256;" ::: "memory"); }

// Grouped BN = 128 tiles: the epilogue's shared -> global copy runs on the producer warpgroup's three
// idle warps (the store warps) while the consumers go on with the next tile. The consumers fill the
// epilogue buffer and arrive on kEpiFullBar; the store warps wait on it, copy, and arrive on
// kEpiEmptyBar, which the consumers wait on before they refill the buffer (the store warps arrive
// once up front: the buffer starts empty). A descriptor in shared memory tells the store warps where
// the pass goes (rows < 0: no more passes). Session 33 (a probe without the copy, H200): MoE FC2 at
// T = 4096 spent 15-27 % of its time in it.
constexpr int kEpiFullBar = 2, kEpiEmptyBar = 3;
constexpr int kEpiBarThreads = 256 + 96;  // consumers + store warps
struct WgEpiDesc {
  void* d;   // D at the pass's first token row
  int rows;  // valid token rows of the pass (<= BM); < 0: done
  int col0;  // first column of the pass's warpgroup-0 half; warpgroup 1's is col0 + 64
};
__device__ __forceinline__ void epi_bar_sync(int id) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "n"(kEpiBarThreads) : "memory");
}
__device__ __forceinline__ void epi_bar_arrive(int id) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "n"(kEpiBarThreads) : "memory");
}
// ld.shared that the compiler neither caches nor moves across the barriers above.
__device__ __forceinline__ uint4 lds_u4_volatile(uint32_t addr) {
  uint4 v;
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "r"(addr)
               : "memory");
  return v;
}

// Grouped mode with args.row_token (the MoE's FC1 reading the tokens in place): the producer loop
// of all four producer warps. A tile's BM activation rows are BM single-row TMA boxes ([1 x 64],
// 128 bytes; the 128B swizzle follows the shared-memory address bits, so row r written at
// a_stage + 128 r lands where the [BM x 64] box would have put it). Warp w issues rows 4i + w, each
// lane at most ceil(BM / 128) of them; the row -> token loads happen once per tile. Warp 0's lane 0
// announces the stage's bytes (weights, scales, and 128 per valid row) and loads the weights; the
// other warps' row copies may complete before that announcement (the transaction count goes
// negative until it comes; the phase cannot complete before the one arrival). Rows past the group
// are not loaded: their stale columns are computed and never stored.
template <typename Cfg, int BN, int BM, int S>
__device__ __forceinline__ void wg_gather_producer(const CUtensorMap* tma_a, const CUtensorMap* tma_w,
                                                   const CUtensorMap* tma_s, const WgmmaGemmArgs& args,
                                                   const int* prefix, const int* offsets, int num_tiles,
                                                   uint32_t a_base, uint32_t w_base, uint32_t s_base,
                                                   uint32_t full_bar, uint32_t empty_bar, int warp, int lane) {
  constexpr int kRowsPerWarp = (BM + 3) / 4;
  constexpr int kPerLane = (kRowsPerWarp + 31) / 32;
  int stage = 0;
  uint32_t phase = 0;
  int group = 0;
  WgSchedule sched(num_tiles, 1, args.k_chunks, false, 0);
  WgUnit wu;
  while (sched.next(wu)) {
    const WgTile x = wg_tile<true, BM, true>(args, prefix, offsets, wu.tile, group, lane);
    const int row_tile0 = x.nt * (BN / 16);
    const int tok0 = x.row0 + x.mt * BM;
    const int valid = min(BM, x.row0 + x.rows - tok0);
    int src[kPerLane];
#pragma unroll
    for (int j = 0; j < kPerLane; ++j) {
      const int r = 4 * (lane + 32 * j) + warp;
      src[j] = (lane + 32 * j < kRowsPerWarp && r < valid) ? __ldg(args.row_token + tok0 + r) : -1;
    }
    const uint32_t tx = uint32_t(Cfg::kWBytes + Cfg::kSBytes + valid * 128);
    for (int kb = wu.kb_begin; kb < wu.kb_end; ++kb) {
      const uint32_t fb = full_bar + 8 * stage;
      const uint32_t a_stage = a_base + stage * Cfg::kABytes;
      mbar_wait(empty_bar + 8 * stage, phase ^ 1u);
      if (warp == 0 && lane == 0) {
        mbar_arrive_expect_tx(fb, tx);
        tma_load_4d(w_base + stage * Cfg::kWBytes, tma_w, fb, 0, kb, row_tile0, x.g);
        tma_load_4d(s_base + stage * Cfg::kSBytes, tma_s, fb, 0, kb, row_tile0, x.g);
      }
#pragma unroll
      for (int j = 0; j < kPerLane; ++j)
        if (src[j] >= 0) tma_load_2d(a_stage + (4 * (lane + 32 * j) + warp) * 128, tma_a, fb, kb * 64, src[j]);
      if (++stage == S) {
        stage = 0;
        phase ^= 1u;
      }
    }
  }
}

// ---- kernel ------------------------------------------------------------------------------------------
// T: activation / operand type (bf16 or half); D and bias are T as well (W4A16).
template <typename T, int BN, int BM, int S, bool G = false, int kStep = 1>
__global__ void __launch_bounds__(kWgThreads, 1)
    wgmma_gemm_kernel(const __grid_constant__ CUtensorMap tma_a, const __grid_constant__ CUtensorMap tma_w,
                      const __grid_constant__ CUtensorMap tma_s, const WgmmaGemmArgs args) {
  using Cfg = WgCfg<BN, BM, S>;
  // Two stages per step only where a warpgroup keeps two batches in flight (one slab): on the 256-row
  // tiles (16 wgmmas per batch, one in flight) it was 0-11 % slower than their one-stage steps at
  // every one-pass point (H100, session 43 run 2).
  static_assert(kStep == 1 || (kStep == 2 && !G && Cfg::kSlabs == 1 && S >= 6),
                "two stages per step: dense 128-row tiles with room for two pairs in flight");
  extern __shared__ uint8_t smem_raw[];
  const uint32_t smem_base = (smem_u32(smem_raw) + 1023u) & ~1023u;
  const uint32_t a_base = smem_base + Cfg::kAOff;
  const uint32_t w_base = smem_base + Cfg::kWOff;
  const uint32_t s_base = smem_base + Cfg::kSOff;
  const uint32_t full_bar = smem_base + Cfg::kBarOff;   // S barriers
  const uint32_t empty_bar = full_bar + 8 * S;          // S barriers

  const int warp = threadIdx.x >> 5;
  const int lane = threadIdx.x & 31;
  int* prefix = reinterpret_cast<int*>(smem_raw + (smem_base - smem_u32(smem_raw)) + Cfg::kPrefixOff);
  int* offsets = prefix + (kWgMaxGroups + 1);
  // Programmatic dependent launch (no-ops without it). Dense mode lets the next kernel launch now and
  // its producer request the first stages' weights before it waits (below). Grouped mode (the MoE
  // pipeline launches it without PDL) only waits, at once: the group offsets come from the previous
  // kernel; its dependents launch when it completes, as before session 24 (not measured with PDL).
  if constexpr (!G) grid_launch_dependents();
  if constexpr (G) {
    grid_dependency_wait();
    wg_load_offsets(args, offsets);
    __syncthreads();
    if (warp == 0) wg_group_prefix<BM>(args, offsets, prefix, lane);
  }

  if (threadIdx.x == 0) {
    tma_prefetch_desc(&tma_a);
    tma_prefetch_desc(&tma_w);
    tma_prefetch_desc(&tma_s);
#pragma unroll
    for (int s = 0; s < S; ++s) {
      mbar_init(full_bar + 8 * s, 1);
      mbar_init(empty_bar + 8 * s, kWgConsumerWarps);
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  }
  __syncthreads();
  // Broadcast from lane 0 so that the compiler sees a warp-uniform tile count: with a plain smem
  // load the schedule loop counts as divergent and the mainloop loses the uniform datapath.
  const int num_tiles = G ? __shfl_sync(0xffffffffu, prefix[args.groups], 0) : args.num_tiles;
  const int k_splits = G ? 1 : args.k_splits;
  const int dp_tiles = G ? 0 : args.dp_tiles;
  const bool stream_k = !G && args.stream_k;

  // Grouped BN = 128 tiles with the vector epilogue: the store warps copy the epilogue buffer out.
  // Not the 64-token tile (8..32 rows per expert, long K in the MoE): with the store-warp code its
  // mainloop scheduled differently and Mixtral-8x7B T = 64 ran 2.3-2.9 % slower (H100 session 33).
  // (The store-warp code below stays under `if constexpr (kStoreWarpsCfg)`: with plain `if`s on the
  // folded flag the other tiles' SASS changed, 128x64 and 256x128 included.)
  constexpr bool kStoreWarpsCfg = G && Cfg::kSlabs == 1 && BM > 64;
  // Dense 2-way cluster split-K with 96 tokens or more per tile: each split reduces and writes half
  // of the tile (below). H100 session 34, graph replay with PDL, against split 0 reducing and
  // writing all of it: 4096x4096 at M = 192..512 and 6144x4096 at M = 96 / 128 -1.6..-5.5 % (the
  // larger layers within their run-to-run spread, up to +-6 %). The 24..64-token tiles lost up to 4.6 %
  // with the same code: their mainloop's stage addressing left the uniform datapath (ULOP3 ->
  // LOP3 + R2UR), so they keep the single-reducer path, as do 4- and 8-way splits. (Cause: the
  // peer's mapa rank below comes from wu.split; from %cluster_ctarank the small tiles stay uniform,
  // but then gained nothing: docs/wip/wgmma-halves-all-tiles.patch.)
  constexpr bool kHalfTiles = !G && Cfg::kClusterReduce && BM >= 96;
  // (Gathered rows keep every producer warp loading: the host sets no store warps with row_token.)
  const bool store_warps = kStoreWarpsCfg && args.store_warps;
  __shared__ WgEpiDesc epi_desc;

  if (warp < 4) {
    // ---------------- producer warpgroup ----------------
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory");
    if constexpr (kStoreWarpsCfg) {
      if (warp >= 1 && store_warps) {
        // Store warps: (token, warpgroup) 128-byte segments of the buffer, 8 lanes x 16 B each, 12
        // per round of the three warps, two rounds per batch (40 registers).
        const int sw = warp - 1, sub = lane >> 3, part = lane & 7;
        const uint32_t epi = smem_base + Cfg::kEpiOff;
        constexpr int kSegs = 2 * BM, kSegStep = 3 * 4;
        epi_bar_arrive(kEpiEmptyBar);
        for (;;) {
          epi_bar_sync(kEpiFullBar);
          const volatile WgEpiDesc* dv = &epi_desc;
          const int rows = dv->rows;
          if (rows < 0) break;
          T* dst = static_cast<T*>(const_cast<void*>(dv->d));
          const int col0 = dv->col0;
#pragma unroll 1
          for (int s0 = 0; s0 < kSegs; s0 += 2 * kSegStep) {
            uint4 v[2];
#pragma unroll
            for (int j = 0; j < 2; ++j) {
              const int seg = s0 + j * kSegStep + sw * 4 + sub;
              if (seg < kSegs && (seg >> 1) < rows)
                v[j] = lds_u4_volatile(epi + (seg >> 1) * Cfg::kEpiRowBytes + (seg & 1) * 128 + part * 16);
            }
#pragma unroll
            for (int j = 0; j < 2; ++j) {
              const int seg = s0 + j * kSegStep + sw * 4 + sub;
              const int n0 = col0 + (seg & 1) * 64 + part * 8;
              if (seg < kSegs && (seg >> 1) < rows && n0 < args.n) stg_u4(dst + int64_t(seg >> 1) * args.ldd + n0, v[j]);
            }
          }
          epi_bar_arrive(kEpiEmptyBar);
        }
      }
    }
    bool gathered = false;
    if constexpr (G && BN == kGatherRowsBN) {
      if (args.row_token != nullptr) {
        gathered = true;
        wg_gather_producer<Cfg, BN, BM, S>(&tma_a, &tma_w, &tma_s, args, prefix, offsets, num_tiles, a_base, w_base,
                                           s_base, full_bar, empty_bar, warp, lane);
      }
    }
    if (warp == 0 && lane == 0 && !gathered) {
      int stage = 0;
      uint32_t phase = 0;
      int group = 0;
      // Dense mode: the weights of the CTA's first `early` stages (all slots are free) are requested
      // before the PDL wait, the activations of those stages after it, in the loop below.
      int early = 0;
      if constexpr (!G) {
        WgSchedule first(num_tiles, k_splits, args.k_chunks, stream_k, dp_tiles);
        WgUnit fu;
        while (early < S && first.next(fu)) {
          const WgTile x = wg_tile<G, BM, false>(args, prefix, offsets, fu.tile, group, lane);
          for (int kb = fu.kb_begin * kStep; kb < fu.kb_end * kStep && early < S; ++kb, ++early) {
            const uint32_t fb = full_bar + 8 * early;
            mbar_arrive_expect_tx(fb, Cfg::kStageTx);
            tma_load_3d(w_base + early * Cfg::kWBytes, &tma_w, fb, 0, kb, x.nt * (BN / 16));
            tma_load_3d(s_base + early * Cfg::kSBytes, &tma_s, fb, 0, kb, x.nt * (BN / 16));
          }
        }
        grid_dependency_wait();
      }
      WgSchedule sched(num_tiles, k_splits, args.k_chunks, stream_k, dp_tiles);
      WgUnit wu;
      while (sched.next(wu)) {
        const WgTile x = wg_tile<G, BM, false>(args, prefix, offsets, wu.tile, group, lane);
        const int row_tile0 = x.nt * (BN / 16);
        const int tok0 = x.row0 + x.mt * BM;
        // kb: a 64-K chunk (kStep chunks per schedule unit).
        for (int kb = wu.kb_begin * kStep; kb < wu.kb_end * kStep; ++kb) {
          const uint32_t fb = full_bar + 8 * stage;
          if (early > 0) {  // weights already requested (first use of the slot: phase 0, no wait)
            --early;
            tma_load_2d(a_base + stage * Cfg::kABytes, &tma_a, fb, kb * 64, tok0);
            if (++stage == S) {
              stage = 0;
              phase ^= 1u;
            }
            continue;
          }
          mbar_wait(empty_bar + 8 * stage, phase ^ 1u);
          mbar_arrive_expect_tx(fb, Cfg::kStageTx);
          tma_load_2d(a_base + stage * Cfg::kABytes, &tma_a, fb, kb * 64, tok0);
          if constexpr (G) {
            tma_load_4d(w_base + stage * Cfg::kWBytes, &tma_w, fb, 0, kb, row_tile0, x.g);
            tma_load_4d(s_base + stage * Cfg::kSBytes, &tma_s, fb, 0, kb, row_tile0, x.g);
          } else {
            tma_load_3d(w_base + stage * Cfg::kWBytes, &tma_w, fb, 0, kb, row_tile0);
            tma_load_3d(s_base + stage * Cfg::kSBytes, &tma_s, fb, 0, kb, row_tile0);
          }
          if (++stage == S) {
            stage = 0;
            phase ^= 1u;
          }
        }
      }
    }
  } else {
    // ---------------- consumer warpgroups ----------------
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory");
    // alpha, bias, D and the split-K workspace may belong to the previous kernel in the stream.
    if constexpr (!G) grid_dependency_wait();
    constexpr int kSlabs = Cfg::kSlabs;
    constexpr int kAcc = Cfg::kAcc;
    // Grouped 64-token tiles run a group's short m tile with wgmma N = 32 or 16 (one uniform branch
    // per stage), so that the tensor cores skip the empty tokens: MoE with 8..32 rows per expert
    // (T = 64..256) fills a 64-token tile a quarter or half. H100, eager us, narrow vs full N:
    // DeepSeek-V3 T=256 3072 vs 3614, Qwen3.6 T=256 305 vs 333, fi-32 T=64 434 vs 474. On the
    // 128-token tiles (MoE T = 4096: ~128 +- 11 rows per expert leave half the experts a short second
    // tile) the same branch lost: FC1 fi-256 570 -> 690 us, Qwen3.6 358 -> 368 (ncu), so it is off there.
    // (Session 32, on the 144-token tile: ptxas ends the branch with a no-op wgmma batch, so each
    // stage's wait_group 1 waits for the batch just issued; a copy of the loop per width avoids that
    // but gained nothing measurable: docs/wip/grouped-144-*.patch.)
    constexpr bool kNarrow = G && BM == 64;
    // The grouped 160-token tile runs a tile whose valid tokens fit 144 at wgmma N = 144, chosen once
    // per tile (a copy of the mainloop per width): MoE at 128 +- 11 rows per expert (E = 256, T =
    // 4096) then takes one tile per expert (P(rows > 160) ~ 0.2 %) at the 144-token tile's tensor
    // work for the ~92 % of experts with <= 144 rows, instead of a second, almost empty 144-token
    // tile (its weights decoded again) for the others (gemm/grouped.cu has the measurements). A third
    // width (128) would spill or serialize the wgmmas (session 32, docs/wip/grouped-144-fit-loops.patch).
    constexpr bool kFit = G && BM == 160;
    constexpr int kFitNarrow = 144;
    const int wg = (threadIdx.x >> 7) - 1;  // 0 or 1
    const int wwarp = warp & 3;             // warp within the warpgroup
    const int g = lane >> 2, c = lane & 3;
    const float alpha_dense = G ? 0.0f : __ldg(args.alpha) * kWeightDecodeScale;
    const T* bias = static_cast<const T*>(args.bias);
    T* d = static_cast<T*>(args.d);

    // Per-lane smem offsets of this warp's chunks inside a stage.
    uint32_t w_off[kSlabs], s_off[kSlabs];
#pragma unroll
    for (int sl = 0; sl < kSlabs; ++sl) {
      const int chunk = (wg * kSlabs + sl) * 4 + wwarp;
      w_off[sl] = chunk * kChunkCodeBytes + lane * 16;
      s_off[sl] = chunk * kChunkScaleBytes + g * 8;
    }

    int stage = 0;
    uint32_t phase = 0;
    float acc[kSlabs][kAcc];
    uint32_t fa0[kSlabs][4][4], fa1[kSlabs][4][4];

    // Waits for `stage` and decodes its weights into fragments `fa`.
    auto load_decode = [&](uint32_t (&fa)[kSlabs][4][4], int st, uint32_t ph) {
      mbar_wait(full_bar + 8 * st, ph);
#pragma unroll
      for (int sl = 0; sl < kSlabs; ++sl) {
        const uint4 w = lds_u4(w_base + st * Cfg::kWBytes + w_off[sl]);
        const uint2 sc = lds_u2(s_base + st * Cfg::kSBytes + s_off[sl]);
        decode_chunk<T>(w, sc, fa[sl]);
      }
    };
    // Runs the wgmmas of the current stage from `cur`, decoding the next stage into `nxt` meanwhile.
    // ne: the wgmma N of this tile, BM >> ne (kNarrow: a group's short m tile runs at BM/2 or BM/4).
    // BN = 128 (one slab per warpgroup): two wgmma batches in flight per warpgroup. Stage k's batch
    // is issued before stage k-1's has finished; then wait_group 1 (k-1 done), release stage k-1,
    // decode stage k+1 into the register set k-1 used. ncu H100 against one batch in flight
    // (decode k+1, wait_group 0): MoE FC1/FC2 at T=4096 -2..-4 % (DeepSeek-V3 3.78/2.05 -> 3.62/1.99
    // ms, fi-256 543/487 -> 526/475 us), dense 128x64/128x128 tiles -1..-4 %. With two slabs (BN =
    // 256, 8 wgmmas per batch) it lost 2-6 % (grouped 256x128 FC2 275 -> 290 us), so those keep one.
    constexpr bool kTwoInFlight = kSlabs == 1;
    int held = -1;  // kTwoInFlight: the stage whose batch may still run (released one step later)
    auto release = [&](int st) {
      __syncwarp();
      if (lane == 0) mbar_arrive(empty_bar + 8 * st);
    };
    auto step = [&](int ne, uint32_t (&cur)[kSlabs][4][4], uint32_t (&nxt)[kSlabs][4][4], bool has_next) {
      const uint32_t a_stage = a_base + stage * Cfg::kABytes;
#pragma unroll
      for (int sl = 0; sl < kSlabs; ++sl) fence_acc(acc[sl]);
      cute::warpgroup_arrive();
      if constexpr (kNarrow) {
        if (ne == 0) wg_issue_stage<T, BM>(cur, a_stage, acc);
        else if (ne == 1) wg_issue_stage<T, BM / 2>(cur, a_stage, acc);
        else wg_issue_stage<T, BM / 4>(cur, a_stage, acc);
      } else {
        wg_issue_stage<T, BM>(cur, a_stage, acc);
      }
      cute::warpgroup_commit_batch();
      const int cur_stage = stage;
      if (++stage == S) {
        stage = 0;
        phase ^= 1u;
      }
      if constexpr (kTwoInFlight) {
        cute::warpgroup_wait<1>();
        if (held >= 0) release(held);
        held = cur_stage;
        if (has_next) load_decode(nxt, stage, phase);
      } else {
        if (has_next) load_decode(nxt, stage, phase);
        cute::warpgroup_wait<0>();
#pragma unroll
        for (int sl = 0; sl < kSlabs; ++sl) fence_acc(acc[sl]);
        release(cur_stage);
      }
    };
    // kFit: a step as fit_begin (returns the stage's activation tile), the wgmmas at the tile's
    // width, fit_end (the same work as `step`, without its width argument). `step` keeps its own copy:
    // written through these two lambdas, ptxas scheduled the other tiles' mainloops differently
    // (SASS of 128x128, 128x144, 128x256 changed; session 36).
    auto fit_begin = [&]() {
#pragma unroll
      for (int sl = 0; sl < kSlabs; ++sl) fence_acc(acc[sl]);
      cute::warpgroup_arrive();
      return a_base + stage * Cfg::kABytes;
    };
    auto fit_end = [&](uint32_t (&nxt)[kSlabs][4][4], bool has_next) {
      cute::warpgroup_commit_batch();
      const int cur_stage = stage;
      if (++stage == S) {
        stage = 0;
        phase ^= 1u;
      }
      if constexpr (kTwoInFlight) {
        cute::warpgroup_wait<1>();
        if (held >= 0) release(held);
        held = cur_stage;
        if (has_next) load_decode(nxt, stage, phase);
      } else {
        if (has_next) load_decode(nxt, stage, phase);
        cute::warpgroup_wait<0>();
#pragma unroll
        for (int sl = 0; sl < kSlabs; ++sl) fence_acc(acc[sl]);
        release(cur_stage);
      }
    };
    // After a tile's last step: its last batch done, its stage released.
    auto drain = [&]() {
      if constexpr (kTwoInFlight) {
        cute::warpgroup_wait<0>();
#pragma unroll
        for (int sl = 0; sl < kSlabs; ++sl) fence_acc(acc[sl]);
        release(held);
        held = -1;
      }
    };

    // kStep == 2 (one slab per warpgroup, static_assert above): a step consumes two stages (fa* / fb*: the
    // decoded fragments of its first / second stage); both waits first, then both stages' loads, then both
    // decodes, so that ptxas can interleave the two decodes' dependency chains.
    uint32_t fb0[kSlabs][4][4], fb1[kSlabs][4][4];
    int held2 = -1;  // the second stage of `held`'s pair
    auto load_decode_pair = [&](uint32_t (&fx)[kSlabs][4][4], uint32_t (&fy)[kSlabs][4][4]) {
      const int st1 = stage + 1 == S ? 0 : stage + 1;
      const uint32_t ph1 = stage + 1 == S ? phase ^ 1u : phase;
      mbar_wait(full_bar + 8 * stage, phase);
      mbar_wait(full_bar + 8 * st1, ph1);
      const uint4 w0 = lds_u4(w_base + stage * Cfg::kWBytes + w_off[0]);
      const uint2 s0 = lds_u2(s_base + stage * Cfg::kSBytes + s_off[0]);
      const uint4 w1 = lds_u4(w_base + st1 * Cfg::kWBytes + w_off[0]);
      const uint2 s1 = lds_u2(s_base + st1 * Cfg::kSBytes + s_off[0]);
      decode_chunk<T>(w0, s0, fx[0]);
      decode_chunk<T>(w1, s1, fy[0]);
    };
    auto release_pair = [&](int sa, int sb) {
      __syncwarp();
      if (lane == 0) {
        mbar_arrive(empty_bar + 8 * sa);
        mbar_arrive(empty_bar + 8 * sb);
      }
    };
    // Issues the wgmmas of the current stage from `cur` and moves on to the next; returns the stage issued.
    auto issue_and_advance = [&](uint32_t (&cur)[kSlabs][4][4]) {
      wg_issue_stage<T, BM>(cur, a_base + stage * Cfg::kABytes, acc);
      const int issued = stage;
      if (++stage == S) {
        stage = 0;
        phase ^= 1u;
      }
      return issued;
    };
    auto step_pair = [&](uint32_t (&cx)[kSlabs][4][4], uint32_t (&cy)[kSlabs][4][4], uint32_t (&nx)[kSlabs][4][4],
                         uint32_t (&ny)[kSlabs][4][4], bool has_next) {
      fence_acc(acc[0]);
      cute::warpgroup_arrive();
      const int s0 = issue_and_advance(cx);
      const int s1 = issue_and_advance(cy);
      cute::warpgroup_commit_batch();
      cute::warpgroup_wait<1>();  // the previous pair's batch is done
      if (held >= 0) release_pair(held, held2);
      held = s0;
      held2 = s1;
      if (has_next) load_decode_pair(nx, ny);
    };
    auto drain_pair = [&]() {
      cute::warpgroup_wait<0>();
      fence_acc(acc[0]);
      release_pair(held, held2);
      held = held2 = -1;
    };

    __shared__ int last_unit;  // split-K / stream-K: this CTA finishes the tile
    WgSchedule sched(num_tiles, k_splits, args.k_chunks, stream_k, dp_tiles);
    WgUnit wu;
    int group = 0;
    while (sched.next(wu)) {
      const WgTile x = wg_tile<G, BM, true>(args, prefix, offsets, wu.tile, group, lane);
      const int nt = x.nt, mt = x.mt;
      // Loaded here so that the epilogue does not wait for it.
      const float alpha = G ? __ldg(args.alpha + x.g) * kWeightDecodeScale : alpha_dense;
#pragma unroll
      for (int sl = 0; sl < kSlabs; ++sl)
#pragma unroll
        for (int i = 0; i < kAcc; ++i) acc[sl][i] = 0.0f;

      const int units = wu.kb_end - wu.kb_begin;  // >= 1: the host keeps k_splits <= K units
      const int nk = units * kStep;                // 64-K stages
      int ne = 0;
      if constexpr (kNarrow) {
        const int valid = x.rows - mt * BM;
        ne = valid <= BM / 4 ? 2 : valid <= BM / 2 ? 1 : 0;
      }
      if constexpr (kFit) {
        // One copy of the mainloop per width (a macro: nvcc 13.0's front end crashed on a generic
        // lambda carrying the width, and a width argument to `step` was not folded; session 32).
#define FP4KIT_WG_FIT_LOOP(NE)                                \
  do {                                                        \
    load_decode(fa0, stage, phase);                           \
    for (int kb = 0; kb < nk; kb += 2) {                      \
      wg_issue_stage<T, NE>(fa0, fit_begin(), acc);           \
      fit_end(fa1, kb + 1 < nk);                              \
      if (kb + 1 < nk) {                                      \
        wg_issue_stage<T, NE>(fa1, fit_begin(), acc);         \
        fit_end(fa0, kb + 2 < nk);                            \
      }                                                       \
    }                                                         \
    drain();                                                  \
  } while (0)
        // Valid tokens (may exceed BM), from lane 0 so that the branch is warp-uniform to the compiler
        // (a divergent one serializes the wgmmas, ptxas C7520).
        const int valid = __shfl_sync(0xffffffffu, x.rows - mt * BM, 0);
        if (valid > kFitNarrow) FP4KIT_WG_FIT_LOOP(BM);
        else FP4KIT_WG_FIT_LOOP(kFitNarrow);
#undef FP4KIT_WG_FIT_LOOP
      } else if constexpr (kStep == 2) {
        load_decode_pair(fa0, fb0);
        for (int kb = 0; kb < nk; kb += 4) {
          step_pair(fa0, fb0, fa1, fb1, kb + 2 < nk);
          if (kb + 2 < nk) step_pair(fa1, fb1, fa0, fb0, kb + 4 < nk);
        }
        drain_pair();
      } else {
        load_decode(fa0, stage, phase);
        for (int kb = 0; kb < nk; kb += 2) {
          step(ne, fa0, fa1, kb + 1 < nk);
          if (kb + 1 < nk) step(ne, fa1, fa0, kb + 2 < nk);
        }
        drain();
      }

      const bool partial_tile = stream_k ? units < args.k_chunks : k_splits > 1 && wu.tile >= dp_tiles;
      // Tokens of the tile (relative to its first) whose outputs this CTA writes: all of them, except
      // in a 2-way cluster split of a tile of 96 tokens or more (kHalfTiles), where each split
      // finishes half of the 8-token groups (below).
      int own_lo = 0, own_hi = BM;
      bool cluster_pending = false;  // a 2-way cluster split's last barrier, after the epilogue
      // The host sets cluster_splits only for configs with kClusterReduce (wgmma_host.cu). No device
      // guard for the others: a __trap() here made 256x128 s4 spill 720 B and serialize its wgmmas
      // (ptxas C7512; 2.8x slower, session 13).
      if constexpr (!G && Cfg::kClusterReduce) {
        if (partial_tile && args.cluster_splits) {
          // Split-K inside the cluster: every split stores its accumulators into its own pipeline
          // stages (idle once both warpgroups are past their mainloops: a split unit is its CTA's
          // last, the split tail's included, so all its loads are consumed) in the partial_f4
          // layout; after a cluster barrier the tile's first split adds the others' in split order
          // (deterministic) and runs the epilogue; a second barrier keeps the others' shared memory
          // alive until it has read it. (Two splits of a tile of 96 tokens or more share that work
          // instead: `halves` below.)
          static_assert(Cfg::kAcc % 4 == 0, "float4 partials");
          const int ct = int(threadIdx.x) - 128;  // consumer thread 0..255
          const uint32_t red = smem_base;         // the partial (partial_f4)
          // Accumulators i..i+3 of slab sl (8-token group i / 4); stored locally, added from a peer's
          // copy (peer: the shared::cluster address of its `red`).
          auto partial_at = [&](uint32_t base, int sl, int i) {
            return base + uint32_t((partial_f4<kAcc>(sl, i) + ct) * 16);
          };
          auto store_partial = [&](int sl, int i) {
            asm volatile("st.shared.v4.f32 [%0], {%1, %2, %3, %4};" ::"r"(partial_at(red, sl, i)), "f"(acc[sl][i]),
                         "f"(acc[sl][i + 1]), "f"(acc[sl][i + 2]), "f"(acc[sl][i + 3])
                         : "memory");
          };
          auto add_partial = [&](uint32_t peer, int sl, int i) {
            const float4 v = ld_cluster_f4(partial_at(peer, sl, i));
            acc[sl][i] += v.x;
            acc[sl][i + 1] += v.y;
            acc[sl][i + 2] += v.z;
            acc[sl][i + 3] += v.w;
          };
          consumer_barrier();  // the other warpgroup has finished reading the stages (lds, wgmma)
          bool halves = false;
          if constexpr (kHalfTiles) halves = k_splits == 2;
          if (halves) {
            // Two splits: each finishes half of the tile's 8-token groups (float4 j of a slab holds
            // group j: tokens 8j + 2c, +1 of rows g and g + 8), so each reads half a tile through
            // distributed shared memory and writes half the epilogue, instead of split 0 reading all
            // of it and writing all while split 1 waits. The sum own + peer is p0 + p1 bit for bit
            // (IEEE addition commutes). The second cluster barrier, which keeps a CTA's shared
            // memory alive until its peer has read it, waits until after the epilogue (it writes
            // only the epilogue buffer, not the stages).
            constexpr int kGroups = BM / 8;
            const int glo = wu.split ? kGroups / 2 : 0, ghi = wu.split ? kGroups : kGroups / 2;
#pragma unroll
            for (int sl = 0; sl < kSlabs; ++sl)
#pragma unroll
              for (int i = 0; i < kAcc; i += 4)
                if (i / 4 < glo || i / 4 >= ghi) store_partial(sl, i);  // the peer's groups only
            cluster_sync();
            const uint32_t peer = cluster_map(red, wu.split ^ 1);
#pragma unroll
            for (int sl = 0; sl < kSlabs; ++sl)
#pragma unroll
              for (int i = 0; i < kAcc; i += 4)
                if (i / 4 >= glo && i / 4 < ghi) add_partial(peer, sl, i);
            own_lo = 8 * glo;
            own_hi = 8 * ghi;
            cluster_pending = true;
          } else {
#pragma unroll
            for (int sl = 0; sl < kSlabs; ++sl)
#pragma unroll
              for (int i = 0; i < kAcc; i += 4) store_partial(sl, i);
            cluster_sync();
            if (wu.split == 0) {
              for (int sp = 1; sp < k_splits; ++sp) {
                const uint32_t peer = cluster_map(red, sp);
#pragma unroll
                for (int sl = 0; sl < kSlabs; ++sl)
#pragma unroll
                  for (int i = 0; i < kAcc; i += 4) add_partial(peer, sl, i);
              }
            }
            cluster_sync();
            if (wu.split != 0) continue;
          }
        }
      }
      if (!G && partial_tile && !args.cluster_splits) {
        // Publish this split's accumulators; the last split to arrive reduces all of them in order
        // (split-K: splits 0..ks-1; stream-K: the CTAs covering the tile, in CTA order).
        static_assert(kAcc % 4 == 0, "float4 partials");
        const int ct = threadIdx.x - 128;  // consumer thread 0..255
        constexpr int kPer = kSlabs * kAcc;
        const int64_t total = int64_t(num_tiles) * args.k_chunks, tile_first = int64_t(wu.tile) * args.k_chunks;
        const int64_t first_cta = stream_k ? worker_of(total, gridDim.x, tile_first) : 0;
        const int64_t last_cta = stream_k ? worker_of(total, gridDim.x, tile_first + args.k_chunks - 1) : 0;
        const int64_t row = stream_k ? int64_t(blockIdx.x) * 2 + wu.split : int64_t(wu.tile) * k_splits + wu.split;
        const int arrivals = stream_k ? int(last_cta - first_cta + 1) : k_splits;
        // Workspace partial r (kPer / 4 x 256 float4s in the partial_f4 layout), at this thread's column.
        auto partial_row = [&](int64_t r) {
          return reinterpret_cast<float4*>(args.partials) + r * (kPer / 4) * 256 + ct;
        };
        float4* mine = partial_row(row);
#pragma unroll
        for (int sl = 0; sl < kSlabs; ++sl)
#pragma unroll
          for (int i = 0; i < kAcc; i += 4)
            __stcg(mine + partial_f4<kAcc>(sl, i), make_float4(acc[sl][i], acc[sl][i + 1], acc[sl][i + 2], acc[sl][i + 3]));
        consumer_barrier();
        if (ct == 0) last_unit = arrive_acq_rel(args.counters + wu.tile) == arrivals - 1;
        consumer_barrier();
        if (!last_unit) continue;
#pragma unroll
        for (int sl = 0; sl < kSlabs; ++sl)
#pragma unroll
          for (int i = 0; i < kAcc; ++i) acc[sl][i] = 0.0f;
        for (int sp = 0; sp < arrivals; ++sp) {
          const int64_t src = stream_k ? (first_cta + sp) * 2 + partial_slot(total, gridDim.x, first_cta + sp, tile_first)
                                       : int64_t(wu.tile) * k_splits + sp;
          const float4* p = partial_row(src);
#pragma unroll
          for (int sl = 0; sl < kSlabs; ++sl)
#pragma unroll
            for (int i = 0; i < kAcc; i += 4) {
              const float4 v = __ldcg(p + partial_f4<kAcc>(sl, i));
              acc[sl][i] += v.x;
              acc[sl][i + 1] += v.y;
              acc[sl][i + 2] += v.z;
              acc[sl][i + 3] += v.w;
            }
        }
        if (ct == 0) args.counters[wu.tile] = 0;  // ready for the next launch
      }

      // Epilogue: acc[sl][4i + 2h + e] is row (slab row 16 wwarp + g + 8h), token 8i + 2c + e.
      const int tok0 = mt * BM;  // within the tile's rows
      T* dt = d + int64_t(x.row0) * args.ldd;
      if (args.vec_epilogue) {
        // Per slab pass: the 8 consumer warps transpose their 16 rows x BM tokens with stmatrix
        // .trans into the CTA's buffer [token][warpgroup][64 rows]; then each warp store writes 4
        // whole 128-byte (token, warpgroup) row segments of D, 8 lanes x 16 B each, all of a
        // thread's loads issued before its stores. (Per-warp [token][16 rows] buffers wrote 16
        // partial rows of D per warp store, and each load waited for the previous store: MoE FC2
        // fi-256 561 -> 469 us, Qwen3.6 243 -> 220 us with this form, ncu H100.)
        const uint32_t epi = smem_base + Cfg::kEpiOff;
        const int mi = lane >> 3, r8 = lane & 7;
        const uint32_t st_off = ((mi >> 1) * 8 + r8) * Cfg::kEpiRowBytes + wg * 128 + wwarp * 32 + (mi & 1) * 16;
        const int rows_left = x.rows - tok0;  // valid tokens of this tile (may exceed BM)
        const int cw = warp - 4, sub = lane >> 3, part = lane & 7;
        constexpr int kIt = (2 * BM + 31) / 32;  // 2*BM segments, 32 per round of the 8 warps
#pragma unroll
        for (int sl = 0; sl < kSlabs; ++sl) {
          const int nbase = nt * BN + (wg * kSlabs + sl) * 64 + wwarp * 16;
          // n is a multiple of 8, so each 8-row half is wholly in or out. (A `break` on nbase >= n
          // moved the mainloop's smem addressing off the uniform datapath: +14 R2UR per stage.)
          float b0 = 0.0f, b1 = 0.0f;
          if (bias) {
            if (nbase < args.n) b0 = wg_from_out<T>(bias[nbase + g]);
            if (nbase + 8 < args.n) b1 = wg_from_out<T>(bias[nbase + 8 + g]);
          }
          const float* a = acc[sl];
          if (store_warps) epi_bar_sync(kEpiEmptyBar);  // the store warps have copied the previous pass out
          else consumer_barrier();  // every warp has read the previous pass out of the buffer
          // Pairs of 8-token groups with .x4, an odd last group (BM = 8, 24, 40, ...) with .x2 (its
          // lanes 0..15 give the addresses of the group's two 8-row halves).
#pragma unroll
          for (int i = 0; i + 1 < BM / 8; i += 2) {
            if constexpr (kHalfTiles)
              if (8 * (i + 2) <= own_lo || 8 * i >= own_hi) continue;  // groups another split writes
            stmatrix_x4_trans(epi + i * 8 * Cfg::kEpiRowBytes + st_off,
                              pack_pair<T>(a[4 * i] * alpha + b0, a[4 * i + 1] * alpha + b0),
                              pack_pair<T>(a[4 * i + 2] * alpha + b1, a[4 * i + 3] * alpha + b1),
                              pack_pair<T>(a[4 * i + 4] * alpha + b0, a[4 * i + 5] * alpha + b0),
                              pack_pair<T>(a[4 * i + 6] * alpha + b1, a[4 * i + 7] * alpha + b1));
          }
          if constexpr ((BM / 8) % 2 == 1) {
            constexpr int i = BM / 8 - 1;
            stmatrix_x2_trans(epi + i * 8 * Cfg::kEpiRowBytes + st_off,
                              pack_pair<T>(a[4 * i] * alpha + b0, a[4 * i + 1] * alpha + b0),
                              pack_pair<T>(a[4 * i + 2] * alpha + b1, a[4 * i + 3] * alpha + b1));
          }
          if constexpr (kStoreWarpsCfg) {
            if (store_warps) {
              if (threadIdx.x == 128) {
                epi_desc.d = dt + int64_t(tok0) * args.ldd;
                epi_desc.rows = rows_left < BM ? rows_left : BM;
                epi_desc.col0 = nt * BN + sl * 64;
              }
              epi_bar_arrive(kEpiFullBar);
              continue;
            }
          }
          consumer_barrier();
          // Batches of up to 8 vectors (32 registers): 16 at BM = 256 spilled.
#pragma unroll
          for (int it0 = 0; it0 < kIt; it0 += 8) {
            uint4 v[8];
#pragma unroll
            for (int j = 0; j < 8 && it0 + j < kIt; ++j) {
              const int seg = ((it0 + j) * 8 + cw) * 4 + sub;  // token seg / 2, warpgroup seg % 2
              bool in = seg < 2 * BM;
              if constexpr (kHalfTiles) in = in && (seg >> 1) >= own_lo && (seg >> 1) < own_hi;
              if (in) v[j] = lds_u4(epi + (seg >> 1) * Cfg::kEpiRowBytes + (seg & 1) * 128 + part * 16);
            }
#pragma unroll
            for (int j = 0; j < 8 && it0 + j < kIt; ++j) {
              const int seg = ((it0 + j) * 8 + cw) * 4 + sub;
              const int tok = seg >> 1;
              const int n0 = nt * BN + ((seg & 1) * kSlabs + sl) * 64 + part * 8;
              bool in = seg < 2 * BM && tok < rows_left && n0 < args.n;
              if constexpr (kHalfTiles) in = in && tok >= own_lo && tok < own_hi;
              if (in) stg_u4(dt + int64_t(tok0 + tok) * args.ldd + n0, v[j]);
            }
          }
        }
      } else {
#pragma unroll
        for (int sl = 0; sl < kSlabs; ++sl) {
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int row = nt * BN + (wg * kSlabs + sl) * 64 + wwarp * 16 + g + 8 * h;
            if (row >= args.n) continue;
            const float b = bias ? wg_from_out<T>(bias[row]) : 0.0f;
#pragma unroll
            for (int i = 0; i < BM / 8; ++i) {
              if constexpr (kHalfTiles)
                if (8 * i < own_lo || 8 * i >= own_hi) continue;
#pragma unroll
              for (int e = 0; e < 2; ++e) {
                const int tok = tok0 + 8 * i + 2 * c + e;
                if (tok < x.rows)
                  dt[int64_t(tok) * args.ldd + row] = wg_to_out<T>(acc[sl][4 * i + 2 * h + e] * alpha + b);
              }
            }
          }
        }
      }
      if constexpr (kHalfTiles)
        if (cluster_pending) cluster_sync();  // the peer has read this CTA's partials
    }
    if constexpr (kStoreWarpsCfg) {
      if (store_warps) {  // no more passes: the store warps leave once they have copied the last one
        epi_bar_sync(kEpiEmptyBar);
        if (threadIdx.x == 128) epi_desc.rows = -1;
        epi_bar_arrive(kEpiFullBar);
      }
    }
  }
}

}  // namespace fp4kit::gemm_impl::sm90
