// Host side of the large-M (wgmma) family: TMA descriptors, persistent grid, launch.
#include <cuda.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <set>
#include <tuple>
#include <utility>

#include "common/cuda_check.h"
#include "fp4kit/device.h"
#include "gemm/stage_activations.h"
#include "gemm/families.h"
#include "gemm/prepacked_layout.h"
#include "gemm/sm90/wgmma_launch.cuh"

namespace fp4kit::gemm_impl {
namespace {

sm90::WgmmaKernel kernel_for(const Tactic& t, const GemmParams& p) {
  if (operand_type(p) == DType::kBF16)
    return sm90::wgmma_kernel_for<__nv_bfloat16>(t.block_n, t.block_m, t.stages, t.step_chunks);
  return sm90::wgmma_kernel_for<__half>(t.block_n, t.block_m, t.stages, t.step_chunks);
}

// K in the kernel's schedule units: 64-K chunks, or pairs of them for two-stage steps (the last pair
// may reach one chunk past K; TMA zero-fills it).
int64_t k_units(const Tactic& t, const GemmParams& p) {
  return (prepacked_shape(p.n, p.k).k_chunks + t.step_chunks - 1) / t.step_chunks;
}


using EncodeTiledFn = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                   const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                   CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

// cuTensorMapEncodeTiled through the runtime's driver entry point (no -lcuda).
Status encode_fn(EncodeTiledFn* out) {
  static std::once_flag once;
  static EncodeTiledFn fn = nullptr;
  static cudaError_t err = cudaSuccess;
  std::call_once(once, [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    err = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q);
    if (err == cudaSuccess && q == cudaDriverEntryPointSuccess) fn = reinterpret_cast<EncodeTiledFn>(p);
  });
  if (!fn)
    return Status(StatusCode::kCudaError, std::string("gemm: cuTensorMapEncodeTiled not available (") +
                                              cudaGetErrorName(err) + ")");
  *out = fn;
  return Status::ok();
}

Status encode(EncodeTiledFn fn, CUtensorMap* map, CUtensorMapDataType type, int rank, const void* addr,
              const cuuint64_t* dims, const cuuint64_t* strides, const cuuint32_t* box, CUtensorMapSwizzle swizzle,
              const char* what) {
  const cuuint32_t elem_strides[5] = {1, 1, 1, 1, 1};  // up to rank 5
  const CUresult r = fn(map, type, cuuint32_t(rank), const_cast<void*>(addr), dims, strides, box, elem_strides,
                        CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    return Status(StatusCode::kCudaError,
                  std::string("gemm: cuTensorMapEncodeTiled failed for ") + what + " (CUresult " + std::to_string(int(r)) + ")");
  return Status::ok();
}

// TMA map of the activations [rows][lda] 16-bit, viewed as K x rows (K fastest); columns >= k
// and rows >= `rows` read as 0.
Status encode_activation_map(EncodeTiledFn fn, CUtensorMap* map, DType dtype, const void* a, int64_t k,
                             int64_t rows, int64_t lda, int block_m) {
  const cuuint64_t dims[2] = {cuuint64_t(k), cuuint64_t(rows)};
  const cuuint64_t strides[1] = {cuuint64_t(lda) * 2};
  const cuuint32_t box[2] = {64, cuuint32_t(block_m)};
  const CUtensorMapDataType type =
      dtype == DType::kBF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  return encode(fn, map, type, 2, a, dims, strides, box, CU_TENSOR_MAP_SWIZZLE_128B, "A");
}

// TMA maps of prepacked weights: codes [row tile][k chunk][128 words] and scales [row tile][k
// chunk][16 words]. groups == 0: one weight matrix (3D maps); else `groups` stacked matrices,
// s.bytes() apart (4D maps, the group as the outer coordinate).
Status encode_weight_maps(EncodeTiledFn fn, CUtensorMap* map_w, CUtensorMap* map_s, const void* b,
                          const PrepackedShape& s, int64_t groups, int block_n) {
  const int rank = groups > 0 ? 4 : 3;
  const cuuint32_t tiles = cuuint32_t(block_n / kChunkRows);
  {
    const cuuint64_t dims[4] = {kChunkCodeBytes / 4, cuuint64_t(s.k_chunks), cuuint64_t(s.row_tiles), cuuint64_t(groups)};
    const cuuint64_t strides[3] = {kChunkCodeBytes, cuuint64_t(s.k_chunks) * kChunkCodeBytes, cuuint64_t(s.bytes())};
    const cuuint32_t box[4] = {kChunkCodeBytes / 4, 1, tiles, 1};
    FP4KIT_RETURN_IF_ERROR(encode(fn, map_w, CU_TENSOR_MAP_DATA_TYPE_UINT32, rank, b, dims, strides, box,
                                  CU_TENSOR_MAP_SWIZZLE_NONE, groups > 0 ? "grouped B codes" : "B codes"));
  }
  const cuuint64_t dims[4] = {kChunkScaleBytes / 4, cuuint64_t(s.k_chunks), cuuint64_t(s.row_tiles), cuuint64_t(groups)};
  const cuuint64_t strides[3] = {kChunkScaleBytes, cuuint64_t(s.k_chunks) * kChunkScaleBytes, cuuint64_t(s.bytes())};
  const cuuint32_t box[4] = {kChunkScaleBytes / 4, 1, tiles, 1};
  const void* scales = static_cast<const uint8_t*>(b) + s.code_bytes();
  return encode(fn, map_s, CU_TENSOR_MAP_DATA_TYPE_UINT32, rank, scales, dims, strides, box, CU_TENSOR_MAP_SWIZZLE_NONE,
                groups > 0 ? "grouped B scales" : "B scales");
}

// Raises the dynamic shared memory limit of `fn` once per (device, kernel).
Status ensure_smem(const sm90::WgmmaKernel& k) {
  static std::mutex mu;
  static std::set<std::pair<int, const void*>> done;
  int dev = 0;
  FP4KIT_CUDA_RETURN(cudaGetDevice(&dev), "gemm: cudaGetDevice");
  std::lock_guard<std::mutex> lock(mu);
  const auto key = std::make_pair(dev, reinterpret_cast<const void*>(k.fn));
  if (done.count(key)) return Status::ok();
  FP4KIT_CUDA_RETURN(cudaFuncSetAttribute(reinterpret_cast<const void*>(k.fn),
                                          cudaFuncAttributeMaxDynamicSharedMemorySize, k.smem_bytes),
                     "gemm: wgmma shared memory attribute");
  done.insert(key);
  return Status::ok();
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Launch configuration of `k`: `grid` CTAs in clusters of `ks` along x (ks = 1: no cluster attribute),
// with programmatic stream serialization when `pdl` (`attr` holds the attributes).
cudaLaunchConfig_t launch_config(const sm90::WgmmaKernel& k, int64_t grid, int ks, bool pdl, cudaStream_t stream,
                                 cudaLaunchAttribute (&attr)[2]) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(unsigned(grid));
  cfg.blockDim = dim3(sm90::kWgThreads);
  cfg.dynamicSmemBytes = size_t(k.smem_bytes);
  cfg.stream = stream;
  cfg.attrs = attr;
  cfg.numAttrs = 0;
  if (ks > 1) {
    cudaLaunchAttribute& a = attr[cfg.numAttrs++];
    a.id = cudaLaunchAttributeClusterDimension;
    a.val.clusterDim.x = unsigned(ks);
    a.val.clusterDim.y = 1;
    a.val.clusterDim.z = 1;
  }
  if (pdl) {
    cudaLaunchAttribute& a = attr[cfg.numAttrs++];
    a.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    a.val.programmaticStreamSerializationAllowed = 1;
  }
  return cfg;
}

// How many clusters of `ks` CTAs of `k` can be resident at once (cudaOccupancyMaxActiveClusters, cached
// per device, kernel and cluster size); 0 when that cannot be asked (no device).
int64_t resident_clusters(const sm90::WgmmaKernel& k, int ks) {
  static std::mutex mu;
  static std::map<std::tuple<int, const void*, int>, int> cache;  // (device, kernel, ks) -> max clusters
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return 0;
  const auto key = std::make_tuple(dev, reinterpret_cast<const void*>(k.fn), ks);
  int n = 0;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(key);
    if (it != cache.end()) {
      n = it->second;
    } else {
      if (!ensure_smem(k).is_ok()) {
        (void)cudaGetLastError();
        return 0;
      }
      cudaLaunchAttribute attr[2];
      const cudaLaunchConfig_t cfg = launch_config(k, ks, ks, false, nullptr, attr);
      if (cudaOccupancyMaxActiveClusters(&n, reinterpret_cast<const void*>(k.fn), &cfg) != cudaSuccess) {
        (void)cudaGetLastError();
        n = 0;
      }
      cache[key] = n;
    }
  }
  return n;
}

// Whether `grid` CTAs of `k` in clusters of `ks` can all be resident at once. The cluster split-K needs
// no co-residency for correctness, but a second wave of clusters would cost more than the global-memory
// reduction saves.
bool clusters_fit(const sm90::WgmmaKernel& k, int ks, int64_t grid) { return resident_clusters(k, ks) * ks >= grid; }

// FP4KIT_NO_CLUSTER_SPLITK=1 (read once): split-K always through the workspace, for A/B
// measurements of the two reductions (docs/GEMM.md).
bool cluster_splitk_disabled() {
  static const bool off = [] {
    const char* e = std::getenv("FP4KIT_NO_CLUSTER_SPLITK");
    return e && e[0] && e[0] != '0';
  }();
  return off;
}

// Work decomposition of a dense launch (wgmma_kernel.cuh): data-parallel tiles with split-K
// (the factor: wgmma_k_splits in tactics.h), or stream-K (Tactic::stream_k). Split-K reduces
// inside clusters of k_splits CTAs (distributed shared memory, no workspace) when the tile's
// accumulators fit in the pipeline stages, k_splits is 2, 4 or 8 and every cluster is resident
// at once; else through the workspace (partials + arrival counters). gemm_workspace_bytes and the
// launch take the same decision (same inputs; the occupancy answer is cached per device).
struct WgSplit {
  int64_t tiles, k_splits, grid;
  int64_t dp_tiles;  // tiles run whole before the split ones (Tactic::split_tail; else 0); -1: not applicable
  bool stream_k;
  bool cluster;
  size_t partial_bytes, counter_bytes;
};

WgSplit wgmma_split(const Tactic& t, const GemmParams& p) {
  const int sms = device_info().available ? device_info().sm_count : 132;
  WgSplit w;
  w.tiles = ceil_div(p.n, t.block_n) * ceil_div(p.m, t.block_m);
  // The kernel's K units (chunks, or chunk pairs for two-stage steps). The split-K factor is the
  // one-stage tile's (from chunks), at most one split per unit: the step does not change the
  // decomposition where K allows it (with units, the >= 4-per-split cap halved the splits of K <= 2048).
  const int64_t k_chunks = prepacked_shape(p.n, p.k).k_chunks, units = k_units(t, p);
  const int64_t per_unit = 256 * (t.block_n / 128) * (t.block_m / 2);  // floats per partial
  w.stream_k = t.stream_k;
  w.cluster = false;
  w.dp_tiles = 0;
  w.partial_bytes = w.counter_bytes = 0;
  if (t.split_tail) {
    // Full waves of whole tiles on an even persistent grid, then the last wave's tiles as two K halves,
    // the CTAs of each 2-CTA cluster taking one half each (pairs 2j, 2j + 1 reach the tail together:
    // the whole tiles are a multiple of the grid). Only the cluster reduction (no workspace path). The
    // grid is as many CTAs as resident 2-CTA clusters hold (H100 / H200: 66 = all 132 SMs), so that it
    // runs in one persistent wave; without a device to ask, one per SM.
    const sm90::WgmmaKernel k = kernel_for(t, p);
    w.k_splits = 2;
    w.grid = sms - sms % 2;
    if (k.fn) {
      const int64_t fit = resident_clusters(k, 2);
      if (fit > 0) w.grid = std::min<int64_t>(w.grid, 2 * fit);
    }
    w.dp_tiles = k.fn && k.cluster_reduce ? wgmma_split_tail_dp_tiles(w.tiles, units, w.grid) : -1;
    w.cluster = w.dp_tiles > 0;
    return w;
  }
  if (w.stream_k) {
    // One range per SM, each at least 4 units (shorter ones are all pipeline fill).
    w.k_splits = 1;
    w.grid = std::clamp<int64_t>(w.tiles * units / 4, 1, sms);
    w.partial_bytes = size_t(w.grid * 2 * per_unit) * 4;
    w.counter_bytes = size_t(w.tiles) * 4;
    return w;
  }
  w.k_splits = std::min(wgmma_k_splits(w.tiles, k_chunks, sms), units);
  const sm90::WgmmaKernel k = kernel_for(t, p);
  // Short K (<= 32 chunks): a 4- or 8-way split whose clusters do not all fit (H100: 30 resident clusters
  // of 4, 120 CTAs, for 128 tile-splits) would reduce through the workspace; halve it while the halved
  // split's clusters fit instead (wgmma_split_shrink_rule, tactics.h). H100 session 45, graph replay:
  // 2048x1024 M = 40..64 8.6 -> 5.1..5.5 us, 2048x2048 M = 17..64 9.4..10.0 -> 6.0..7.4, 4096x1024 M = 17..32
  // 8.6..8.9 -> 5.2..5.7 (W4A16; W4A4 0.69..0.80x); every other short-K point unchanged.
  if (wgmma_split_shrink_rule().get() != 0 && k.fn && k.cluster_reduce && !cluster_splitk_disabled()) {
    w.k_splits = wgmma_short_k_splits(w.k_splits, w.tiles, k_chunks, sms, [&](int c) { return resident_clusters(k, c); });
  }
  w.grid = std::max<int64_t>(1, std::min<int64_t>(w.tiles * w.k_splits, sms));
  // Cluster sizes 2, 4 and 8 only: the sizes compute-sanitizer racecheck has passed on (with the
  // sizes 3, 5, 6 and 7 of docs/wip/cluster-splitk-shrink.patch racecheck never finished).
  const bool pow2 = (w.k_splits & (w.k_splits - 1)) == 0;
  w.cluster = w.k_splits > 1 && w.k_splits <= 8 && pow2 && k.fn && k.cluster_reduce &&
              w.grid == w.tiles * w.k_splits && !cluster_splitk_disabled() && clusters_fit(k, int(w.k_splits), w.grid);
  if (w.cluster) {
    w.partial_bytes = w.counter_bytes = 0;
    return w;
  }
  w.partial_bytes = w.k_splits > 1 ? size_t(w.tiles * w.k_splits * per_unit) * 4 : 0;
  w.counter_bytes = w.k_splits > 1 ? size_t(w.tiles) * 4 : 0;
  return w;
}

// The vector epilogue writes 8 outputs (16 bytes) at once: D and its rows must be 16-byte aligned.
int vec_epilogue_ok(const void* d, int64_t ldd, int64_t n) {
  return reinterpret_cast<uintptr_t>(d) % 16 == 0 && ldd % 8 == 0 && n % 8 == 0 ? 1 : 0;
}

}  // namespace

Status wgmma_can_implement(const Tactic& t, const GemmParams& p) {
  const sm90::WgmmaKernel k = kernel_for(t, p);
  if (!k.fn) return Status(StatusCode::kNotSupported, "tactic " + t.name + ": not instantiated");
  const int64_t tiles = ceil_div(p.n, t.block_n) * ceil_div(p.m, t.block_m);
  if (tiles >= (int64_t(1) << 31) || prepacked_shape(p.n, p.k).k_chunks >= (int64_t(1) << 31))
    return Status(StatusCode::kNotSupported, "tactic " + t.name + ": too many tiles");
  if (t.split_tail && wgmma_split(t, p).dp_tiles < 0)
    return Status(StatusCode::kNotSupported, "tactic " + t.name +
                                                 ": no split tail (needs a full wave of tiles, then at most half "
                                                 "a wave, and K >= 512)");
  return Status::ok();
}

size_t wgmma_workspace_bytes(const Tactic& t, const GemmParams& p) {
  const WgSplit w = wgmma_split(t, p);
  // Staged activations (W4A4; a multiple of 256 bytes), then the split-K partials and counters.
  return staged_a_bytes(p) + w.partial_bytes + w.counter_bytes;
}

Status wgmma_launch(const Tactic& t, const GemmParams& p_in, void* workspace, size_t, cudaStream_t stream) {
  const sm90::WgmmaKernel k = kernel_for(t, p_in);
  if (!k.fn) return Status(StatusCode::kNotSupported, "tactic " + t.name + ": not instantiated");
  const WgSplit split = wgmma_split(t, p_in);
  if (split.dp_tiles < 0) return Status(StatusCode::kNotSupported, "tactic " + t.name + ": no split tail here");
  GemmParams p = p_in;
  // W4A4: the staging kernel is launched in plain stream order, the GEMM behind it early (PDL). Launched
  // early itself, the staging kernel's few CTAs crowd onto the SMs that the previous persistent GEMM
  // leaves free and then run there; H100 session 24, graph us, W4A4 M = 24..256: 4096x4096 and
  // 8192x8192 -4..-16 % against the staging kernel early and the GEMM not, 2-12 % ahead of both
  // early (6144x4096: both early up to 4 % ahead).
  p.enable_pdl = false;
  FP4KIT_RETURN_IF_ERROR(stage_activations(p, workspace, stream));
  const PrepackedShape s = prepacked_shape(p.n, p.k);
  const int64_t lda = p.lda ? p.lda : p.k;

  EncodeTiledFn fn = nullptr;
  FP4KIT_RETURN_IF_ERROR(encode_fn(&fn));
  CUtensorMap map_a, map_w, map_s;
  FP4KIT_RETURN_IF_ERROR(encode_activation_map(fn, &map_a, p.a_dtype, p.a, p.k, p.m, lda, t.block_m));
  FP4KIT_RETURN_IF_ERROR(encode_weight_maps(fn, &map_w, &map_s, p.b_prepacked, s, 0, t.block_n));

  sm90::WgmmaGemmArgs a{};
  a.m = int(p.m);
  a.n = int(p.n);
  a.k_chunks = int(k_units(t, p));
  a.n_tiles = int(ceil_div(p.n, t.block_n));
  a.m_tiles = int(ceil_div(p.m, t.block_m));
  a.num_tiles = a.n_tiles * a.m_tiles;
  a.alpha = p.alpha;
  a.bias = p.bias;
  a.d = p.d;
  a.ldd = p.ldd ? p.ldd : p.n;
  a.vec_epilogue = vec_epilogue_ok(p.d, a.ldd, p.n);
  a.k_splits = int(split.k_splits);
  a.dp_tiles = int(split.dp_tiles);
  a.stream_k = split.stream_k ? 1 : 0;
  if (split.counter_bytes > 0) {
    uint8_t* ws = static_cast<uint8_t*>(workspace) + staged_a_bytes(p_in);
    a.partials = reinterpret_cast<float*>(ws);
    a.counters = reinterpret_cast<int*>(ws + split.partial_bytes);
    // The kernel leaves the counters at zero; clearing them here too makes a fresh workspace safe.
    FP4KIT_CUDA_RETURN(cudaMemsetAsync(a.counters, 0, split.counter_bytes, stream), "gemm: split-K counter reset");
  }

  FP4KIT_RETURN_IF_ERROR(ensure_smem(k));
  if (split.cluster) a.cluster_splits = int(split.k_splits);
  // GemmParams::enable_pdl: the kernel requests its first stages' weights before its PDL wait
  // (wgmma_kernel.cuh), overlapping the previous kernel's tail (W4A4: the activation staging). H100
  // session 24, graph us, M = 24..256, against no PDL: W4A16 -1..-9 % (4096x14336 within +-3 %).
  cudaLaunchAttribute attr[2];
  const cudaLaunchConfig_t cfg =
      launch_config(k, split.grid, split.cluster ? int(split.k_splits) : 1, p_in.enable_pdl, stream, attr);
  const cudaError_t e = cudaLaunchKernelEx(&cfg, k.fn, map_a, map_w, map_s, a);
  return detail::cuda_status(e == cudaSuccess ? cudaGetLastError() : e, ("gemm: launch " + t.name).c_str());
}

// ---- grouped mode (gemm/grouped.h) ------------------------------------------------------------------
namespace {
sm90::WgmmaKernel grouped_kernel_for(const GroupedTactic& t, const GroupedGemmParams& p) {
  if (p.a_dtype == DType::kBF16) return sm90::grouped_wgmma_kernel_for<__nv_bfloat16>(t.block_n, t.block_m, t.stages);
  return sm90::grouped_wgmma_kernel_for<__half>(t.block_n, t.block_m, t.stages);
}
}  // namespace

Status grouped_wgmma_can_implement(const GroupedTactic& t, const GroupedGemmParams& p) {
  if (!grouped_kernel_for(t, p).fn)
    return Status(StatusCode::kNotSupported, std::string("grouped tactic ") + t.name + ": not instantiated");
  if (p.groups > sm90::kWgMaxGroups)
    return Status(StatusCode::kNotSupported, std::string("grouped tactic ") + t.name + ": more than " +
                                                 std::to_string(sm90::kWgMaxGroups) + " groups");
  // Tiles of all groups together: at most ceil(rows/BM) + groups m tiles per n tile.
  const int64_t m_tiles = ceil_div(p.max_rows, t.block_m) + p.groups;
  if (m_tiles * ceil_div(p.n, t.block_n) >= (int64_t(1) << 31))
    return Status(StatusCode::kNotSupported, std::string("grouped tactic ") + t.name + ": too many tiles");
  if (p.row_token != nullptr && t.block_n != sm90::kGatherRowsBN)
    return Status(StatusCode::kNotSupported, std::string("grouped tactic ") + t.name +
                                                 ": gathered A rows (row_token) need " +
                                                 std::to_string(sm90::kGatherRowsBN) + " weight rows per tile");
  return Status::ok();
}

Status grouped_wgmma_launch(const GroupedTactic& t, const GroupedGemmParams& p, cudaStream_t stream) {
  const sm90::WgmmaKernel k = grouped_kernel_for(t, p);
  if (!k.fn) return Status(StatusCode::kNotSupported, std::string("grouped tactic ") + t.name + ": not instantiated");
  const PrepackedShape s = prepacked_shape(p.n, p.k);
  const int64_t lda = p.lda ? p.lda : p.k;
  EncodeTiledFn fn = nullptr;
  FP4KIT_RETURN_IF_ERROR(encode_fn(&fn));
  CUtensorMap map_a, map_w, map_s;
  // Gathered rows: a map over the source matrix with single-row boxes (wg_gather_producer).
  const bool gathered = p.row_token != nullptr;
  FP4KIT_RETURN_IF_ERROR(encode_activation_map(fn, &map_a, p.a_dtype, p.a, p.k, gathered ? p.a_rows : p.max_rows, lda,
                                               gathered ? 1 : t.block_m));
  FP4KIT_RETURN_IF_ERROR(encode_weight_maps(fn, &map_w, &map_s, p.b_prepacked, s, p.groups, t.block_n));
  sm90::WgmmaGemmArgs a{};
  a.m = 0;
  a.n = int(p.n);
  a.k_chunks = int(s.k_chunks);
  a.n_tiles = int(ceil_div(p.n, t.block_n));
  a.m_tiles = 0;
  a.num_tiles = 0;  // counted on the device
  a.alpha = p.alpha;
  a.bias = nullptr;
  a.d = p.d;
  a.ldd = p.ldd ? p.ldd : p.n;
  a.vec_epilogue = vec_epilogue_ok(p.d, a.ldd, p.n);
  a.store_warps = gathered ? 0 : sm90::grouped_store_warps(a.vec_epilogue, a.k_chunks);
  a.row_token = p.row_token;
  a.offsets = p.offsets;
  a.groups = int(p.groups);
  a.k_splits = 1;
  FP4KIT_RETURN_IF_ERROR(ensure_smem(k));
  const int sms = device_info().available ? device_info().sm_count : 132;
  // Persistent: one CTA per SM, or fewer when even the most tiles possible would not fill them.
  const int64_t max_tiles = (ceil_div(p.max_rows, t.block_m) + std::min(p.groups, p.max_rows)) * a.n_tiles;
  const int grid = int(std::max<int64_t>(1, std::min<int64_t>(max_tiles, sms)));
  k.fn<<<grid, sm90::kWgThreads, k.smem_bytes, stream>>>(map_a, map_w, map_s, a);
  return detail::cuda_status(cudaGetLastError(), (std::string("grouped gemm: launch ") + t.name).c_str());
}

}  // namespace fp4kit::gemm_impl
