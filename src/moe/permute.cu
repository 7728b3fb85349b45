// MoE permutation (a stable counting sort of the T*top_k expanded entries by local expert) and the
// gather of the permuted FC1 input rows. See the overview at the top of src/moe/fused_moe.cu.
//
// Ranking one chunk of entries (chunk_pass1 / finish): warp w of the block takes a contiguous span
// of the chunk and walks it 32 entries at a time; __match_any_sync groups the lanes that hold the
// same local expert, each lane's rank among the span's entries of that expert is the per-warp count
// so far (table[w][e], shared memory) plus its position among its peers, and the peers' leader then
// advances the count. Turning each column of the table into an exclusive prefix over the warps
// makes   row = expert offset + chunk base + table[w][e] + rank   the entry's row: rows of one
// expert are in entry order (t, then j), whatever the number of blocks, so the permutation is the
// same in every block and every run. No global atomics anywhere.
#include <cuda_runtime.h>

#include <algorithm>

#include "common/cuda_check.h"
#include "common/launch_kernel.h"
#include "format/scale_layout.h"
#include "moe/moe_device.cuh"
#include "quant/quant_common.cuh"  // pdl_wait, pdl_launch_dependents
#include "moe/moe_kernels.h"

namespace fp4kit::moe_impl {
namespace {

constexpr int kIters = kMaxSpan / 32;  // 8

static_assert(kMaxSpan % 32 == 0, "spans are whole warps");
static_assert(kFusedMaxExperts <= kPermuteThreads, "the fused kernel scans one expert per thread");
static_assert(kFusedMaxRows <= 32767, "the fused kernel keeps rows in int16");
static_assert(kFusedMaxRows <= 65535 && kMaxSpan * kPermuteWarps <= 65535, "uint16 count tables");

__host__ __device__ __forceinline__ int ceil_div_i(int a, int b) { return (a + b - 1) / b; }

// Span per warp for `len` entries over at most `warps` warps: a multiple of 32, <= kMaxSpan when
// len <= warps * kMaxSpan.
__device__ __forceinline__ int span_for(int len, int warps) { return ceil_div_i(ceil_div_i(len, warps), 32) * 32; }

// Pass 1 over the chunk [c0, c0 + len). Requires table[0, nw * e_local) zeroed (nw = warps used).
// On return (after the caller's barrier) table[w][e] counts expert e in warp w's span; e[it] and
// rank[it] hold this lane's entries (e = -1: not a local expert or past the end). Returns whether
// this lane saw an id outside [0, E).
__device__ __forceinline__ bool chunk_pass1(const PermuteArgs& a, int c0, int len, int span, int nw,
                                            uint16_t* table, int (&e)[kIters], int (&rank)[kIters]) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  bool bad = false;
#pragma unroll
  for (int it = 0; it < kIters; ++it) {
    e[it] = -1;
    rank[it] = 0;
  }
  if (warp >= nw) return false;
  uint16_t* row = table + warp * a.e_local;
#pragma unroll
  for (int it = 0; it < kIters; ++it) {
    if (it * 32 < span) {  // warp-uniform
      const int li = warp * span + it * 32 + lane;
      int le = -1;
      if (li < len) {
        const int id = a.selected[c0 + li];
        if (id < 0 || id >= a.num_experts) {
          bad = true;
        } else {
          const int l = id - a.e_begin;
          if (l >= 0 && l < a.e_local) le = l;
        }
      }
      const unsigned peers = __match_any_sync(kFullMask, le);
      const int leader = __ffs(peers) - 1;
      if (le >= 0) {
        e[it] = le;
        rank[it] = int(row[le]) + __popc(peers & lanemask_lt());
      }
      __syncwarp();
      if (le >= 0 && lane == leader) row[le] = uint16_t(row[le] + __popc(peers));
      __syncwarp();
    }
  }
  return bad;
}

// table[w][e] <- Σ_{w' < w} table[w'][e] for the experts this thread owns (e = tid, tid + step, ..);
// returns the column total of expert `e`. One expert per call.
__device__ __forceinline__ int column_prefix(uint16_t* table, int e, int e_local, int nw) {
  int run = 0;
  for (int w = 0; w < nw; ++w) {
    const int c = table[w * e_local + e];
    table[w * e_local + e] = uint16_t(run);
    run += c;
  }
  return run;
}

// Exclusive scan of one 64-bit value per thread over the block; *total gets the block sum.
// scratch: kThreads/32 values. Ends with a barrier, so it can be called again right away.
template <int kThreads>
__device__ __forceinline__ unsigned long long block_exclusive_scan(unsigned long long v, unsigned long long* scratch,
                                                                   unsigned long long* total) {
  constexpr int kWarps = kThreads / 32;
  static_assert(kWarps <= 32, "one warp scans the warp totals");
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  unsigned long long x = v;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const unsigned long long y = __shfl_up_sync(kFullMask, x, o);
    if (lane >= o) x += y;
  }
  if (lane == 31) scratch[warp] = x;
  __syncthreads();
  if (warp == 0) {
    unsigned long long w = lane < kWarps ? scratch[lane] : 0ull;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      const unsigned long long y = __shfl_up_sync(kFullMask, w, o);
      if (lane >= o) w += y;
    }
    if (lane < kWarps) scratch[lane] = w;  // inclusive prefix of the warp totals
  }
  __syncthreads();
  const unsigned long long base = warp > 0 ? scratch[warp - 1] : 0ull;
  *total = scratch[kWarps - 1];
  __syncthreads();
  return base + x - v;
}

// ---- gather ----------------------------------------------------------------------------------------------
// W4A4 with a 16-bit input: one quarter (4 elements) of block c4 / 4 of input row t -> A1 row `row`
// (row < 0: nothing to write, but the thread still takes part in the shuffles). Four consecutive
// threads hold one 16-element block and meet in nvfp4_exact_roundtrip_lanes: a quarter of the
// dependent chain of one thread per block (the gather is on the critical path before FC1).
template <bool kBF16>
__device__ __forceinline__ void gather_quantize_quarter(const GatherArgs& g, int64_t t, int row, int local_expert,
                                                        int64_t c4) {
  float x[4] = {};
  if (row >= 0) {
    const uint2 v = *reinterpret_cast<const uint2*>(static_cast<const uint16_t*>(g.input) + t * g.hidden + c4 * 4);
    x[0] = act_to_float<kBF16>(v.x & 0xffffu);
    x[1] = act_to_float<kBF16>(v.x >> 16);
    x[2] = act_to_float<kBF16>(v.y & 0xffffu);
    x[3] = act_to_float<kBF16>(v.y >> 16);
  }
  const float gs = row >= 0 ? g.act_global[g.per_expert ? local_expert : 0] : 1.0f;
  nvfp4_exact_roundtrip_lanes<4>(x, gs);
  if (row >= 0)
    *reinterpret_cast<uint2*>(static_cast<uint16_t*>(g.a1) + int64_t(row) * g.hidden + c4 * 4) =
        make_uint2(float_to_act<kBF16>(x[0]) | (float_to_act<kBF16>(x[1]) << 16),
                   float_to_act<kBF16>(x[2]) | (float_to_act<kBF16>(x[3]) << 16));
}


// W4A4 from an NVFP4 input: 16 consecutive elements of input row t, block c, decoded -> A1 row `row`.
template <bool kBF16, GatherMode kMode>
__device__ __forceinline__ void gather_item(const GatherArgs& g, int64_t t, int64_t row, int64_t c) {
  uint16_t* dst = static_cast<uint16_t*>(g.a1) + row * g.hidden + c * 16;
  static_assert(kMode == GatherMode::kDecode, "kCopy and kQuantize have their own loops in gather_rows");
  const uint2 codes = *reinterpret_cast<const uint2*>(static_cast<const uint8_t*>(g.input) + t * (g.hidden / 2) + c * 8);
  const int64_t sf_cols = g.hidden / 16;  // a multiple of 4 (hidden % 64 == 0)
  const uint8_t sf = g.input_scales[format::sf_offset_128x4(t, c, sf_cols)];
  nvfp4_decode16_store<kBF16>(codes, sf, dst);
}

// Gathers the n entries' rows (row_of(i): A1 row of entry i, < 0 for none) with `threads` threads per
// CTA, consecutive threads on consecutive pieces of a row: copies (W4A16, and W4A4 from pre-quantized
// tokens) in items of kCopyElems elements, kU per thread and trip; W4A4 from an NVFP4 input per
// (entry, 16-element block); W4A4 from a 16-bit input in quarters of a block
// (gather_quantize_quarter), with the same trip count for every thread.
// `block` of `blocks` CTAs take part (the fused kernel's token-row mode leaves block 0 out).
template <bool kBF16, GatherMode kMode, int kThreadsPerCta, int kU = 1, int kCopyElems = 16, class RowOf>
__device__ __forceinline__ void gather_rows(const PermuteArgs& a, const GatherArgs& g, int n, RowOf row_of, int block,
                                            int blocks) {
  const int64_t hb = g.hidden / 16;
  const int64_t stride = int64_t(blocks) * kThreadsPerCta;
  if constexpr (kMode == GatherMode::kQuantize) {
    const int64_t quarters = int64_t(n) * hb * 4;
    for (int64_t i0 = int64_t(block) * kThreadsPerCta; i0 < quarters; i0 += stride) {
      const int64_t idx = i0 + threadIdx.x;
      int64_t i = 0, c4 = 0;
      int row = -1;
      if (idx < quarters) {
        divmod_nonneg(idx, hb * 4, i, c4);
        row = row_of(i);
      }
      // The entry's expert only matters (and is only read) with per-expert activation scales.
      const int le = row >= 0 && g.per_expert ? a.selected[i] - a.e_begin : 0;
      gather_quantize_quarter<kBF16>(g, i / a.top_k, row, le, c4);
    }
  } else if constexpr (kMode == GatherMode::kCopy) {
    // Items of kCopyElems elements (16: two 16-byte vectors per thread; 8: one, so that a warp store
    // covers 512 contiguous bytes of a row), kU per thread and trip: every row index and source load
    // of the kU is issued before the first store, and the source loads do not wait for the row index
    // (an entry outside the local experts then reads its token's 16-element block for nothing: x is
    // T*H elements against the T*top_k*H the gather writes).
    static_assert(kCopyElems == 8 || kCopyElems == 16, "one or two 16-byte vectors per item");
    constexpr int kVec = kCopyElems / 8;
    const int64_t hv = g.hidden / kCopyElems;
    const int64_t items = int64_t(n) * hv;
    for (int64_t i0 = int64_t(block) * kThreadsPerCta + threadIdx.x; i0 < items; i0 += stride * kU) {
      int64_t c[kU];
      int row[kU];
      uint4 v[kU][kVec];
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        const int64_t idx = i0 + u * stride;
        row[u] = -1;
        if (idx < items) {
          int64_t i;
          divmod_nonneg(idx, hv, i, c[u]);
          row[u] = row_of(i);
          const int64_t t = int(i) / a.top_k;  // i < n < 2^31: a 32-bit division
          const uint4* src = reinterpret_cast<const uint4*>(static_cast<const uint16_t*>(g.input) + t * g.hidden + c[u] * kCopyElems);
#pragma unroll
          for (int q = 0; q < kVec; ++q) v[u][q] = src[q];
        }
      }
#pragma unroll
      for (int u = 0; u < kU; ++u)
        if (row[u] >= 0) {
          uint4* dst = reinterpret_cast<uint4*>(static_cast<uint16_t*>(g.a1) + int64_t(row[u]) * g.hidden + c[u] * kCopyElems);
#pragma unroll
          for (int q = 0; q < kVec; ++q) dst[q] = v[u][q];
        }
    }
  } else {
    const int64_t items = int64_t(n) * hb;
    for (int64_t idx = int64_t(block) * kThreadsPerCta + threadIdx.x; idx < items; idx += stride) {
      int64_t i, c;
      divmod_nonneg(idx, hb, i, c);
      const int row = row_of(i);
      if (row < 0) continue;
      gather_item<kBF16, kMode>(g, int(i) / a.top_k, row, c);
    }
  }
}

// W4A4: each token's FC1 input into row t of g.a1 — quantized with the one activation global scale
// (kQuantize; decoded back to 16 bits) or decoded from the NVFP4 input (kDecode) — by the gather's
// loop over the tokens as the entries of a top-1 identity permutation, by CTA `block` of `blocks`
// (quantize_rows_kernel; the fused kernel's token-row blocks).
template <bool kBF16, GatherMode kMode, int kThreadsPerCta>
__device__ __forceinline__ void token_rows(const GatherArgs& g, int tokens, int block, int blocks) {
  static_assert(kMode == GatherMode::kQuantize || kMode == GatherMode::kDecode, "W4A4 FC1 inputs");
  PermuteArgs identity;
  identity.top_k = 1;
  gather_rows<kBF16, kMode, kThreadsPerCta>(identity, g, tokens, [](int64_t i) { return int(i); }, block, blocks);
}

// ---- fused path: every block ranks all entries, block 0 publishes, all blocks gather ---------------------
template <bool kBF16, GatherMode kMode>
__global__ void __launch_bounds__(kPermuteThreads) permute_gather_fused_kernel(PermuteArgs a, GatherArgs g) {
  __shared__ uint16_t table[kPermuteWarps * kFusedMaxExperts];  // 16 KB
  __shared__ int16_t perm_s[kFusedMaxRows];                     // 8 KB
  __shared__ int offs_s[kFusedMaxExperts];
  __shared__ unsigned long long scan_s[kPermuteWarps];

  // Let the FC1 GEMM launch now (it waits for this grid's completion before reading anything);
  // with publish_before_trigger block 0 triggers only once it has published the group list (below):
  // the FC2 GEMM relies on that to read it before its own wait (GroupedGemmParams::groups_ready).
  const int tid = threadIdx.x;
  const int n = a.n, e_local = a.e_local;
  constexpr bool kTokenRowMode = kMode == GatherMode::kQuantize || kMode == GatherMode::kDecode;
  if constexpr (kTokenRowMode) {
    if (g.token_rows && blockIdx.x > 0) {
      // Token-row mode (GatherArgs::token_rows): the blocks after the first quantize (decode) each
      // token's row once into g.a1 [T, H] while block 0 ranks; it needs no routing, so the
      // dependent's wait covers the longer of the two instead of their sum.
      quant::pdl_wait();
      quant::pdl_launch_dependents();
      token_rows<kBF16, kMode, kPermuteThreads>(g, n / a.top_k, int(blockIdx.x) - 1, int(gridDim.x) - 1);
      return;
    }
  }
  const bool publish = blockIdx.x == 0;
  const bool late_trigger = publish && a.publish_before_trigger;
  // Launched with PDL (MoeParams::enable_pdl): the previous kernel may still read the workspace and
  // write the routing; nothing global is touched before this (a no-op otherwise), and nothing is
  // triggered before it (the dependents read the routing-derived lists early).
  quant::pdl_wait();
  if (!late_trigger) quant::pdl_launch_dependents();
  const int span = span_for(n, kPermuteWarps);
  const int nw = ceil_div_i(n, span);
  for (int i = tid; i < nw * e_local; i += kPermuteThreads) table[i] = 0;
  if (publish)
    for (int i = tid; i < a.clear_words; i += kPermuteThreads) a.clear[i] = 0;
  __syncthreads();

  int e[kIters], rank[kIters];
  const bool bad = chunk_pass1(a, 0, n, span, nw, table, e, rank);
  const int any_bad = __syncthreads_or(bad);

  // Counts and offsets: one expert per thread. An expert with more than T rows (a token selects it
  // twice) would exceed the grouped GEMM's max_group_rows: flagged.
  int count = 0;
  if (tid < e_local) count = column_prefix(table, tid, e_local, nw);
  const int overflow = __syncthreads_or(count > n / a.top_k);
  const unsigned long long packed = (static_cast<unsigned long long>(count) << 32) | (count > 0 ? 1ull : 0ull);
  unsigned long long total;
  const unsigned long long excl = block_exclusive_scan<kPermuteThreads>(packed, scan_s, &total);
  if (tid < e_local) {
    offs_s[tid] = int(excl >> 32);
    if (publish) {
      a.offsets[tid] = int(excl >> 32);
      if (count > 0) a.active[uint32_t(excl)] = tid;
    }
  }
  if (publish && tid == 0) {
    a.offsets[e_local] = int(total >> 32);
    *a.num_active = int(uint32_t(total));
    *a.error_flag = (any_bad ? kBadExpertId : 0) | (overflow ? kGroupOverflow : 0);
  }
  if (late_trigger) __threadfence();  // the group list is visible device-wide before the trigger
  __syncthreads();
  if (late_trigger) quant::pdl_launch_dependents();

  // Rows.
  {
    const int warp = tid >> 5, lane = tid & 31;
#pragma unroll
    for (int it = 0; it < kIters; ++it) {
      const int li = warp * span + it * 32 + lane;
      if (warp < nw && it * 32 < span && li < n) {
        int row = -1;
        if (e[it] >= 0) row = offs_s[e[it]] + table[warp * e_local + e[it]] + rank[it];
        perm_s[li] = int16_t(row);
        if (publish) {
          a.perm[li] = row;
          if (row >= 0 && a.row_expert) a.row_expert[row] = e[it];
          if (row >= 0 && a.row_token) a.row_token[row] = li / a.top_k;
        }
      }
    }
  }
  if constexpr (kMode != GatherMode::kNone) {
    if (kTokenRowMode && g.token_rows) return;
    __syncthreads();
    gather_rows<kBF16, kMode, kPermuteThreads>(a, g, n, [&](int64_t i) { return int(perm_s[i]); }, blockIdx.x,
                                               gridDim.x);
  }
}

// ---- multi-kernel path -------------------------------------------------------------------------------------
struct ChunkGeometry {
  int c0, len, span, nw;
};

__device__ __forceinline__ ChunkGeometry chunk_geometry(const PermuteArgs& a, int warps) {
  ChunkGeometry cg;
  const int entries = warps * kMaxSpan;
  cg.c0 = int(blockIdx.x) * entries;
  cg.len = min(entries, a.n - cg.c0);
  cg.span = span_for(cg.len, warps);
  cg.nw = ceil_div_i(cg.len, cg.span);
  return cg;
}

// K1: per-chunk counts of every local expert and the chunk's bad-id flag.
__global__ void __launch_bounds__(kPermuteThreads) permute_count_kernel(PermuteArgs a, int warps) {
  extern __shared__ uint16_t dyn_table[];
  const ChunkGeometry cg = chunk_geometry(a, warps);
  for (int i = threadIdx.x; i < cg.nw * a.e_local; i += kPermuteThreads) dyn_table[i] = 0;
  __syncthreads();
  int e[kIters], rank[kIters];
  const bool bad = chunk_pass1(a, cg.c0, cg.len, cg.span, cg.nw, dyn_table, e, rank);
  const int any_bad = __syncthreads_or(bad);
  for (int ex = threadIdx.x; ex < a.e_local; ex += kPermuteThreads) {
    int s = 0;
    for (int w = 0; w < cg.nw; ++w) s += dyn_table[w * a.e_local + ex];
    a.chunk_counts[int64_t(blockIdx.x) * a.e_local + ex] = s;
  }
  if (threadIdx.x == 0) a.chunk_flags[blockIdx.x] = any_bad;
}

// K2 (one block): expert offsets, active list, per-chunk bases (in place over chunk_counts), flag.
constexpr int kScanThreads = 1024;
__global__ void __launch_bounds__(kScanThreads) permute_scan_kernel(PermuteArgs a, int chunks) {
  __shared__ unsigned long long scan_s[kScanThreads / 32];
  unsigned long long carry = 0;
  int overflow = 0;
  for (int base = 0; base < a.e_local; base += kScanThreads) {
    const int ex = base + int(threadIdx.x);
    int count = 0;
    if (ex < a.e_local)
      for (int c = 0; c < chunks; ++c) count += a.chunk_counts[int64_t(c) * a.e_local + ex];
    overflow |= count > a.n / a.top_k;
    const unsigned long long packed =
        ex < a.e_local ? (static_cast<unsigned long long>(count) << 32) | (count > 0 ? 1ull : 0ull) : 0ull;
    unsigned long long total;
    const unsigned long long excl = block_exclusive_scan<kScanThreads>(packed, scan_s, &total) + carry;
    if (ex < a.e_local) {
      const int off = int(excl >> 32);
      a.offsets[ex] = off;
      if (count > 0) a.active[uint32_t(excl)] = ex;
      int run = off;
      for (int c = 0; c < chunks; ++c) {
        const int64_t at = int64_t(c) * a.e_local + ex;
        const int v = a.chunk_counts[at];
        a.chunk_counts[at] = run;
        run += v;
      }
    }
    carry += total;
  }
  int bad = 0;
  for (int c = threadIdx.x; c < chunks; c += kScanThreads) bad |= a.chunk_flags[c];
  bad = __syncthreads_or(bad);
  overflow = __syncthreads_or(overflow);
  if (threadIdx.x == 0) {
    a.offsets[a.e_local] = int(carry >> 32);
    *a.num_active = int(uint32_t(carry));
    *a.error_flag = (bad ? kBadExpertId : 0) | (overflow ? kGroupOverflow : 0);
  }
}

// K3: ranks each chunk again (the same way as K1) and writes perm and row_expert (or row_token).
__global__ void __launch_bounds__(kPermuteThreads) permute_rank_kernel(PermuteArgs a, int warps) {
  extern __shared__ uint16_t dyn_table[];
  const ChunkGeometry cg = chunk_geometry(a, warps);
  for (int i = threadIdx.x; i < cg.nw * a.e_local; i += kPermuteThreads) dyn_table[i] = 0;
  __syncthreads();
  int e[kIters], rank[kIters];
  (void)chunk_pass1(a, cg.c0, cg.len, cg.span, cg.nw, dyn_table, e, rank);
  __syncthreads();
  for (int ex = threadIdx.x; ex < a.e_local; ex += kPermuteThreads) (void)column_prefix(dyn_table, ex, a.e_local, cg.nw);
  __syncthreads();
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int32_t* base = a.chunk_counts + int64_t(blockIdx.x) * a.e_local;
#pragma unroll
  for (int it = 0; it < kIters; ++it) {
    const int li = warp * cg.span + it * 32 + lane;
    if (warp < cg.nw && it * 32 < cg.span && li < cg.len) {
      int row = -1;
      if (e[it] >= 0) {
        row = base[e[it]] + dyn_table[warp * a.e_local + e[it]] + rank[it];
        if (a.row_expert) a.row_expert[row] = e[it];
        if (a.row_token) a.row_token[row] = (cg.c0 + li) / a.top_k;
      }
      a.perm[cg.c0 + li] = row;
    }
  }
}

// K4: gather from perm. Copies in 8-element (16-byte) items, 8 per thread and trip, source loads not
// waiting for the row index (H100 ncu, T=4096: one item of 16 elements per trip 89 us at Qwen3.6 (session
// 7), four 68.5-72.8; this form fi-256 281 -> 219 us (0.63 -> 0.78 of copy BW), DeepSeek-V3 284 -> 217,
// Qwen3.6 72.8 -> 68.5; fi-256 T=16384 1100 -> 837). Not in the fused kernel, which must keep two
// 512-thread blocks per SM (four items per trip cost it 6-23 % at T = 64..256).
constexpr int kGatherThreads = 256;
constexpr int kGatherCopyElems = 8, kGatherCopyU = 8;
template <bool kBF16, GatherMode kMode>
__global__ void __launch_bounds__(kGatherThreads) gather_kernel(PermuteArgs a, GatherArgs g) {
  gather_rows<kBF16, kMode, kGatherThreads, kGatherCopyU, kGatherCopyElems>(
      a, g, a.n, [&](int64_t i) { return a.perm[i]; }, blockIdx.x, gridDim.x);
}

// 16 consecutive 16-bit values at src quantized to NVFP4 with global scale gs (kExact) and stored
// decoded at dst, by one thread (the large-batch kernels below; gather_quantize_quarter spreads a
// block over four lanes).
template <bool kBF16>
__device__ __forceinline__ void quantize_block16(const uint16_t* src, uint16_t* dst, float gs) {
  float x[16];
  load16<kBF16>(src, x);
  nvfp4_exact_roundtrip_lanes<16>(x, gs);
  store16<kBF16>(dst, x);
}

// The multi-kernel gather of W4A4 from a 16-bit input with per-expert activation scales (each entry
// quantized with its expert's scale) at large batches: one thread per 16-element block
// (quant_thread_per_block), the same values as gather_rows' four lanes per block.
template <bool kBF16>
__global__ void __launch_bounds__(kGatherThreads) gather_quantize_block_kernel(PermuteArgs a, GatherArgs g) {
  const int64_t hb = g.hidden / 16;
  const int64_t items = int64_t(a.n) * hb;
  for (int64_t idx = int64_t(blockIdx.x) * kGatherThreads + threadIdx.x; idx < items;
       idx += int64_t(gridDim.x) * kGatherThreads) {
    int64_t i, c;
    divmod_nonneg(idx, hb, i, c);
    const int row = a.perm[i];
    if (row < 0) continue;
    const float gs = g.act_global[g.per_expert ? a.selected[i] - a.e_begin : 0];
    const int64_t t = int(i) / a.top_k;  // i < n < 2^31: a 32-bit division
    quantize_block16<kBF16>(static_cast<const uint16_t*>(g.input) + t * g.hidden + c * 16,
                            static_cast<uint16_t*>(g.a1) + int64_t(row) * g.hidden + c * 16, gs);
  }
}

// The multi-kernel path's per-token quantization (token_rows over the whole grid).
template <bool kBF16>
__global__ void __launch_bounds__(kGatherThreads) quantize_rows_kernel(GatherArgs g, int tokens) {
  token_rows<kBF16, GatherMode::kQuantize, kGatherThreads>(g, tokens, blockIdx.x, gridDim.x);
}

// The same values with one thread per 16-element block (quant_thread_per_block: large batches):
// row t of the 16-bit input quantized with act_global[0] (kExact) and decoded into row t of g.a1.
// H100 session 33 (ncu, T = 4096): DeepSeek-V3 77 -> 43 us, Qwen3.6 25 -> 13 us.
template <bool kBF16>
__global__ void __launch_bounds__(kGatherThreads) quantize_rows_block_kernel(GatherArgs g, int64_t tokens) {
  const int64_t hb = g.hidden / 16;
  const int64_t items = tokens * hb;
  const float gs = g.act_global[0];
  for (int64_t idx = int64_t(blockIdx.x) * kGatherThreads + threadIdx.x; idx < items;
       idx += int64_t(gridDim.x) * kGatherThreads) {
    const int64_t off = idx * 16;  // row t, block c: t * hidden + c * 16
    quantize_block16<kBF16>(static_cast<const uint16_t*>(g.input) + off, static_cast<uint16_t*>(g.a1) + off, gs);
  }
}

template <template <bool, GatherMode> class Launcher>
Status dispatch_gather(const GatherArgs& g, auto&&... args) {
  if (g.bf16) {
    switch (g.mode) {
      case GatherMode::kCopy: return Launcher<true, GatherMode::kCopy>::run(args...);
      case GatherMode::kQuantize: return Launcher<true, GatherMode::kQuantize>::run(args...);
      case GatherMode::kDecode: return Launcher<true, GatherMode::kDecode>::run(args...);
    }
  } else {
    switch (g.mode) {
      case GatherMode::kCopy: return Launcher<false, GatherMode::kCopy>::run(args...);
      case GatherMode::kQuantize: return Launcher<false, GatherMode::kQuantize>::run(args...);
      case GatherMode::kDecode: return Launcher<false, GatherMode::kDecode>::run(args...);
    }
  }
  return Status(StatusCode::kInternal, "moe gather: unknown mode");
}

template <bool kBF16, GatherMode kMode>
struct FusedLauncher {
  static Status run(const PermuteArgs& a, const GatherArgs& g, int blocks, cudaStream_t stream) {
    return detail::cuda_status(launch_kernel(permute_gather_fused_kernel<kBF16, kMode>, dim3(unsigned(blocks)),
                                             dim3(kPermuteThreads), 0, stream, a.pdl, a, g),
                               "fused_moe: permute_gather_fused_kernel");
  }
};

template <bool kBF16, GatherMode kMode>
struct GatherLauncher {
  static Status run(const PermuteArgs& a, const GatherArgs& g, int blocks, cudaStream_t stream) {
    gather_kernel<kBF16, kMode><<<blocks, kGatherThreads, 0, stream>>>(a, g);
    return detail::last_launch_status("fused_moe: gather_kernel");
  }
};

// Threads the gather wants: one per (entry, copy item of `copy_elems` elements) when copying, per
// (entry, 16-element block) when decoding, four per block in W4A4 from a 16-bit input.
int64_t gather_threads(const PermuteArgs& a, const GatherArgs& g, int copy_elems = 16) {
  if (g.mode == GatherMode::kCopy) return int64_t(a.n) * (g.hidden / copy_elems);
  return int64_t(a.n) * (g.hidden / 16) * (g.mode == GatherMode::kQuantize ? 4 : 1);
}

}  // namespace

Status launch_permute_gather_fused(const PermuteArgs& a, const GatherArgs& g, int sm_count, cudaStream_t stream) {
  if (!use_fused_permute(a.n, a.e_local) || a.n <= 0)
    return Status(StatusCode::kInternal, "fused_moe: fused permutation used outside its limits");
  // Every block ranks all entries (a few microseconds at most at n = 4096), so the grid is kept
  // to one wave: two 512-thread blocks per SM (the register file holds two).
  // Nothing to gather (the element type does not matter): one block ranks and publishes.
  if (g.mode == GatherMode::kNone) return FusedLauncher<true, GatherMode::kNone>::run(a, g, 1, stream);
  if (g.token_rows) {
    const bool quantize = g.mode == GatherMode::kQuantize;
    if (!(quantize || g.mode == GatherMode::kDecode) || (quantize && g.per_expert) || a.row_token == nullptr)
      return Status(StatusCode::kInternal, "fused_moe: token-row mode used outside its limits");
    // Threads: four per 16-element block quantizing, one decoding (gather_threads of T entries).
    const int64_t items = int64_t(a.n / a.top_k) * (g.hidden / 16) * (quantize ? 4 : 1);
    const int blocks = 1 + grid_for(items, kPermuteThreads, int64_t(sm_count) * 2 - 1);
    return dispatch_gather<FusedLauncher>(g, a, g, blocks, stream);
  }
  const int blocks = grid_for(gather_threads(a, g), kPermuteThreads, int64_t(sm_count) * 2);
  return dispatch_gather<FusedLauncher>(g, a, g, blocks, stream);
}

Status launch_permute_multi(const PermuteArgs& a, cudaStream_t stream) {
  if (a.n <= 0 || a.e_local <= 0 || a.e_local > kMaxLocalExperts)
    return Status(StatusCode::kInternal, "fused_moe: multi-kernel permutation used outside its limits");
  const int warps = chunk_warps(a.e_local);
  const int64_t chunks = chunk_count(a.n, a.e_local);
  const size_t smem = size_t(warps) * size_t(a.e_local) * sizeof(uint16_t);  // <= 32 KB
  permute_count_kernel<<<unsigned(chunks), kPermuteThreads, smem, stream>>>(a, warps);
  FP4KIT_RETURN_IF_ERROR(detail::last_launch_status("fused_moe: permute_count_kernel"));
  permute_scan_kernel<<<1, kScanThreads, 0, stream>>>(a, int(chunks));
  FP4KIT_RETURN_IF_ERROR(detail::last_launch_status("fused_moe: permute_scan_kernel"));
  permute_rank_kernel<<<unsigned(chunks), kPermuteThreads, smem, stream>>>(a, warps);
  return detail::last_launch_status("fused_moe: permute_rank_kernel");
}

Status launch_quantize_rows(const GatherArgs& g, int64_t tokens, int sm_count, cudaStream_t stream) {
  if (g.mode != GatherMode::kQuantize || g.per_expert || tokens <= 0 || tokens > 0x7fffffff)
    return Status(StatusCode::kInternal, "fused_moe: per-token quantization used outside its limits");
  const int64_t nvfp4_blocks = tokens * (g.hidden / 16);
  if (quant_thread_per_block(nvfp4_blocks, sm_count)) {
    const int blocks = grid_for(nvfp4_blocks, kGatherThreads, int64_t(sm_count) * 8);
    if (g.bf16) quantize_rows_block_kernel<true><<<blocks, kGatherThreads, 0, stream>>>(g, tokens);
    else quantize_rows_block_kernel<false><<<blocks, kGatherThreads, 0, stream>>>(g, tokens);
    return detail::last_launch_status("fused_moe: quantize_rows_block_kernel");
  }
  const int blocks = grid_for(nvfp4_blocks * 4, kGatherThreads, int64_t(sm_count) * 8);
  if (g.bf16) quantize_rows_kernel<true><<<blocks, kGatherThreads, 0, stream>>>(g, int(tokens));
  else quantize_rows_kernel<false><<<blocks, kGatherThreads, 0, stream>>>(g, int(tokens));
  return detail::last_launch_status("fused_moe: quantize_rows_kernel");
}

Status launch_gather(const PermuteArgs& a, const GatherArgs& g, int sm_count, cudaStream_t stream) {
  const int64_t nvfp4_blocks = int64_t(a.n) * (g.hidden / 16);
  if (g.mode == GatherMode::kQuantize && quant_thread_per_block(nvfp4_blocks, sm_count)) {
    const int blocks = grid_for(nvfp4_blocks, kGatherThreads, int64_t(sm_count) * 8);
    if (g.bf16) gather_quantize_block_kernel<true><<<blocks, kGatherThreads, 0, stream>>>(a, g);
    else gather_quantize_block_kernel<false><<<blocks, kGatherThreads, 0, stream>>>(a, g);
    return detail::last_launch_status("fused_moe: gather_quantize_block_kernel");
  }
  const int blocks = grid_for(gather_threads(a, g, kGatherCopyElems), kGatherThreads, int64_t(sm_count) * 8);
  return dispatch_gather<GatherLauncher>(g, a, g, blocks, stream);
}

}  // namespace fp4kit::moe_impl
