// Small-M ("decode") NVFP4 GEMM: D[M,N] = alpha * A[M,K] · Bᵀ, M up to a few dozen tokens.
//
// At small M the GEMM is a stream of weight bytes; the kernel's job is to keep HBM busy.
//  * Work: the weights are R*16-row blocks x 64-K chunks (prepacked_layout.h). The flattened list
//    of (row block, chunk) units is cut into equal contiguous ranges, one per warp of a persistent
//    grid ("stream-K" at warp granularity), so every SM streams the same number of bytes whatever
//    N and K are, and M=1 with N=8192 still occupies all SMs.
//  * Per chunk a lane issues one 128-bit load of codes and one 64-bit load of scales per row tile,
//    plus 32-bit activation loads (L1 hits: all warps read the same activations); U chunks are
//    loaded before any is decoded. R row tiles per warp share the activation fragments.
//    (W4A4 activations are decoded to 16 bits once, before this kernel: decode_host.cu.)
//    (Measured on H100, session 1: staging activations through shared memory with cp.async +
//    ldmatrix was not faster than these L1-hitting loads for the stream-K tiles. Session 17: it is
//    for the fragment-order tiles in W4A16, where it replaces the arrangement kernel: RingA below.)
//  * Decode in registers (fragment_decode.cuh), mma.m16n8k16 with the weights as the 16-row A
//    operand and up to NT*8 tokens as B.
//  * A row block covered by one warp is written directly. A row block shared by several warps is
//    finished deterministically: each writes its FP32 partial to the workspace, and the last to
//    arrive (atomic counter) sums all partials in warp order and writes D, then resets the counter.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>
#include <utility>

#include "format/e2m1.h"
#include "format/e4m3.h"
#include "format/scale_layout.h"
#include "gemm/fragment_activations.h"
#include "gemm/prepacked_layout.h"
#include "gemm/sm90/pack_pair.cuh"
#include "gemm/sm90/fragment_decode.cuh"
#include "gemm/sm90/grid_dependency.cuh"
#include "gemm/sm90/stream_k.cuh"

namespace fp4kit::gemm_impl::sm90 {

constexpr int kDecodeWarps = 8;
// Resident CTAs per SM of decode_dp_kernel: 1 for the wide configurations (NT * R >= 4), else 2 in
// dense mode and 3 in grouped mode. Measured on the H100 (docs/PERF.md, session 4, MoE T = 1..16,
// all presets): the grouped kernel fits 3 CTAs (<= 80 registers) without spills and gains up to
// 11 % at T = 2..16 (Qwen3-30B T=16 128.2 -> 114.3 us, Mixtral T=2 145.2 -> 129.7), neutral
// elsewhere; the dense kernel spills at 80 registers (the PDL weight prefetch keeps a load group
// live across the wait) and loses 4-7 %; the grouped stream-K kernel at 3 CTAs loses up to 7 %.
template <int NT, int R, bool G>
constexpr int decode_min_ctas_per_sm() {
  return NT * R >= 4 ? 1 : (G ? 3 : 2);
}

struct DecodeGemmArgs {
  int m, n, k;
  const void* a;             // 16-bit [m, lda]
  int64_t lda;               // elements
  const uint4* b_codes;      // prepacked codes
  const uint2* b_scales;     // prepacked scales (8 bytes per (chunk, g))
  int64_t k_chunks;          // chunks per 16-row tile
  int64_t row_blocks;        // ceil(n / (16 R))
  const float* alpha;
  const void* bias;
  void* d;
  int64_t ldd;
  float* partials;           // [gridDim.y][total warps][2 slots][32 lanes][R*NT*4]
  int* counters;             // [gridDim.y][slots * row_blocks], zero before the launch, zero after
  // Grouped mode (gemm/grouped.h): `slots` copies of the (row block, chunk) unit list, slot s
  // standing for group active[s] if s < *num_active; m, a, d, b and alpha are then per group.
  int64_t slots;             // 1 in dense mode
  const int* offsets;        // [groups + 1]
  const int* active;         // [slots]
  const int* num_active;
  int64_t group_bytes;       // prepacked bytes per group
  int64_t code_bytes;        // offset of the scales inside a group's buffer
  int dp_kw;                 // decode_dp_kernel: warps per row block (1, 2, 4 or 8)
  // decode_dp_kernel (dense): chunks of each row tile, after the first load group, that a warp
  // asks L2 to prefetch before its PDL wait (0: none). Set when the kernel waits for a staging
  // kernel of our own (W4A4 staging, fragment-order arrangement; decode_l2_prefetch_chunks), during
  // which HBM would otherwise idle.
  int l2_prefetch_chunks;
  // decode_dp_kernel with kStageA (W4A4, dense): A is NVFP4 — codes (args.a, a_row_bytes per row) and
  // E4M3 scales in the 128x4 layout (a_scales, a_sf_cols padded scale columns) — and each CTA
  // decodes it into shared memory first ([m][lda] 16-bit, lda = whole chunks + 8; the chunks past K
  // are written as zeros, the 8 extra elements never touched).
  const uint8_t* a_scales;
  int64_t a_row_bytes;
  int64_t a_sf_cols;
};

__device__ __forceinline__ void prefetch_l2(const void* p, uint32_t bytes) {
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p), "r"(bytes) : "memory");
}

// decode_dp_kernel before its PDL wait: lane r < R asks L2 for the next args.l2_prefetch_chunks
// chunks of row tile r after its first load group [j, j + U) (contiguous codes, contiguous scales).
template <int R, int U>
__device__ __forceinline__ void prefetch_after_first_group(const DecodeGemmArgs& args, int64_t rb, int64_t j,
                                                           int64_t j_end, int lane) {
  if (args.l2_prefetch_chunks > 0 && lane < R) {
    const int64_t n = min(int64_t(args.l2_prefetch_chunks), j_end - j - U);
    if (n > 0) {
      const int64_t chunk = (rb * R + lane) * args.k_chunks + j + U;
      prefetch_l2(args.b_codes + chunk * 32, uint32_t(n) * kChunkCodeBytes);
      prefetch_l2(args.b_scales + chunk * 8, uint32_t(n) * kChunkScaleBytes);
    }
  }
}

// The problem one row block belongs to: the whole GEMM (dense) or one group (grouped).
struct DecodeView {
  int m;
  const void* a;
  const uint4* b_codes;
  const uint2* b_scales;
  void* d;
  float alpha;
};

__device__ __forceinline__ DecodeView dense_view(const DecodeGemmArgs& args) {
  return DecodeView{args.m, args.a, args.b_codes, args.b_scales, args.d, *args.alpha};
}

// Grouped mode: the view of slot `slot`, or m = 0 when the slot is inactive.
template <typename T, typename OutT>
__device__ __forceinline__ DecodeView group_view(const DecodeGemmArgs& args, int64_t slot) {
  DecodeView v{0, nullptr, nullptr, nullptr, nullptr, 0.0f};
  // (kReady: read before the PDL wait; ld_published)
  if (slot >= ld_published(args.num_active)) return v;
  const int g = ld_published(args.active + slot);
  const int row0 = ld_published(args.offsets + g);
  v.m = ld_published(args.offsets + g + 1) - row0;
  v.a = static_cast<const T*>(args.a) + int64_t(row0) * args.lda;
  const uint8_t* base = reinterpret_cast<const uint8_t*>(args.b_codes) + int64_t(g) * args.group_bytes;
  v.b_codes = reinterpret_cast<const uint4*>(base);
  v.b_scales = reinterpret_cast<const uint2*>(base + args.code_bytes);
  v.d = static_cast<OutT*>(args.d) + int64_t(row0) * args.ldd;
  v.alpha = __ldg(args.alpha + g);
  return v;
}

__device__ __forceinline__ uint4 load_stream_u4(const uint4* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}
__device__ __forceinline__ uint2 load_stream_u2(const uint2* p) {
  uint2 v;
  asm volatile("ld.global.nc.L1::no_allocate.v2.u32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "l"(p));
  return v;
}

template <typename T>
__device__ __forceinline__ void mma_m16n8k16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

template <typename OutT>
__device__ __forceinline__ OutT to_out(float v) {
  if constexpr (std::is_same_v<OutT, __nv_bfloat16>) return __float2bfloat16_rn(v);
  else return __float2half_rn(v);
}
template <typename OutT>
__device__ __forceinline__ float from_out(OutT v) {
  if constexpr (std::is_same_v<OutT, __nv_bfloat16>) return __bfloat162float(v);
  else return __half2float(v);
}

// Registers of one group of U chunks.
template <int NT, int R, int U>
struct ChunkRegs {
  uint4 codes[U][R];
  uint2 scales[U][R];
  uint32_t act[U][NT][4][2];
};

// The two halves of a load group (load_group below); decode_dp_kernel requests a first group's
// weights before the programmatic-dependent-launch wait and its activations after.
template <int NT, int R, int U>
__device__ __forceinline__ void load_weights(const DecodeGemmArgs& args, const uint4* b_codes, const uint2* b_scales,
                                             ChunkRegs<NT, R, U>& regs, int64_t rb, int64_t j0, int64_t j_end,
                                             int lane) {
  const int g = lane >> 2;
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const int64_t j = j0 + u;
    const bool valid = j < j_end;
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const int64_t chunk = (rb * R + r) * args.k_chunks + j;
      regs.codes[u][r] = valid ? load_stream_u4(b_codes + chunk * 32 + lane) : make_uint4(0, 0, 0, 0);
      regs.scales[u][r] = valid ? load_stream_u2(b_scales + chunk * 8 + g) : make_uint2(0, 0);
    }
  }
}
template <typename T, int NT, int R, int U>
__device__ __forceinline__ void load_activations(const DecodeGemmArgs& args, const DecodeView& v,
                                                 ChunkRegs<NT, R, U>& regs, int64_t j0, int64_t j_end, int tok0,
                                                 int lane) {
  const int g = lane >> 2, c = lane & 3;
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const int64_t j = j0 + u;
    const bool valid = j < j_end;
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
      const int tok = tok0 + nt * 8 + g;
#pragma unroll
      for (int s = 0; s < 4; ++s) {
        const int64_t kb = j * 64 + 16 * s;
        uint32_t b0 = 0, b1 = 0;
        if (valid && tok < v.m && kb < args.k) {
          const int64_t kk = kb + 2 * c;
          const T* row = static_cast<const T*>(v.a) + int64_t(tok) * args.lda;
          b0 = __ldg(reinterpret_cast<const unsigned int*>(row + kk));
          b1 = __ldg(reinterpret_cast<const unsigned int*>(row + kk + 8));
        }
        regs.act[u][nt][s][0] = b0;
        regs.act[u][nt][s][1] = b1;
      }
    }
  }
}

// One group of U chunks: weights, then activations.
template <typename T, int NT, int R, int U>
__device__ __forceinline__ void load_group(const DecodeGemmArgs& args, const DecodeView& v, ChunkRegs<NT, R, U>& regs,
                                           int64_t rb, int64_t j0, int64_t j_end, int tok0, int lane) {
  load_weights<NT, R, U>(args, v.b_codes, v.b_scales, regs, rb, j0, j_end, lane);
  load_activations<T, NT, R, U>(args, v, regs, j0, j_end, tok0, lane);
}

template <int R, int NT>
__device__ __forceinline__ void zero_acc(float (&acc)[R][NT][4]) {
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[r][nt][i] = 0.0f;
}

// One chunk of R row tiles against NT token tiles.
template <typename T, int NT, int R>
__device__ __forceinline__ void compute_chunk(const uint4 (&codes)[R], const uint2 (&scales)[R],
                                              const uint32_t (&act)[NT][4][2], float (&acc)[R][NT][4]) {
#pragma unroll
  for (int r = 0; r < R; ++r) {
    uint32_t a[4][4];
    decode_chunk<T>(codes[r], scales[r], a);
#pragma unroll
    for (int s = 0; s < 4; ++s)
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) mma_m16n8k16<T>(acc[r][nt], a[s], act[nt][s][0], act[nt][s][1]);
  }
}

template <typename T, int NT, int R, int U>
__device__ __forceinline__ void compute_group(const ChunkRegs<NT, R, U>& regs, float (&acc)[R][NT][4]) {
#pragma unroll
  for (int u = 0; u < U; ++u) compute_chunk<T, NT, R>(regs.codes[u], regs.scales[u], regs.act[u], acc);
}

// The weight half of a load group (RowBlockStream loads activations chunk by chunk).
template <int R, int U>
struct WeightRegs {
  uint4 codes[U][R];
  uint2 scales[U][R];
};

// Unchecked streaming of one warp's chunks of one row block: a cursor per row tile (codes, scales)
// and per token tile (activations), advanced by U chunks per group. Used for the full groups of a
// range, whose chunks lie entirely inside K; the remainder goes through load_group's checked path.
// Its point is the instruction count: a group of unchecked loads is one immediate-offset load per
// fragment plus one pointer increment per cursor (the checked path recomputes 64-bit addresses and
// predicates per load, ~40 % of the loop's instructions).
// kFragA: A is in B-fragment order (fragment_activations.h): a chunk's fragments of one token tile
// are two 128-bit loads per lane instead of eight 32-bit ones.
template <bool kSmem>
__device__ __forceinline__ unsigned int load_act_word(const unsigned int* p) {
  if constexpr (kSmem) return *p;  // shared memory (decode_dp_kernel's kStageA)
  else return __ldg(p);
}

// kRingA (W4A16 on the fragment-order tiles): row-major 16-bit A streamed through a per-warp ring of
// shared memory, so that no arrangement kernel (and no kernel boundary) precedes the GEMM. The ring
// holds kRingSlots chunks of every token tile of the warp: chunk c of tile nt is 8 token rows x 128
// bytes, its 16-byte pieces stored at piece ^ row (bank-conflict-free both for the cp.async writes,
// a row's 8 pieces per 8 lanes, and for ldmatrix, 8 rows of one piece per matrix). Each lane copies
// two pieces per tile and chunk with cp.async (L2 -> shared, no registers; pieces past K and rows
// past M are zero-filled), one commit group per chunk, kRingAhead chunks ahead of the one being
// computed; a chunk's B fragments are two ldmatrix.x4 per tile: matrix (step s, half h) = tokens x
// k [16s + 8h, +8), whose row g, elements 2c, 2c+1 are exactly lane (g, c)'s fragment word.
// Without it the GEMM waits for the arrangement kernel: H100 (docs/PERF.md session 17), the
// fragment-order tiles ran 8-25 % faster with that kernel's dependency removed (8192x8192 M = 8 15.4
// -> 13.9 us) — the measurement that motivated the ring. Used where the CTA's 8 warps stream 8
// different K slices (decode_host.cu ring_a).
// Shared memory one CTA may take so that two fit an SM (228 KB per SM, 1 KB reserved per CTA).
constexpr int kTwoCtaSmemPerCta = 113 * 1024;
constexpr int kRingSlots = 4;          // chunks per warp and token tile in shared memory (a power of 2)
constexpr int kRingAhead = kRingSlots - 1;  // chunks in flight beyond the one being read
constexpr int kRingTileBytes = 8 * 128;
template <int NT>
constexpr int ring_bytes_per_warp() { return kRingSlots * NT * kRingTileBytes; }
static_assert((kRingSlots & (kRingSlots - 1)) == 0, "ring slots: a power of 2 (slot = chunk & (slots - 1))");

// Shared address of the calling warp's ring (dynamic shared memory, kDecodeWarps rings), and the
// offset of chunk `next`'s slot in it: chunk c lives in slot (c - origin) mod kRingSlots.
template <int NT>
__device__ __forceinline__ uint32_t ring_warp_base() {
  extern __shared__ __align__(128) uint8_t ring_smem[];
  return uint32_t(__cvta_generic_to_shared(ring_smem)) + uint32_t(threadIdx.x >> 5) * ring_bytes_per_warp<NT>();
}
__device__ __forceinline__ uint32_t ring_slot(int64_t next, int64_t origin, uint32_t slot_bytes) {
  return uint32_t((next - origin) & (kRingSlots - 1)) * slot_bytes;
}
// Offset of the slot `ahead` chunks past the cursor's (`slot`; kFixed: the cursor sits at slot 0, so
// the offset is a compile-time constant). A ring of 3 token tiles (24-token tile) is not a power of
// 2 bytes: a modulo by the constant, which only its remainder loop (not fixed) pays.
template <bool kFixed>
__device__ __forceinline__ uint32_t ring_offset(uint32_t slot, int ahead, uint32_t slot_bytes) {
  const uint32_t ring = kRingSlots * slot_bytes, x = (kFixed ? 0u : slot) + uint32_t(ahead) * slot_bytes;
  return (ring & (ring - 1)) == 0 ? x & (ring - 1) : x % ring;
}
// Before reading the oldest chunk in flight: its copies have landed, and every lane's reads of the
// chunk before it are ordered ahead of the copy into that chunk's slot that follows.
__device__ __forceinline__ void ring_wait_oldest() {
  asm volatile("cp.async.wait_group %0;" ::"n"(kRingAhead - 1) : "memory");
  __syncwarp();
}

template <typename T, int NT>
struct RingA {
  static constexpr uint32_t kSlotBytes = NT * kRingTileBytes;
  // Session 18: the per-chunk bookkeeping is a few loop-carried registers and compile-time offsets
  // (issue<D> / read<D> take the chunk's place in the load group as a template argument, the source
  // offset is an immediate, the cursor moves once per load group, one compare per copy). The first
  // version kept 64-bit chunk indices, a K position and a row-liveness mask, which ptxas (at the
  // 128-register bound) rematerialized per copy: 122 SASS instructions per chunk of the 8-token
  // 16-row tile, now 87 (the row-major tile's loop: ~84). H100, graph replay (docs/PERF.md session
  // 18): down M = 4..8 -8..-9 %, o -9 %, qkv -6 %, 8192x8192 M = 5..16 -3.5..-4 %.
  const T* src[NT][2];  // the lane's two rows of each token tile at chunk next + kRingAhead
  uint32_t dst[2];      // shared address of the lane's two pieces in tile 0 of slot 0
  uint32_t ldm[2];      // the lane's ldmatrix row address in tile 0 of slot 0: steps {0, 1} and {2, 3}
  uint32_t slot;        // offset of chunk next's slot in the ring
  // K elements from the lane's piece of row q of tile nt in chunk next + kRingAhead to the end of K, or
  // kDeadRow for rows past M: one compare per copy says whether it reads (a row-liveness mask beside
  // one K count was rematerialized by ptxas into ~15 instructions per chunk at 128 registers).
  int k_left[NT][2];
  // (A dead row's count loses 64 per chunk: it stays negative for 2^24 chunks, beyond any warp's
  // range where the ring runs — at least 2 warps per row block (ring_a), K < 2^31, i.e. < 2^24 chunks
  // per warp.)
  static constexpr int kDeadRow = -(1 << 30);
  int left;             // chunks of the warp's range from chunk next + kRingAhead on (<= 0: none)

  // The cursor at chunk `next` (the next chunk read); copies continue at chunk next + kRingAhead.
  // Chunk c lives in slot (c - origin) mod kRingSlots, origin the first chunk of the warp's stream
  // (the same for every bind of one stream): a stream bound at its origin starts at slot 0, which
  // the rolling loop's fixed slots rely on (stream_rolling).
  __device__ __forceinline__ void bind(const DecodeGemmArgs& args, const DecodeView& v, int tok0, int lane, int64_t next,
                                       int64_t end, int64_t origin) {
    const uint32_t base = ring_warp_base<NT>();
    slot = ring_slot(next, origin, kSlotBytes);
    const int p = lane & 7;
    const int64_t elem = (next + kRingAhead) * 64 + p * 8;
    left = int(end - next - kRingAhead);
#pragma unroll
    for (int q = 0; q < 2; ++q) {
      const int r = (lane >> 3) + 4 * q;
      dst[q] = base + uint32_t(r * 128 + ((p ^ r) << 4));
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
        const int tok = tok0 + nt * 8 + r;
        k_left[nt][q] = tok < v.m ? int(int64_t(args.k) - elem) : kDeadRow;
        src[nt][q] = static_cast<const T*>(v.a) + int64_t(min(tok, v.m - 1)) * args.lda + elem;
      }
      // ldmatrix: lane L addresses row L & 7 of matrix L >> 3 = (step 2q + (L >> 4), half (L >> 3) & 1).
      const int lr = lane & 7, lp = 2 * (2 * q + (lane >> 4)) + ((lane >> 3) & 1);
      ldm[q] = base + uint32_t(lr * 128 + ((lp ^ lr) << 4));
    }
  }
  // Copies chunk next + kRingAhead + D (if it is in the warp's range) into its slot, that of chunk
  // next + D - 1; commits one group either way (the waits count groups). Pieces past K and rows past M
  // are zero-filled without a read (cp.async with source size 0: copies of one row by several lanes
  // measured up to 35 % slower).
  // kFixed: the cursor's slot is 0 (a stream bound at its origin, advanced by whole rings with
  // advance_ring): the slot offsets are compile-time constants, folded into the instructions.
  template <int D, bool kFixed = false>
  __device__ __forceinline__ void issue() const {
    if (D < left) {
      const uint32_t s = ring_offset<kFixed>(slot, D + kRingAhead, kSlotBytes);
#pragma unroll
      for (int nt = 0; nt < NT; ++nt)
#pragma unroll
        for (int q = 0; q < 2; ++q) {
          const uint32_t bytes = D * 64 < k_left[nt][q] ? 16u : 0u;
          asm volatile("cp.async.cg.shared.global [%0], [%1+%3], 16, %2;" ::"r"(dst[q] + s + nt * kRingTileBytes),
                       "l"(src[nt][q]), "r"(bytes), "n"(D * 64 * int(sizeof(T)))
                       : "memory");
        }
    }
    asm volatile("cp.async.commit_group;" ::: "memory");
  }
  // The B fragments of chunk next + D, the oldest of the kRingAhead chunks in flight. The barrier also
  // orders every lane's reads of the chunk before it ahead of the copy into its slot that follows.
  template <int D, bool kFixed = false>
  __device__ __forceinline__ void read(uint32_t (&a)[NT][4][2]) const {
    ring_wait_oldest();
    const uint32_t s = ring_offset<kFixed>(slot, D, kSlotBytes);
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int q = 0; q < 2; ++q)
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                     : "=r"(a[nt][2 * q][0]), "=r"(a[nt][2 * q][1]), "=r"(a[nt][2 * q + 1][0]),
                       "=r"(a[nt][2 * q + 1][1])
                     : "r"(ldm[q] + s + nt * kRingTileBytes)
                     : "memory");
  }
  // Moves the cursor n chunks on (once per load group).
  __device__ __forceinline__ void advance(int n) {
    slot = ring_offset<false>(slot, n, kSlotBytes);
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int q = 0; q < 2; ++q) {
        src[nt][q] += n * 64;
        k_left[nt][q] -= n * 64;  // (a dead row's stays far below 0)
      }
    left -= n;
  }
  // The same by a whole ring (the slot is unchanged): the rolling loop's fixed slots.
  __device__ __forceinline__ void advance_ring() {
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int q = 0; q < 2; ++q) {
        src[nt][q] += kRingSlots * 64;
        k_left[nt][q] -= kRingSlots * 64;
      }
    left -= kRingSlots;
  }
};

// kRingA == kRingNvfp4 (W4A4, the rolling 8-token 32-row tile): the ring carries A as it comes, NVFP4 codes and
// E4M3 scales (128x4 layout), and each lane decodes its own B fragments from it, so that no kernel
// (arrangement, staging) precedes the GEMM. Per token tile and chunk a slot holds the 8 tokens' 32
// code bytes at token * 32 and their 4 scale bytes at 256 + token * 4 (in the 128x4 layout a row's
// four 16-element blocks of one 64-element chunk are one aligned word; the next chunk's is 512 bytes
// on). Lanes 0..15 copy a 16-byte code half (token lane / 2), lanes 16..23 a scale word (token
// lane - 16), with cp.async; codes and scales past K and rows past M are zero-filled without a read,
// so those products are 0 (a scale byte past K may be anything, a NaN included). Decoding: codes as
// the weights' (e2m1 * 2^-126 in BF16: sign at 15, e1 e0 m at 8..6) times sf * 2^119 (exact from
// `cvt.rn.f16x2.e4m3x2`, subnormal scales included), so the activations are a * sf * 2^-7, exactly,
// like the weights: the accumulator holds the true sum times 2^-14, undone before alpha
// (kRingA4Shift). Slot geometry as RingA (kRingTileBytes per tile), of which 288 bytes are used.
constexpr int kRingRows = 1;   // RingA: row-major 16-bit A
constexpr int kRingNvfp4 = 2;  // RingA4: NVFP4 A
constexpr int kRingA4Shift = 7;
template <typename T, int NT>
struct RingA4 {
  static_assert(std::is_same_v<T, __nv_bfloat16>, "RingA4: BF16 operands");
  static constexpr uint32_t kSlotBytes = NT * kRingTileBytes;
  static constexpr int kDeadRow = -(1 << 30);
  const uint8_t* src[NT];  // the lane's piece (code half or scale word) of tile nt at chunk next + kRingAhead
  uint32_t dst;            // shared address of the lane's piece in tile 0 of slot 0
  uint32_t rd;             // shared address of the lane's token row (codes) in tile 0 of slot 0
  uint32_t sd;             // the same for its scale word, less 256
  uint32_t slot;           // offset of chunk next's slot in the ring
  int k_left[NT];          // K elements from the lane's piece to the end of K (kDeadRow: row past M)
  int left;                // chunks of the warp's range from chunk next + kRingAhead on (<= 0: none)
  int src_shift;           // log2 of the source bytes per chunk: 5 (codes) or 9 (scales)
  uint32_t sel;            // __byte_perm selector: byte c = lane & 3 of a word, zero-extended

  __device__ __forceinline__ void bind(const DecodeGemmArgs& args, const DecodeView& v, int tok0, int lane, int64_t next,
                                       int64_t end, int64_t origin) {
    const uint32_t base = ring_warp_base<NT>();
    slot = ring_slot(next, origin, kSlotBytes);
    left = int(end - next - kRingAhead);
    const int64_t chunk = next + kRingAhead;
    const bool code_lane = lane < 16;
    const int r = code_lane ? lane >> 1 : (lane - 16) & 7, h = lane & 1;
    // (lanes 24..31 copy nothing: their zero-fills land in the tile's unused bytes)
    dst = base + (code_lane ? uint32_t(r * 32 + h * 16) : uint32_t((lane < 24 ? 256 : 512) + r * 4));
    rd = base + uint32_t((lane >> 2) * 32);
    sd = base + uint32_t((lane >> 2) * 4);
    src_shift = code_lane ? 5 : 9;
    sel = 0x4440u | uint32_t(lane & 3);
    const int64_t elem = chunk * 64 + (code_lane ? h * 32 : 0);
    const uint8_t* codes = static_cast<const uint8_t*>(v.a);
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
      const int tok = tok0 + nt * 8 + r;
      k_left[nt] = tok < v.m && lane < 24 ? int(int64_t(args.k) - elem) : kDeadRow;
      const int64_t t = min(tok, v.m - 1);
      src[nt] = code_lane ? codes + t * args.a_row_bytes + elem / 2
                          : args.a_scales + format::sf_offset_128x4(t, 4 * chunk, args.a_sf_cols);
    }
  }
  template <int D, bool kFixed = false>
  __device__ __forceinline__ void issue() const {
    if (D < left) {
      const uint32_t s = ring_offset<kFixed>(slot, D + kRingAhead, kSlotBytes);
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
        const int kl = k_left[nt] - D * 64;
        const uint8_t* p = src[nt] + (int64_t(D) << src_shift);
        if (src_shift == 5) {
          const uint32_t bytes = uint32_t(min(max(kl, 0) >> 1, 16));  // K % 16 == 0: 0, 8 or 16
          asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst + s + nt * kRingTileBytes), "l"(p),
                       "r"(bytes)
                       : "memory");
        } else {
          const uint32_t bytes = uint32_t(min(max(kl, 0) >> 4, 4));  // the 16-element blocks inside K
          asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(dst + s + nt * kRingTileBytes), "l"(p),
                       "r"(bytes)
                       : "memory");
        }
      }
    }
    asm volatile("cp.async.commit_group;" ::: "memory");
  }
  // An NVFP4 byte (even element in the low nibble) -> the BF16 pair e2m1 * 2^-126: the byte at bits
  // 0..7 and 12..19 puts its nibbles at 0..3 and 16..19; then e1 e0 m move up 6 bits, the sign 12.
  static __device__ __forceinline__ uint32_t code_pair(uint32_t b) {
    const uint32_t y = (b * 4097u) & 0x000F000Fu;
    return y * 64u + (y & 0x00080008u) * 4032u;  // (n << 6) + (n & 8) * (2^12 - 2^6)
  }
  // Two E4M3 scale bytes (the low 16 bits of x) -> the BF16 pair sf * 2^119, exactly.
  static __device__ __forceinline__ uint32_t scale_pair(uint32_t x) {
    uint32_t h;
    asm("{\n .reg .b16 lo;\n cvt.u16.u32 lo, %1;\n cvt.rn.f16x2.e4m3x2 %0, lo;\n}" : "=r"(h) : "r"(x));
    const __half2 hv = *reinterpret_cast<const __half2*>(&h);
    constexpr float k2p119 = 0x1p119f;
    const __nv_bfloat162 r = __floats2bfloat162_rn(__low2float(hv) * k2p119, __high2float(hv) * k2p119);
    return *reinterpret_cast<const uint32_t*>(&r);
  }
  template <int D, bool kFixed = false>
  __device__ __forceinline__ void read(uint32_t (&a)[NT][4][2]) const {
    ring_wait_oldest();
    const uint32_t s = ring_offset<kFixed>(slot, D, kSlotBytes);
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
      const uint32_t at = rd + s + nt * kRingTileBytes;
      uint32_t w[8], sw;
      asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
                   : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3])
                   : "r"(at)
                   : "memory");
      asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4 + 16];"
                   : "=r"(w[4]), "=r"(w[5]), "=r"(w[6]), "=r"(w[7])
                   : "r"(at)
                   : "memory");
      asm volatile("ld.shared.u32 %0, [%1 + 256];" : "=r"(sw) : "r"(sd + s + nt * kRingTileBytes) : "memory");
      const uint32_t sc[2] = {scale_pair(sw), scale_pair(sw >> 16)};
      using FD = FragmentDecode<T>;
#pragma unroll
      for (int st = 0; st < 4; ++st) {
        const uint32_t p0 = code_pair(__byte_perm(w[2 * st], 0u, sel));
        const uint32_t p1 = code_pair(__byte_perm(w[2 * st + 1], 0u, sel));
        a[nt][st][0] = (st & 1) ? FD::template mul<1>(p0, sc[st >> 1]) : FD::template mul<0>(p0, sc[st >> 1]);
        a[nt][st][1] = (st & 1) ? FD::template mul<1>(p1, sc[st >> 1]) : FD::template mul<0>(p1, sc[st >> 1]);
      }
    }
  }
  __device__ __forceinline__ void advance(int n) {
    slot = ring_offset<false>(slot, n, kSlotBytes);
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
      src[nt] += int64_t(n) << src_shift;
      k_left[nt] -= n * 64;
    }
    left -= n;
  }
  __device__ __forceinline__ void advance_ring() { advance(kRingSlots); }
};

template <typename T, int NT, int kRingA>
using RingOf = std::conditional_t<kRingA == kRingNvfp4, RingA4<T, NT>, std::conditional_t<kRingA == kRingRows, RingA<T, NT>, char>>;

// After the PDL wait (A comes from the previous kernel): the warp's first kRingAhead chunks.
template <typename T, int NT, int kRingA>
__device__ __forceinline__ void ring_prefill(const DecodeGemmArgs& args, const DecodeView& v, int64_t j, int64_t j_end,
                                             int tok0, int lane) {
  RingOf<T, NT, kRingA> r;
  r.bind(args, v, tok0, lane, j - kRingAhead, j_end, j);  // copies continue at chunk j (the origin)
  [&]<int... Ds>(std::integer_sequence<int, Ds...>) { (r.template issue<Ds>(), ...); }(
      std::make_integer_sequence<int, kRingAhead>{});
}

// kSmemA: row-major A in shared memory, zero-padded to whole chunks (kStageA).
template <typename T, int NT, int R, int U, bool kFragA = false, bool kSmemA = false, int kRingA = 0>
struct RowBlockStream {
  static constexpr int kActStride = kFragA ? 32 * kFragmentWordsPerLane : 32;  // words per chunk
  const uint4* codes[R];
  const uint2* scales[R];
  const unsigned int* act[NT];
  RingOf<T, NT, kRingA> ring;

  __device__ __forceinline__ void bind_weights(const DecodeGemmArgs& args, const uint4* b_codes, const uint2* b_scales,
                                               int64_t rb, int64_t j, int lane) {
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const int64_t chunk = (rb * R + r) * args.k_chunks + j;
      codes[r] = b_codes + chunk * 32 + lane;
      scales[r] = b_scales + chunk * 8 + (lane >> 2);
    }
  }
  // Token rows past m read row m - 1 instead (tok0 < m always holds here): column n of an MMA result
  // depends only on column n of B, and those columns are never stored. (kRingA zero-fills them.)
  // kRingA: chunks [j, j + kRingAhead) (within j_end) are already in flight (ring_prefill, or the
  // stream bound before this one).
  // origin (kRingA): the first chunk of the warp's stream, that of its ring_prefill.
  __device__ __forceinline__ void bind_activations(const DecodeGemmArgs& args, const DecodeView& v, int64_t j,
                                                   int tok0, int lane, int64_t j_end, int64_t origin) {
    if constexpr (kRingA != 0) {
      ring.bind(args, v, tok0, lane, j, j_end, origin);  // its next copy: chunk j + kRingAhead
    } else if constexpr (kFragA) {
      // Token tiles past the last read the last one (their MMA columns are never stored).
      const int64_t last_tile = (v.m - 1) / 8;
      const FragmentActivationShape s{last_tile + 1, args.k_chunks};
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
        const int64_t t = min(int64_t(tok0 / 8 + nt), last_tile);
        act[nt] = static_cast<const unsigned int*>(v.a) + fragment_activation_word(s, t, j, lane, 0);
      }
    } else {
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
        const int tok = min(tok0 + nt * 8 + (lane >> 2), v.m - 1);
        const T* row = static_cast<const T*>(v.a) + int64_t(tok) * args.lda + j * 64 + 2 * (lane & 3);
        act[nt] = reinterpret_cast<const unsigned int*>(row);
      }
    }
  }
  __device__ __forceinline__ void load_weights(WeightRegs<R, U>& regs) const {
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int r = 0; r < R; ++r) {
        regs.codes[u][r] = load_stream_u4(codes[r] + u * 32);
        regs.scales[u][r] = load_stream_u2(scales[r] + u * 8);
      }
  }
  // Activations of chunk u of the current group, loaded just before that chunk is computed: they
  // hit L1 (every warp of the SM reads the same rows), so holding them for a whole group only
  // costs registers (H100, session 5: 0-5 % faster at M <= 8 than a group's activations at once).
  __device__ __forceinline__ void load_activations(int u, uint32_t (&act_regs)[NT][4][2]) {
    if constexpr (kFragA) {
#pragma unroll
      for (int nt = 0; nt < NT; ++nt)
#pragma unroll
        for (int q = 0; q < 2; ++q) {
          const uint4 x = __ldg(reinterpret_cast<const uint4*>(act[nt] + u * kActStride) + q);
          act_regs[nt][2 * q][0] = x.x;
          act_regs[nt][2 * q][1] = x.y;
          act_regs[nt][2 * q + 1][0] = x.z;
          act_regs[nt][2 * q + 1][1] = x.w;
        }
    } else {
#pragma unroll
      for (int nt = 0; nt < NT; ++nt)
#pragma unroll
        for (int s = 0; s < 4; ++s) {
          act_regs[nt][s][0] = load_act_word<kSmemA>(act[nt] + u * 32 + s * 8);
          act_regs[nt][s][1] = load_act_word<kSmemA>(act[nt] + u * 32 + s * 8 + 4);
        }
    }
  }
  // Computes the group whose weights are in w, chunk by chunk (u a compile-time constant: the ring
  // takes it as a template argument).
  // kPhase >= 0 (kRingA, rolling loop): the group is chunks kPhase.. of a ring whose cursor sits at
  // slot 0 (RingA's kFixed); -1: the cursor is at the group's first chunk.
  template <int kPhase = -1>
  __device__ __forceinline__ void compute(const WeightRegs<R, U>& w, float (&acc)[R][NT][4]) {
    [&]<int... Us>(std::integer_sequence<int, Us...>) { (compute_chunk_at<Us, kPhase>(w, acc), ...); }(
        std::make_integer_sequence<int, U>{});
  }
  // Chunk u of the group. kRingA: its fragments from the ring, then the copy of the chunk kRingAhead
  // after it into the slot of the chunk before it.
  template <int u, int kPhase = -1>
  __device__ __forceinline__ void compute_chunk_at(const WeightRegs<R, U>& w, float (&acc)[R][NT][4]) {
    uint32_t act_regs[NT][4][2];
    if constexpr (kRingA != 0) {
      constexpr bool kFixed = kPhase >= 0;
      constexpr int D = kFixed ? kPhase + u : u;
      ring.template read<D, kFixed>(act_regs);
      ring.template issue<D, kFixed>();
    } else {
      load_activations(u, act_regs);
    }
    compute_chunk<T, NT, R>(w.codes[u], w.scales[u], act_regs, acc);
  }
  __device__ __forceinline__ void advance_weights() {
#pragma unroll
    for (int r = 0; r < R; ++r) {
      codes[r] += U * 32;
      scales[r] += U * 8;
    }
  }
  // The next U chunks' weights into w, and the weight cursors past them (rolling groups).
  __device__ __forceinline__ void load_next_weights(WeightRegs<R, U>& w) {
    load_weights(w);
    advance_weights();
  }
  __device__ __forceinline__ void advance_activations() {
    if constexpr (kRingA != 0) {
      ring.advance(U);
    } else {
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) act[nt] += U * kActStride;
    }
  }
  __device__ __forceinline__ void advance() {
    advance_weights();
    advance_activations();
  }
};

// Chunks [0, full_chunks(k)) lie entirely inside K.
__device__ __forceinline__ int64_t full_chunks(const DecodeGemmArgs& args) { return args.k / 64; }

// Streams the groups of G chunks of row block rb from chunk j while they end by j_stop, without
// checks (RowBlockStream); returns the first chunk not streamed.
template <typename T, int NT, int R, int G, bool kFragA, bool kSmemA = false, int kRingA = 0>
__device__ __forceinline__ int64_t stream_unchecked(const DecodeGemmArgs& args, const DecodeView& v, int64_t rb,
                                                    int64_t j, int64_t j_stop, int tok0, int lane,
                                                    float (&acc)[R][NT][4], int64_t origin) {
  if (j + G > j_stop) return j;
  RowBlockStream<T, NT, R, G, kFragA, kSmemA, kRingA> st;
  st.bind_weights(args, v.b_codes, v.b_scales, rb, j, lane);
  st.bind_activations(args, v, j, tok0, lane, j_stop, origin);
  for (; j + G <= j_stop; j += G) {
    WeightRegs<R, G> w;
    st.load_weights(w);
    st.compute(w, acc);
    st.advance();
  }
  return j;
}

// Accumulates chunks [j, j_end) of row block rb: unchecked full groups, then the checked remainder.
// kFragA: the arranged activations, like the prepacked weights, are zero-padded to whole chunks, so
// every chunk is read unchecked; the last partial group goes chunk by chunk.
// kSmemA (A staged in shared memory, zero-padded to whole chunks): the same.
// kRingA (ring of row-major A, zero-filled past K): the same.
// origin (kRingA): the first chunk of the warp's stream (its ring_prefill); j by default.
template <typename T, int NT, int R, int U, bool kFragA = false, bool kSmemA = false, int kRingA = 0>
__device__ __forceinline__ void stream_row_block(const DecodeGemmArgs& args, const DecodeView& v, int64_t rb,
                                                 int64_t j, int64_t j_end, int tok0, int lane,
                                                 float (&acc)[R][NT][4], int64_t origin = -1) {
  if (origin < 0) origin = j;
  if constexpr (kFragA || kSmemA || kRingA) {
    j = stream_unchecked<T, NT, R, U, kFragA, kSmemA, kRingA>(args, v, rb, j, j_end, tok0, lane, acc, origin);
    stream_unchecked<T, NT, R, 1, kFragA, kSmemA, kRingA>(args, v, rb, j, j_end, tok0, lane, acc, origin);
  } else {
    j = stream_unchecked<T, NT, R, U, false>(args, v, rb, j, min(j_end, full_chunks(args)), tok0, lane, acc, origin);
    for (; j < j_end; j += U) {
      ChunkRegs<NT, R, U> regs;
      load_group<T, NT, R, U>(args, v, regs, rb, j, j_end, tok0, lane);
      compute_group<T, NT, R, U>(regs, acc);
    }
  }
}

// Rolling load groups (Tactic::roll): a load group of U chunks is P parts of H = U/P (roll_parts),
// and each part is requested again as soon as it has been computed, so that U - H chunks per row
// tile stay in flight while a part is decoded (the plain loop has none in flight during its
// compute), in the registers of one U-chunk group. `w` holds chunks [j, j + U), already requested
// (st's weight cursor at j + U, its activation cursor at j); streams the full groups before j_stop
// and returns the first chunk not streamed. H100 (docs/PERF.md, session 15): faster where each warp's stream is short
// (down / o / gate_up / 8192x8192 at 6..8 tokens: 3-11 %), slower on the longest streams.
template <typename T, int NT, int R, int H, int P, bool kFragA, bool kSmemA, int kRingA>
__device__ __forceinline__ int64_t stream_rolling(RowBlockStream<T, NT, R, H, kFragA, kSmemA, kRingA>& st,
                                                  WeightRegs<R, H> (&w)[P],
                                                  int64_t j, int64_t j_stop, float (&acc)[R][NT][4]) {
  if constexpr (kRingA != 0 && P * H == kRingSlots) {
    // One iteration is one turn of the ring, which st (bound at its origin) starts at slot 0: fixed
    // slots, the cursors moved once per turn.
    for (; j + 2 * P * H <= j_stop; j += P * H) {
      [&]<int... Hs>(std::integer_sequence<int, Hs...>) {
        ((st.template compute<Hs * H>(w[Hs], acc), st.load_next_weights(w[Hs])), ...);
      }(std::make_integer_sequence<int, P>{});
      st.ring.advance_ring();
    }
    [&]<int... Hs>(std::integer_sequence<int, Hs...>) { (st.template compute<Hs * H>(w[Hs], acc), ...); }(
        std::make_integer_sequence<int, P>{});
    return j + P * H;
  } else {
    for (; j + 2 * P * H <= j_stop; j += P * H) {
#pragma unroll
      for (int h = 0; h < P; ++h) {
        st.compute(w[h], acc);
        st.advance_activations();
        st.load_next_weights(w[h]);
      }
    }
#pragma unroll
    for (int h = 0; h < P; ++h) {
      st.compute(w[h], acc);
      st.advance_activations();
    }
    return j + P * H;
  }
}

// Parts of a rolling load group: halves, except single chunks for the 16-token 16-row tile. H100
// session 15 (docs/PERF.md), parts = U vs halves, graph us: that tile (decode_dpfr_m16_r16_u4) on o
// M = 12 / 16 -6 / -3 %, qkv and 8192x8192 -1.5..-2 % (forced); every other rolling tile within
// +-1 %, except the 8-token tiles on 8192x28672 (+1..2 %). The 24-token 16-row tile (session 41) takes
// single chunks as well (unmeasured against halves).
template <int NT, int R, int U>
constexpr int roll_parts() { return NT >= 2 && R == 1 ? U : U < 2 ? U : 2; }

// stream_row_block with rolling load groups: requests the first U chunks, then stream_rolling, then
// the rest (stream_row_block). For the grouped dp kernel, which reads nothing before its PDL wait.
template <typename T, int NT, int R, int U, bool kFragA>
__device__ __forceinline__ void stream_row_block_rolling(const DecodeGemmArgs& args, const DecodeView& v, int64_t rb,
                                                         int64_t j, int64_t j_end, int tok0, int lane,
                                                         float (&acc)[R][NT][4]) {
  constexpr int P = roll_parts<NT, R, U>(), H = U / P;
  const int64_t j_stop = kFragA ? j_end : min(j_end, full_chunks(args));
  if (j + U <= j_stop) {
    RowBlockStream<T, NT, R, H, kFragA> st;
    WeightRegs<R, H> w[P];
    st.bind_weights(args, v.b_codes, v.b_scales, rb, j, lane);
#pragma unroll
    for (int h = 0; h < P; ++h) {
      st.load_next_weights(w[h]);
    }
    st.bind_activations(args, v, j, tok0, lane, j_stop, j);
    j = stream_rolling(st, w, j, j_stop, acc);
  }
  stream_row_block<T, NT, R, U, kFragA>(args, v, rb, j, j_end, tok0, lane, acc);
}

// Writes D for row block rb from the accumulator fragments (already summed).
// kAShift: the decoded activations are the true ones times 2^-kAShift (RingA4: kRingA4Shift).
template <typename OutT, int NT, int R, int kAShift = 0>
__device__ __forceinline__ void store_block(const DecodeGemmArgs& args, const DecodeView& v, const float (&acc)[R][NT][4],
                                            int64_t rb, int tok0, int lane) {
  constexpr float kMul = kWeightDecodeScale * float(1 << kAShift);
  const float alpha = v.alpha;
  const int g = lane >> 2, c = lane & 3;
  OutT* d = static_cast<OutT*>(v.d);
  const OutT* bias = static_cast<const OutT*>(args.bias);
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int64_t row = (rb * R + r) * 16 + g + 8 * h;
      if (row >= args.n) continue;
      const float b = bias ? from_out<OutT>(bias[row]) : 0.0f;
#pragma unroll
      for (int nt = 0; nt < NT; ++nt)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int tok = tok0 + nt * 8 + 2 * c + e;
          if (tok < v.m) d[int64_t(tok) * args.ldd + row] = to_out<OutT>((acc[r][nt][2 * h + e] * kMul) * alpha + b);
        }
    }
}

// T: MMA operand type (bf16 or half). OutT: output type. NT: 8-token MMA tiles; R: 16-row tiles
// per row block; U: chunks per load group. G: grouped mode (row blocks of all slots in one list).
template <typename T, typename OutT, int NT, int R, int U, bool G = false>
__global__ void __launch_bounds__(kDecodeWarps * 32, NT * R >= 4 ? 1 : 2)
    decode_gemm_kernel(const DecodeGemmArgs args) {
  constexpr int kAcc = R * NT * 4;
  const int lane = threadIdx.x & 31;
  const int64_t all_row_blocks = G ? args.slots * args.row_blocks : args.row_blocks;
  const int64_t total = all_row_blocks * args.k_chunks;
  // No more warps than units, so that every warp's range is non-empty (the fix-up counts arrivals).
  const int64_t warps = min(int64_t(gridDim.x) * kDecodeWarps, total);
  const int64_t gw = int64_t(blockIdx.x) * kDecodeWarps + (threadIdx.x >> 5);
  // Programmatic dependent launch (no-ops without it): nothing is read before the wait.
  grid_launch_dependents();
  grid_dependency_wait();
  if (gw >= warps) return;
  const int tok0 = blockIdx.y * NT * 8;
  const int64_t begin = range_begin(total, warps, gw), end = range_begin(total, warps, gw + 1);
  DecodeView view{};
  if constexpr (!G) view = dense_view(args);
  int64_t view_slot = -1;

  for (int64_t pos = begin; pos < end;) {
    const int64_t grb = pos / args.k_chunks;  // row block in the list of all slots
    const int64_t block_first = grb * args.k_chunks;
    const int64_t seg_end = min(end, block_first + args.k_chunks);
    const int64_t j_end = seg_end - block_first;
    int64_t rb = grb;
    if constexpr (G) {
      const int64_t slot = grb / args.row_blocks;
      rb = grb - slot * args.row_blocks;
      if (slot != view_slot) {
        view = group_view<T, OutT>(args, slot);
        view_slot = slot;
      }
      // Inactive slot, or no tokens of this group in this token tile: every warp sharing the row
      // block sees the same and skips it, so the fix-up below never waits for it.
      if (tok0 >= view.m) {
        pos = seg_end;
        continue;
      }
    }

    float acc[R][NT][4];
    zero_acc(acc);

    stream_row_block<T, NT, R, U>(args, view, rb, pos - block_first, j_end, tok0, lane, acc);

    const bool whole = pos == block_first && seg_end == block_first + args.k_chunks;
    if (whole) {
      store_block<OutT, NT, R>(args, view, acc, rb, tok0, lane);
    } else {
      // Partial row block: publish, and let the last of its warps finish it in warp order.
      const int slot = pos == begin ? 0 : 1;
      // [kAcc][32 lanes]: a warp's store of one accumulator index is one 128-byte line.
      float* mine = args.partials + ((int64_t(blockIdx.y) * warps + gw) * 2 + slot) * 32 * kAcc + lane;
#pragma unroll
      for (int r = 0; r < R; ++r)
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
#pragma unroll
          for (int i = 0; i < 4; ++i) __stcg(mine + ((r * NT + nt) * 4 + i) * 32, acc[r][nt][i]);
      __syncwarp();
      const int64_t first_warp = worker_of(total, warps, block_first);
      const int64_t last_warp = worker_of(total, warps, block_first + args.k_chunks - 1);
      int* counter = args.counters + int64_t(blockIdx.y) * all_row_blocks + grb;
      int arrived = 0;
      if (lane == 0) arrived = arrive_acq_rel(counter);  // stream_k.cuh
      arrived = __shfl_sync(0xffffffffu, arrived, 0);
      if (arrived == int(last_warp - first_warp)) {
        __syncwarp();
        zero_acc(acc);
        for (int64_t w = first_warp; w <= last_warp; ++w) {
          const int s = partial_slot(total, warps, w, block_first);
          const float* p = args.partials + ((int64_t(blockIdx.y) * warps + w) * 2 + s) * 32 * kAcc + lane;
#pragma unroll
          for (int r = 0; r < R; ++r)
#pragma unroll
            for (int nt = 0; nt < NT; ++nt)
#pragma unroll
              for (int i = 0; i < 4; ++i) acc[r][nt][i] += __ldcg(p + ((r * NT + nt) * 4 + i) * 32);
        }
        store_block<OutT, NT, R>(args, view, acc, rb, tok0, lane);
        if (lane == 0) *counter = 0;  // ready for the next launch
      }
    }
    pos = seg_end;
  }
}

// kStageA (W4A4, M <= 2): NVFP4 A (args.a / a_scales) decoded exactly into the CTA's shared memory as
// [m][lda] 16-bit values (lda = whole chunks + 8: the bank offset; the blocks past K are zero), the
// same values as stage_activations, without a kernel of its own between the previous GEMM and this
// one. Each warp reads A only inside its own K slice (chunks [js, je) of the kw slices), so the warps
// that share slice kidx (one per row block of the CTA, `sub` = 0..per_cta-1) decode just that slice,
// a lane's blocks kStageBatch at a time with every load issued before any decode, and meet at the
// slice's named barrier (1 + kidx; one warp: a warp barrier) — no CTA-wide barrier. A block costs
// ~60 instructions with decode_nvfp4x8 (~290 with a float decode per pair: that version lost to the
// staging kernel above K = 4096, session 26 run 1); taken for K <= 16384 (decode_host.cu).
constexpr int kStageBatch = 4;
template <typename T>
__device__ __forceinline__ DecodeView stage_a_slice(const DecodeGemmArgs& args, T* sa, int js, int je, int kidx,
                                                    int sub, int per_cta, int lane) {
  const int blocks = args.k / 16;  // 16-element blocks inside K
  const int slice_blocks = 4 * (je - js), first = 4 * js;
  const int total = args.m * slice_blocks;  // (row, block) items; m <= 2
  const int stride = 32 * per_cta;
  const uint8_t* codes = static_cast<const uint8_t*>(args.a);
  for (int b0 = sub * 32 + lane; b0 < total; b0 += kStageBatch * stride) {
    uint2 c[kStageBatch];
    uint8_t sfb[kStageBatch];
    int dst[kStageBatch];  // element offset of the block in sa; -1: past the slice
#pragma unroll
    for (int i = 0; i < kStageBatch; ++i) {
      const int b = b0 + i * stride;
      const int row = b >= slice_blocks ? 1 : 0, kb = first + b - row * slice_blocks;
      dst[i] = b < total ? row * int(args.lda) + kb * 16 : -1;
      c[i] = make_uint2(0u, 0u);
      sfb[i] = 0;
      if (b < total && kb < blocks) {
        c[i] = __ldg(reinterpret_cast<const uint2*>(codes + int64_t(row) * args.a_row_bytes + kb * 8));
        sfb[i] = __ldg(args.a_scales + format::sf_offset_128x4(row, kb, args.a_sf_cols));
      }
    }
#pragma unroll
    for (int i = 0; i < kStageBatch; ++i) {
      if (dst[i] < 0) break;
      store_nvfp4x16<T>(c[i], sfb[i], sa + dst[i]);
    }
  }
  if (per_cta == 1) {
    __syncwarp();
  } else {
    asm volatile("bar.sync %0, %1;" ::"r"(1 + kidx), "r"(32 * per_cta) : "memory");
  }
  DecodeView v = dense_view(args);
  v.a = sa;
  return v;
}

// Data-parallel variant ("dp"): each CTA takes 8 / kw consecutive row blocks (of one slot in
// grouped mode) of one token tile; each row block is computed by kw warps (args.dp_kw) that split
// its K into equal chunk ranges, and their FP32 partial sums are added in warp order through
// shared memory. kw is chosen so every warp streams several load groups (long K: 8 warps per row
// block; K = 512: one warp per row block and no reduction). No workspace, no counters, no atomics:
// for layers with enough row blocks to fill the GPU this removes the stream-K fix-up and its memset
// from the critical path. kReady (grouped only): the group list is final before the launch
// (GroupedGemmParams::groups_ready), so the view and the first weights are read before the wait; a
// separate instantiation at 2 CTAs/SM (its first load group stays live across the wait: at 80
// registers it spilled and lost to the plain kernel; H100 session 5), so that the other grouped
// kernels keep their register allocation.
// kFragA (dense only): A is in B-fragment order (fragment_activations.h, arranged by the host
// before the launch; args.a points to it). Its tiles of up to 16 tokens are bounded to 2 CTAs/SM
// (128 registers), where the 4-chunk 16-token configurations still fit without spills (with kRingA the
// rolling 16-token 32-row tile spills 4 bytes, 20 bytes of reloads; the session-17 timings include it).
// The rolling 24-token 16-row tile gets 2 CTAs/SM through kRoll's bound (NT * R = 3 < 4 anyway); with
// kRingA it spills 76 bytes (196 bytes of reloads) outside its chunk loops (ptxas -v, session 41).
// kRingA (dense, on the fragment-order tiles; no arrangement kernel): kRingRows, W4A16, row-major A
// through each warp's ring of shared memory (RingA); kRingNvfp4, W4A4 on the rolling 8-token 32-row
// tile, NVFP4 A through the same rings, decoded by the warps (RingA4). ring_bytes_per_warp<NT>() x 8
// of dynamic shared memory either way.
template <typename T, typename OutT, int NT, int R, int U, bool G = false, bool kReady = false, bool kFragA = false,
          bool kRoll = false, bool kStageA = false, int kRingA = 0>
__global__ void __launch_bounds__(kDecodeWarps * 32, kReady || ((kFragA || kRingA) && NT <= 2) || (kRoll && R > 1)
                                                         ? 2
                                                         : decode_min_ctas_per_sm<NT, R, G>())
    decode_dp_kernel(const DecodeGemmArgs args) {
  static_assert(!(G && kFragA), "grouped mode reads row-major activations");
  static_assert(!kStageA || (!G && !kFragA), "kStageA: dense mode, row-major A");
  static_assert(!kRingA || (!G && !kFragA && !kStageA), "kRingA: dense mode, A through the rings");
  // Activations zero-padded to whole chunks: every chunk is read unchecked.
  constexpr bool kPadded = kFragA || kStageA || kRingA;
  constexpr int kAcc = R * NT * 4;
  // The warps' FP32 partials for the reduction over K slices: a static buffer, or, where the warps' rings
  // (kRingRows) fit two CTAs per SM but not with that buffer, each warp's own ring, idle by then (the
  // 32-row 24-token tile: 96 KB + 24 KB). Only there: on every ring tile it cost o's and qkv's W4A16 3..8-token
  // tiles 2-4 % (H100, docs/PERF.md session 42 run 1: o M = 3..8 5.03..5.14 -> 5.19..5.35 us).
  constexpr int kRingCtaBytes = kDecodeWarps * ring_bytes_per_warp<NT>();
  constexpr bool kPartialInRing = kRingA == kRingRows && kRingCtaBytes <= kTwoCtaSmemPerCta &&
                                  kRingCtaBytes + kDecodeWarps * kAcc * 32 * 4 > kTwoCtaSmemPerCta;
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  __shared__ float partial_static[kPartialInRing ? 1 : kDecodeWarps][kPartialInRing ? 1 : kAcc][32];
  auto partial_at = [&](int w, int i) -> float& {
    if constexpr (kPartialInRing) {
      extern __shared__ __align__(128) uint8_t ring_smem[];
      return reinterpret_cast<float*>(ring_smem + w * ring_bytes_per_warp<NT>())[i * 32 + lane];
    } else {
      return partial_static[w][i][lane];
    }
  };
  static_assert(!kPartialInRing || kAcc * 32 * 4 <= ring_bytes_per_warp<NT>(), "partials fit a warp's ring");
  const int kw = args.dp_kw;              // warps per row block: 1, 2, 4 or 8
  const int per_cta = kDecodeWarps / kw;  // row blocks per CTA
  const int sub = warp / kw, kidx = warp - sub * kw;
  const int tok0 = blockIdx.y * NT * 8;
  const int64_t ctas_per_slot = (args.row_blocks + per_cta - 1) / per_cta;
  int64_t cta = blockIdx.x;
  DecodeView view{};
  if constexpr (G) {
    // Programmatic dependent launch (no-ops without it): let the next kernel launch at once (its
    // early launch is worth up to 14 % at MoE T = 16, docs/PERF.md session 5). The activations come
    // from the previous kernel; the group list (offsets, active) too, unless kReady: then the
    // group view, and with it the first weights, are read before the wait.
    grid_launch_dependents();
    const int64_t slot = cta / ctas_per_slot;
    cta -= slot * ctas_per_slot;
    if constexpr (!kReady) grid_dependency_wait();
    view = group_view<T, OutT>(args, slot);
    if (tok0 >= view.m) {  // the whole CTA: inactive slot, or no rows in this token tile
      // Still wait for the previous kernel: a grid that never waits may complete before it, and the
      // next kernel's wait covers only this grid (with no active slot at all, none would wait).
      if constexpr (kReady) grid_dependency_wait();
      return;
    }
  }
  const int64_t rb = cta * per_cta + sub;
  const bool live = rb < args.row_blocks;  // warps of a row block past the end only join the barrier
  const int64_t j_begin = args.k_chunks * kidx / kw;
  // kStageA: the end of the warp's K slice (also past the last row block), computed before the PDL
  // wait; the staging used to repeat both 64-bit divisions after it, on its critical path (H100 W4A4
  // M = 1..2 0..-2.6 %, docs/PERF.md session 31). The other kernels keep their code: computing it
  // apart made ptxas schedule their prologue differently, and W4A16 M = 1..2 measured up to +2.3 %.
  const int64_t j_slice_end = kStageA ? args.k_chunks * (kidx + 1) / kw : 0;
  const int64_t j_end = !live ? j_begin : kStageA ? j_slice_end : args.k_chunks * (kidx + 1) / kw;
  // Dense mode, after the PDL wait: the problem's view (kStageA: with A decoded into shared memory,
  // the warp's K slice whether or not its row block is live: the other warps of the slice count on
  // it at the slice's barrier).
  auto wait_view = [&](const DecodeGemmArgs& x) {
    if constexpr (kStageA) {
      extern __shared__ __align__(16) uint8_t staged_a[];
      return stage_a_slice<T>(x, reinterpret_cast<T*>(staged_a), int(j_begin), int(j_slice_end), kidx, sub,
                              per_cta, lane);
    } else {
      return dense_view(x);
    }
  };

  float acc[R][NT][4];
  zero_acc(acc);
  if constexpr (!G || kReady) {
    // Programmatic dependent launch (GemmParams::enable_pdl; no-ops otherwise): let the next kernel
    // launch at once and request the first group of weights (not written by the previous kernel:
    // API contract) before waiting for it; activations, alpha and D after (grouped: alpha is an
    // input of the call, read with the view).
    if constexpr (!G) grid_launch_dependents();
    int64_t j = j_begin;
    if constexpr (kRoll) {
      static_assert(!G && U % 2 == 0, "rolling load groups: not with kReady; an even number of chunks per group");
      constexpr int P = roll_parts<NT, R, U>(), H = U / P;
      const int64_t j_stop = kPadded ? j_end : min(j_end, full_chunks(args));  // unchecked full groups
      const bool early = j + U <= j_stop;
      RowBlockStream<T, NT, R, H, kFragA, kStageA, kRingA> st;
      WeightRegs<R, H> w[P];
      if (early) {
        st.bind_weights(args, args.b_codes, args.b_scales, rb, j, lane);
#pragma unroll
        for (int h = 0; h < P; ++h) {
          st.load_next_weights(w[h]);
        }
        prefetch_after_first_group<R, U>(args, rb, j, j_end, lane);
      }
      grid_dependency_wait();
      view = wait_view(args);
      if constexpr (kRingA != 0) ring_prefill<T, NT, kRingA>(args, view, j, j_end, tok0, lane);
      if (early) {
        st.bind_activations(args, view, j, tok0, lane, j_stop, j_begin);  // at its origin: slot 0
        j = stream_rolling(st, w, j, j_stop, acc);
      }
      stream_row_block<T, NT, R, U, kFragA, kStageA, kRingA>(args, view, rb, j, j_end, tok0, lane, acc, j_begin);
    } else {
      const bool early = j + U <= (kPadded ? j_end : min(j_end, full_chunks(args)));
      RowBlockStream<T, NT, R, U, kFragA, kStageA, kRingA> st;
      WeightRegs<R, U> w;
      if (early) {
        st.bind_weights(args, G ? view.b_codes : args.b_codes, G ? view.b_scales : args.b_scales, rb, j, lane);
        st.load_weights(w);
        if constexpr (!G) prefetch_after_first_group<R, U>(args, rb, j, j_end, lane);
      }
      grid_dependency_wait();
      if constexpr (!G) view = wait_view(args);
      if constexpr (kRingA != 0) ring_prefill<T, NT, kRingA>(args, view, j, j_end, tok0, lane);
      if (early) {
        st.bind_activations(args, view, j, tok0, lane, j_end, j_begin);
        st.compute(w, acc);
        j += U;
      }
      stream_row_block<T, NT, R, U, kFragA, kStageA, kRingA>(args, view, rb, j, j_end, tok0, lane, acc, j_begin);
    }
  } else if constexpr (kRoll) {
    stream_row_block_rolling<T, NT, R, U, false>(args, view, rb, j_begin, j_end, tok0, lane, acc);
  } else {
    stream_row_block<T, NT, R, U>(args, view, rb, j_begin, j_end, tok0, lane, acc);
  }
  if (kw > 1) {
    if (kidx > 0) {
      // (kPartialInRing: no copy into the ring may still be in flight; the warp's reads of it are
      // ordered before these writes by program order.)
      if constexpr (kPartialInRing) asm volatile("cp.async.wait_all;" ::: "memory");
#pragma unroll
      for (int r = 0; r < R; ++r)
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
#pragma unroll
          for (int i = 0; i < 4; ++i) partial_at(warp, (r * NT + nt) * 4 + i) = acc[r][nt][i];
    }
    __syncthreads();
    if (kidx == 0) {
      for (int w = warp + 1; w < warp + kw; ++w)
#pragma unroll
        for (int r = 0; r < R; ++r)
#pragma unroll
          for (int nt = 0; nt < NT; ++nt)
#pragma unroll
            for (int i = 0; i < 4; ++i) acc[r][nt][i] += partial_at(w, (r * NT + nt) * 4 + i);
    }
  }
  if (kidx == 0 && live) store_block<OutT, NT, R, kRingA == kRingNvfp4 ? kRingA4Shift : 0>(args, view, acc, rb, tok0, lane);
}

// Grouped mode, one warp per row block (the dp kernel with kw = 1), persistent and balanced per
// warp: the grid is (at most) one resident wave; warp w of the grid (numbered CTA-fastest, so that
// consecutive units land on different SMs) takes the units (active slot, row block) w, w + warps,
// ... of the list the previous kernel published. The dp kernel hands out 8 row blocks per CTA, so
// with few active groups some SMs stream two CTAs' worth and others one; here every SM gets the
// same number of row blocks +- 1 per warp slot.
template <typename T, int NT, int R, int U>
__global__ void __launch_bounds__(kDecodeWarps * 32, decode_min_ctas_per_sm<NT, R, true>())
    decode_dp_balanced_kernel(const DecodeGemmArgs args) {
  const int lane = threadIdx.x & 31;
  grid_launch_dependents();
  grid_dependency_wait();
  const int64_t warps = int64_t(gridDim.x) * kDecodeWarps;
  const int tok0 = blockIdx.y * NT * 8;
  const int64_t units = min(int64_t(__ldg(args.num_active)), args.slots) * args.row_blocks;
  DecodeView view{};
  int64_t view_slot = -1;
  for (int64_t u = int64_t(threadIdx.x >> 5) * gridDim.x + blockIdx.x; u < units; u += warps) {
    const int64_t slot = u / args.row_blocks, rb = u - slot * args.row_blocks;
    if (slot != view_slot) {
      view = group_view<T, T>(args, slot);
      view_slot = slot;
    }
    if (tok0 >= view.m) continue;
    float acc[R][NT][4];
    zero_acc(acc);
    stream_row_block<T, NT, R, U>(args, view, rb, 0, args.k_chunks, tok0, lane, acc);
    store_block<T, NT, R>(args, view, acc, rb, tok0, lane);
  }
}

}  // namespace fp4kit::gemm_impl::sm90
