// The fused-decode MoE kernel: FC1 + SwiGLU, FC2 and finalize of a small batch in ONE persistent
// launch after the fused permutation (path MoePath::kFusedDecode; overview in docs/MOE.md).
//
// At small T every active expert has a few rows, so both GEMMs are streams of expert weights (the
// decode family's job). As separate launches (FC1, SwiGLU, FC2, finalize) HBM idles at every
// boundary: a grid's tail, the SwiGLU and finalize kernels' latency chains, the next grid's ramp.
// Here a warp takes work units in a fixed global order, FC1 units of every active expert first:
//   FC1 unit (slot s, i)   rows [16i, 16i + 16) of up and of gate (the two row tiles of one warp's
//                          stream, K = H) against every row of expert active[s]; the epilogue
//                          applies alpha1, rounds, and writes h = r16(silu(gate) * up) (W4A4: then
//                          NVFP4-quantized with fc2_act_global and decoded) -> h [rows, I]. With
//                          few units, each is split along K into fc1_parts warps whose FP32
//                          partials the last to arrive adds in part order before the epilogue
//   FC2 unit (slot s, rb)  rows [32 rb, 32 rb + 32) of W2 (K = I) against h of expert active[s],
//                          after every FC1 unit of s is done (per-slot counter, acquire); -> F2
//                          rows, written over the expert's own A1 rows (dead once its FC1 is done).
//                          With K = I of at most 4 chunks, 64 rows (two 32-row blocks in turn)
//   finalize               the last FC2 unit of row block rb (per-row-block counter) sums, for
//                          every token, its k slots' F2 rows in j order from +0 (as finalize_kernel)
// Units are handed out in order (the first by warp id, then from an atomic counter), so a unit
// only waits on units handed out before it: no deadlock whatever the residency. Which warp
// computes a unit does not change its result (each unit is one warp's full-K sum, or its parts'
// sums added in part order), and the finalize order is fixed: bit-identical runs. The counters are
// zeroed by the permutation kernel.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <type_traits>

#include "common/cuda_check.h"
#include "common/launch_kernel.h"
#include "gemm/prepacked_layout.h"
#include "gemm/sm90/decode_kernel.cuh"
#include "moe/fused_decode.h"
#include "moe/moe_device.cuh"

namespace fp4kit::moe_impl {
namespace {

using gemm_impl::sm90::compute_chunk;
using gemm_impl::sm90::load_stream_u2;
using gemm_impl::sm90::load_stream_u4;
using gemm_impl::sm90::zero_acc;

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kU = 4;  // chunks of weights held per warp (two pairs, software-pipelined)

__device__ __forceinline__ int ld_acquire(const int* p) {
  int v;
  asm volatile("ld.acquire.gpu.global.s32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// The weights in flight for one warp: kU chunks of two row tiles, as two pairs of chunks. One set
// per warp, shared by both unit kinds.
struct GroupRegs {
  uint4 wc[kU][2];
  uint2 ws[kU][2];
};

// One warp's stream over two row tiles (codes c[r], scales s[r] at the current chunk) against one
// 8-token tile of row-major activations (act: this lane's word of the current chunk).
struct PairStream {
  const uint4* c[2];
  const uint2* s[2];
  const unsigned* act;

  // Requests chunks [off, off + n) (from the current one) into slots [slot, slot + n) of w.
  __device__ __forceinline__ void load(GroupRegs& w, int slot, int off, int n) const {
#pragma unroll
    for (int u = 0; u < 2; ++u)
      if (u < n)
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          w.wc[slot + u][r] = load_stream_u4(c[r] + (off + u) * 32);
          w.ws[slot + u][r] = load_stream_u2(s[r] + (off + u) * 8);
        }
  }
  // Accumulates the n chunks in slots [slot, slot + n) (the current chunks) and moves past them.
  // kCoherent: the activations were written during this launch (FC2 reads h): L2 loads instead of
  // the read-only path.
  template <typename T, bool kCoherent>
  __device__ __forceinline__ void compute(const GroupRegs& w, int slot, int n, float (&acc)[2][1][4]) {
#pragma unroll
    for (int u = 0; u < 2; ++u)
      if (u < n) {
        uint32_t a[1][4][2];
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          if constexpr (kCoherent) {
            a[0][q][0] = __ldcg(act + u * 32 + q * 8);
            a[0][q][1] = __ldcg(act + u * 32 + q * 8 + 4);
          } else {
            a[0][q][0] = __ldg(act + u * 32 + q * 8);
            a[0][q][1] = __ldg(act + u * 32 + q * 8 + 4);
          }
        }
        compute_chunk<T, 1, 2>(w.wc[slot + u], w.ws[slot + u], a, acc);
      }
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      c[r] += n * 32;
      s[r] += n * 8;
    }
    act += n * 32;
  }
  // Streams chunks [0, kc), software-pipelined over pairs of chunks: the two pairs of w alternate,
  // the next pair requested before the current one is computed (H100: 1-7 % faster than one
  // 4-chunk group at a time, docs/PERF.md session 9). `pre`: the caller already requested the
  // first pair (load(w, 0, 0, 2)).
  template <typename T, bool kCoherent>
  __device__ __forceinline__ void run(GroupRegs& w, int kc, bool pre, float (&acc)[2][1][4]) {
    int j = 0;
    if (kc >= 2) {
      if (!pre) load(w, 0, 0, 2);
      while (true) {
        if (j + 4 <= kc) load(w, 2, 2, 2);
        compute<T, kCoherent>(w, 0, 2, acc);
        j += 2;
        if (j + 2 > kc) break;
        if (j + 4 <= kc) load(w, 0, 2, 2);
        compute<T, kCoherent>(w, 2, 2, acc);
        j += 2;
        if (j + 2 > kc) break;
      }
    }
    if (j < kc) {  // an odd last chunk
      load(w, 0, 0, 1);
      compute<T, kCoherent>(w, 0, 1, acc);
    }
  }
};

// The row of an 8-token tile that lane reads: tok0 + lane / 4, rows past m reading row m - 1 (their
// MMA columns are never stored).
__device__ __forceinline__ int tile_row(int m, int tok0, int lane) { return min(tok0 + (lane >> 2), m - 1); }

// This lane's word of 16-bit activation row `row` (row-major, ld elements per row).
template <typename T>
__device__ __forceinline__ const unsigned* row_words(const void* base, int64_t row, int64_t ld, int lane) {
  return reinterpret_cast<const unsigned*>(static_cast<const T*>(base) + row * ld + 2 * (lane & 3));
}

template <typename T>
__device__ __forceinline__ const unsigned* act_words(const void* base, int64_t row0, int64_t ld, int m, int tok0,
                                                     int lane) {
  return row_words<T>(base, row0 + tile_row(m, tok0, lane), ld, lane);
}

struct Group {
  int e;     // local expert
  int row0;  // first row
  int m;     // rows
};

// FC1's activations for the tile at tok0: A1 rows, or (row_token set: W4A16 without the gather) the
// input rows of those rows' tokens.
template <typename T>
__device__ __forceinline__ const unsigned* fc1_act_words(const FusedDecodeArgs& a, const Group& g, int tok0,
                                                         int lane) {
  const int row = g.row0 + tile_row(g.m, tok0, lane);
  return row_words<T>(a.a1, a.row_token ? __ldg(a.row_token + row) : row, a.hidden, lane);
}

__device__ __forceinline__ Group group_of(const FusedDecodeArgs& a, int s) {
  Group g;
  g.e = gemm_impl::sm90::ld_published(a.active + s);  // (the first unit's: before the PDL wait)
  g.row0 = gemm_impl::sm90::ld_published(a.offsets + g.e);
  g.m = gemm_impl::sm90::ld_published(a.offsets + g.e + 1) - g.row0;
  return g;
}

// Binds the FC1 stream of unit (expert e, i): up tile i and gate tile I/16 + i.
__device__ __forceinline__ void bind_fc1(const FusedDecodeArgs& a, PairStream& st, int e, int i, int j0, int lane) {
  const int64_t kc = a.hidden / 64;
  const uint8_t* base = a.w1 + int64_t(e) * a.w1_bytes;
  const uint4* codes = reinterpret_cast<const uint4*>(base);
  const uint2* scales = reinterpret_cast<const uint2*>(base + a.w1_code_bytes);
  const int64_t tiles[2] = {i, a.inter / 16 + int64_t(i)};
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    st.c[r] = codes + (tiles[r] * kc + j0) * 32 + lane;
    st.s[r] = scales + (tiles[r] * kc + j0) * 8 + (lane >> 2);
  }
}

__device__ __forceinline__ void bind_fc2(const FusedDecodeArgs& a, PairStream& st, int e, int rb, int lane) {
  const int64_t kc = a.inter / 64;
  const uint8_t* base = a.w2 + int64_t(e) * a.w2_bytes;
  const uint4* codes = reinterpret_cast<const uint4*>(base);
  const uint2* scales = reinterpret_cast<const uint2*>(base + a.w2_code_bytes);
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    st.c[r] = codes + (2 * rb + r) * kc * 32 + lane;
    st.s[r] = scales + (2 * rb + r) * kc * 8 + (lane >> 2);
  }
}

// The GEMM epilogue's rounding (store_block in decode_kernel.cuh): r16((acc * 2^k) * alpha + 0).
template <bool kBF16>
__device__ __forceinline__ uint32_t round_out(float acc, float alpha) {
  const float b = 0.0f;
  return float_to_act<kBF16>((acc * gemm_impl::kWeightDecodeScale) * alpha + b);
}

// Whether the FC1 units of group g are split into a.fc1_parts parts: not for an expert with more
// than 8 rows (several token tiles), whose part 0 does each unit alone.
__device__ __forceinline__ bool fc1_split(const FusedDecodeArgs& a, const Group& g) {
  return a.fc1_parts > 1 && g.m <= 8;
}

// An FC1 unit's number decoded: slot s, row tile pair i, K part.
struct Fc1Unit {
  int s, i, part;
};
__device__ __forceinline__ Fc1Unit fc1_unit_of(const FusedDecodeArgs& a, int64_t u) {
  const int per_slot = a.inter / 16 * a.fc1_parts;
  Fc1Unit f;
  f.s = int(u / per_slot);
  const int r = int(u - int64_t(f.s) * per_slot);
  f.i = r / a.fc1_parts;
  f.part = r - f.i * a.fc1_parts;
  return f;
}

// The chunks [j0, j1) of K = H that part `part` of an FC1 unit streams: an equal range when the unit
// is split (fc1_split), else all of K for part 0 (returns false for the other parts: nothing to do).
__device__ __forceinline__ bool fc1_range(const FusedDecodeArgs& a, const Group& g, int part, int& j0, int& j1) {
  const int kc = a.hidden / 64, parts = a.fc1_parts;
  if (fc1_split(a, g)) {
    j0 = kc * part / parts;
    j1 = kc * (part + 1) / parts;
    return true;
  }
  j0 = 0;
  j1 = kc;
  return part == 0;
}

// FC1 unit (or part of one): up/gate rows [16i, 16i + 16) of expert g.e for all its rows, chunks
// [j0, j1) (st bound there; the first pair may already be in flight: `pre`). A split unit's parts
// leave their FP32 sums in the workspace and the last to arrive adds them in part order (whichever
// part that is: deterministic). The warp that completes the unit applies alpha, SwiGLU (+ the W4A4
// round trip) and writes h; returns whether this warp did.
template <typename T, bool kBF16, bool kQuant>
__device__ __forceinline__ bool fc1_unit(const FusedDecodeArgs& a, PairStream& st, GroupRegs& w, const Group& g,
                                         int s, int i, int part, int j0, int j1, bool pre, int lane) {
  const int parts = a.fc1_parts;
  const bool split = fc1_split(a, g);
  const float alpha = __ldg(a.alpha1 + g.e);
  const float gs = kQuant ? __ldg(a.act_global2 + (a.per_expert ? g.e : 0)) : 1.0f;
  const int gr = lane >> 2, c = lane & 3;
  uint16_t* h = static_cast<uint16_t*>(a.h);
  for (int tok0 = 0; tok0 < g.m; tok0 += 8) {
    if (tok0 > 0) {  // (not split: j0 = 0)
      bind_fc1(a, st, g.e, i, 0, lane);
      pre = false;
    }
    st.act = fc1_act_words<T>(a, g, tok0, lane) + j0 * 32;
    float acc[2][1][4];
    zero_acc(acc);
    st.run<T, false>(w, j1 - j0, pre, acc);
    if (split) {
      const int64_t unit = int64_t(s) * (a.inter / 16) + i;
      float4* mine = reinterpret_cast<float4*>(a.partials + (unit * parts + part) * 256) + lane * 2;
      __stcg(mine, make_float4(acc[0][0][0], acc[0][0][1], acc[0][0][2], acc[0][0][3]));
      __stcg(mine + 1, make_float4(acc[1][0][0], acc[1][0][1], acc[1][0][2], acc[1][0][3]));
      __syncwarp();
      int arrived = 0;
      if (lane == 0) arrived = gemm_impl::sm90::arrive_acq_rel(a.split_count + unit);
      arrived = __shfl_sync(kFullMask, arrived, 0);
      if (arrived != parts - 1) return false;
      __syncwarp();  // lane 0's acquire orders the other lanes' partial reads (as decode_kernel.cuh)
      zero_acc(acc);
      for (int p = 0; p < parts; ++p) {
        const float4* x = reinterpret_cast<const float4*>(a.partials + (unit * parts + p) * 256) + lane * 2;
        const float4 x0 = __ldcg(x), x1 = __ldcg(x + 1);
        acc[0][0][0] += x0.x;
        acc[0][0][1] += x0.y;
        acc[0][0][2] += x0.z;
        acc[0][0][3] += x0.w;
        acc[1][0][0] += x1.x;
        acc[1][0][1] += x1.y;
        acc[1][0][2] += x1.z;
        acc[1][0][3] += x1.w;
      }
    }
    // acc[0]: up rows 16i + gr (+8), acc[1]: gate rows; element 2 hh + e: row gr + 8 hh, token 2c + e.
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const int tok = tok0 + 2 * c + e;
      float x[2];
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) {
        const float up = act_to_float<kBF16>(round_out<kBF16>(acc[0][0][2 * hh + e], alpha));
        const float gate = act_to_float<kBF16>(round_out<kBF16>(acc[1][0][2 * hh + e], alpha));
        x[hh] = act_to_float<kBF16>(float_to_act<kBF16>(swiglu(gate, up)));
      }
      // The 16 values of this token's block are on the 8 lanes with this c (2 each): every lane
      // takes part in the shuffles; the lanes of a token past m (all 8 alike) store nothing.
      if constexpr (kQuant) nvfp4_exact_roundtrip_lanes<2, 4>(x, gs);
      if (tok < g.m) {
        uint16_t* dst = h + int64_t(g.row0 + tok) * a.inter + int64_t(i) * 16 + gr;
        dst[0] = uint16_t(float_to_act<kBF16>(x[0]));
        dst[8] = uint16_t(float_to_act<kBF16>(x[1]));
      }
    }
  }
  return true;
}

// FC2 unit: W2 rows [32 rb, 32 rb + 32) of expert g.e against its h rows -> F2 rows (over A1).
template <typename T, bool kBF16>
__device__ __forceinline__ void fc2_unit(const FusedDecodeArgs& a, PairStream& st, GroupRegs& w, const Group& g,
                                         int rb, bool pre, int lane) {
  const int kc = a.inter / 64;
  const float alpha = __ldg(a.alpha2 + g.e);
  const int gr = lane >> 2, c = lane & 3;
  uint16_t* f2 = static_cast<uint16_t*>(a.f2);
  for (int tok0 = 0; tok0 < g.m; tok0 += 8) {
    if (tok0 > 0) {
      bind_fc2(a, st, g.e, rb, lane);
      pre = false;
    }
    st.act = act_words<T>(a.h, g.row0, a.inter, g.m, tok0, lane);
    float acc[2][1][4];
    zero_acc(acc);
    st.run<T, true>(w, kc, pre, acc);
#pragma unroll
    for (int r = 0; r < 2; ++r)
#pragma unroll
      for (int hh = 0; hh < 2; ++hh)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int tok = tok0 + 2 * c + e;
          if (tok < g.m)
            f2[int64_t(g.row0 + tok) * a.hidden + int64_t(rb) * 32 + r * 16 + gr + 8 * hh] =
                uint16_t(round_out<kBF16>(acc[r][0][2 * hh + e], alpha));
        }
  }
}

// The finalize of rows [32 rb, 32 rb + 32) for every token, by the warp that completed the row
// block's last FC2 unit: 4 vectors of 8 per token, k slots in batches of 4 (finalize_kernel's
// arithmetic; batches of 8 spilled at the kernel's 128 registers).
// route: the CTA's copy of perm and final_scales ({row, scale bits} per entry, staged at the start),
// so that a batch costs one L2 round trip (its F2 rows), not two.
template <bool kBF16>
__device__ __forceinline__ void finalize_rows(const FusedDecodeArgs& a, const int2* route, int rb, int lane) {
  constexpr int kBatch = 4;
  const uint16_t* f2 = static_cast<const uint16_t*>(a.f2);
  uint16_t* out = static_cast<uint16_t*>(a.out);
  const int64_t items = int64_t(a.tokens) * 4;
  for (int64_t it = lane; it < items; it += 32) {
    const int64_t t = it >> 2;
    const int64_t col = int64_t(rb) * 32 + (it & 3) * 8;
    const int2* rt = route + t * a.top_k;
    *reinterpret_cast<uint4*>(out + t * a.hidden + col) =
        finalize_vector_routed<kBF16, kBatch, true>(f2, a.hidden, a.top_k, col, [&](int j, int& row, float& w) {
          const int2 r = rt[j];
          row = r.x;
          w = __int_as_float(r.y);
        });
  }
}

// 2 CTAs per SM: the kernel needs 124-128 registers (at 80, for 3 CTAs, it spilled ~1 KB per thread).
template <typename T, bool kQuant>
__global__ void __launch_bounds__(kThreads, 2) moe_fused_decode_kernel(FusedDecodeArgs a) {
  constexpr bool kBF16 = std::is_same_v<T, __nv_bfloat16>;
  const int lane = threadIdx.x & 31;
  // Units are numbered FC1 (slot-major) then FC2 and all come from one dispenser, in order, to
  // running warps only: each CTA takes kWarps consecutive units when it starts, then each warp the
  // next unit. An FC2 unit waits only for FC1 units already handed to running warps, which never
  // wait, so the kernel cannot deadlock whatever the residency (another kernel on the GPU, MPS SM
  // limits). (Before session 28 warp w of the grid started with unit w: an FC2 unit could wait for an
  // FC1 unit of a CTA that was not resident.) The permutation zeroes the dispenser and fences before
  // it triggers this launch (PermuteArgs::publish_before_trigger), so it is read before the wait.
  __shared__ int first_unit_s;
  if (threadIdx.x == 0) first_unit_s = atomicAdd(a.dispenser, kWarps);
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  __syncthreads();
  int64_t u = first_unit_s + (threadIdx.x >> 5);
  // The group list is published before the permutation triggers this launch (its fence and
  // trigger: PermuteArgs::publish_before_trigger), so the first FC1 unit's weights are requested
  // before the wait; A1, h's storage and the counters only after it.
  const int na = min(gemm_impl::sm90::ld_published(a.num_active), a.slots);
  const int fc2_blocks = a.fc2_blocks;  // 32-row blocks per FC2 unit (1 or 2)
  const int ib = a.inter / 16, rbs = a.hidden / 32 / fc2_blocks;
  const int64_t u1 = int64_t(na) * ib * a.fc1_parts, total = u1 + int64_t(na) * rbs;
  PairStream st;
  GroupRegs w;
  bool pre = false;
  Group g{};
  if (u < u1) {
    const Fc1Unit f = fc1_unit_of(a, u);
    g = group_of(a, f.s);
    int j0, j1;
    if (fc1_range(a, g, f.part, j0, j1) && j1 - j0 >= 2) {
      bind_fc1(a, st, g.e, f.i, j0, lane);
      st.load(w, 0, 0, 2);
      pre = true;
    }
  }
  asm volatile("griddepcontrol.wait;" ::: "memory");
  if (na == 0) {
    // No local expert has a row: every output is +0.
    const int64_t vecs = int64_t(a.tokens) * a.hidden / 8;
    for (int64_t v = int64_t(blockIdx.x) * kThreads + threadIdx.x; v < vecs; v += int64_t(gridDim.x) * kThreads)
      reinterpret_cast<uint4*>(a.out)[v] = make_uint4(0, 0, 0, 0);
    return;
  }
  // perm and final_scales for the finalize (fused_decode_smem_bytes): read once per CTA here, where the
  // first weights are still in flight, instead of once per slot batch on the layer's tail.
  extern __shared__ int2 route_s[];
  for (int i = threadIdx.x; i < a.tokens * a.top_k; i += kThreads)
    route_s[i] = make_int2(__ldg(a.perm + i), __float_as_int(__ldg(a.final_scales + i)));
  __syncthreads();
  int64_t next = 0;
  while (u < total) {
    // Ask for the unit after this one now; its answer is needed only at the end of this one.
    if (lane == 0) next = atomicAdd(a.dispenser, 1);
    if (u < u1) {
      const Fc1Unit f = fc1_unit_of(a, u);
      if (!pre) g = group_of(a, f.s);
      int j0, j1;
      if (fc1_range(a, g, f.part, j0, j1)) {
        if (!pre) bind_fc1(a, st, g.e, f.i, j0, lane);
        if (fc1_unit<T, kBF16, kQuant>(a, st, w, g, f.s, f.i, f.part, j0, j1, pre, lane)) {
          __syncwarp();
          if (lane == 0) asm volatile("red.release.gpu.global.add.s32 [%0], 1;" ::"l"(a.fc1_done + f.s) : "memory");
        }
      }
    } else {
      const int64_t v = u - u1;
      const int s = int(v / rbs);
      const int rb = int(v - int64_t(s) * rbs);
      g = group_of(a, s);
      bind_fc2(a, st, g.e, rb * fc2_blocks, lane);
      // The first weights do not depend on FC1: request them, then wait for the expert's h.
      const bool early = a.inter / 64 >= 2;
      if (early) st.load(w, 0, 0, 2);
      if (lane == 0)
        while (ld_acquire(a.fc1_done + s) < ib) __nanosleep(64);
      __syncwarp();
      for (int hb = 0; hb < fc2_blocks; ++hb) {
        if (hb > 0) bind_fc2(a, st, g.e, rb * fc2_blocks + hb, lane);
        fc2_unit<T, kBF16>(a, st, w, g, rb * fc2_blocks + hb, early && hb == 0, lane);
      }
      __syncwarp();
      int arrived = 0;
      if (lane == 0) arrived = gemm_impl::sm90::arrive_acq_rel(a.fin_count + rb);
      arrived = __shfl_sync(kFullMask, arrived, 0);
      if (arrived == na - 1) {
        __syncwarp();  // lane 0's acquire orders the other lanes' reads of the F2 rows
        for (int hb = 0; hb < fc2_blocks; ++hb) finalize_rows<kBF16>(a, route_s, rb * fc2_blocks + hb, lane);
      }
    }
    pre = false;
    u = __shfl_sync(kFullMask, next, 0);
  }
}

template <typename T, bool kQuant>
int resident_ctas() {
  static const int n = [] {
    int b = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, moe_fused_decode_kernel<T, kQuant>, kThreads, 0) != cudaSuccess)
      b = 1;
    return std::max(b, 1);
  }();
  return n;
}

template <typename T, bool kQuant>
Status launch_typed(const FusedDecodeArgs& a, int sm_count, cudaStream_t stream) {
  // One resident wave at most; fewer CTAs when there are fewer units than warps.
  const int64_t units = int64_t(a.slots) * (a.inter / 16 * a.fc1_parts + a.hidden / 32 / a.fc2_blocks);
  const int64_t ctas =
      std::clamp<int64_t>((units + kWarps - 1) / kWarps, 1, int64_t(sm_count) * resident_ctas<T, kQuant>());
  const size_t smem = size_t(a.tokens) * a.top_k * sizeof(int2);  // <= 32 KB (T * k <= kFusedMaxRows)
  return detail::cuda_status(
      launch_kernel(moe_fused_decode_kernel<T, kQuant>, dim3(unsigned(ctas)), dim3(kThreads), smem, stream, true, a),
      "fused_moe: moe_fused_decode_kernel");
}

}  // namespace

Status launch_fused_decode(const FusedDecodeArgs& a, bool bf16, bool quantize, int sm_count, cudaStream_t stream) {
  if (a.slots <= 0 || a.hidden % 64 != 0 || a.inter % 64 != 0 || a.tokens <= 0 || a.top_k <= 0 ||
      int64_t(a.tokens) * a.top_k > kFusedMaxRows ||
      !(a.fc1_parts == 1 || a.fc1_parts == 2 || a.fc1_parts == 4) || (a.fc1_parts > 1 && !a.partials) ||
      !(a.fc2_blocks == 1 || a.fc2_blocks == 2))
    return Status(StatusCode::kInternal, "fused_moe: fused decode kernel used outside its limits");
  if (bf16) return quantize ? launch_typed<__nv_bfloat16, true>(a, sm_count, stream)
                            : launch_typed<__nv_bfloat16, false>(a, sm_count, stream);
  return quantize ? launch_typed<__half, true>(a, sm_count, stream) : launch_typed<__half, false>(a, sm_count, stream);
}

}  // namespace fp4kit::moe_impl
