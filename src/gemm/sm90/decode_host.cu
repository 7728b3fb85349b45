// Host side of the decode family: persistent grid size, fix-up workspace, launch.
#include <algorithm>
#include <mutex>
#include <unordered_map>

#include "common/cuda_check.h"
#include "fp4kit/device.h"
#include "gemm/stage_activations.h"
#include "gemm/families.h"
#include "gemm/prepacked_layout.h"
#include "gemm/sm90/decode_launch.cuh"

namespace fp4kit::gemm_impl {
namespace {

sm90::DecodeKernelFn kernel_for(const Tactic& t, const GemmParams& p) {
  if (t.dp) {
    if (operand_type(p) == DType::kBF16)
      return sm90::decode_dp_kernel_for<__nv_bfloat16, __nv_bfloat16, false>(t.nt, t.rows, t.unroll);
    return sm90::decode_dp_kernel_for<__half, __half, false>(t.nt, t.rows, t.unroll);
  }
  if (operand_type(p) == DType::kBF16) return sm90::decode_kernel_for<__nv_bfloat16, __nv_bfloat16>(t.nt, t.rows, t.unroll);
  return sm90::decode_kernel_for<__half, __half>(t.nt, t.rows, t.unroll);
}

// Resident CTAs per SM of a kernel (queried once per kernel; 8 without a device, the maximum).
int ctas_per_sm(sm90::DecodeKernelFn fn) {
  static std::mutex mu;
  static std::unordered_map<const void*, int> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(reinterpret_cast<const void*>(fn));
  if (it != cache.end()) return it->second;
  int n = 8;
  if (device_info().available &&
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, fn, sm90::kDecodeWarps * 32, 0) != cudaSuccess) {
    cudaGetLastError();
    n = 1;
  }
  cache[reinterpret_cast<const void*>(fn)] = std::max(n, 1);
  return std::max(n, 1);
}

struct DecodeGeometry {
  int64_t row_blocks, token_groups, k_chunks, units, ctas, warps;
  int64_t partial_floats, counters;
  int dp_kw = 8;  // dp: warps per row block
};

// dp: warps sharing a row block's K, so that each streams >= ~8 chunks (two load groups of 4):
// the largest power of two <= k_chunks / 8, within [1, 8].
int dp_warps_per_row_block(int64_t k_chunks) {
  int kw = 8;
  while (kw > 1 && k_chunks < int64_t(kw) * 8) kw /= 2;
  return kw;
}

DecodeGeometry geometry(const Tactic& t, const GemmParams& p) {
  const PrepackedShape s = prepacked_shape(p.n, p.k);
  DecodeGeometry g;
  g.row_blocks = (p.n + 16 * t.rows - 1) / (16 * t.rows);
  g.token_groups = (p.m + t.nt * 8 - 1) / (t.nt * 8);
  g.k_chunks = s.k_chunks;
  g.units = g.row_blocks * g.k_chunks;
  const int sms = device_info().available ? device_info().sm_count : 132;
  const sm90::DecodeKernelFn fn = kernel_for(t, p);
  const int64_t resident = int64_t(sms) * (fn ? ctas_per_sm(fn) : 1);
  g.ctas = std::max<int64_t>(1, std::min(resident, (g.units + sm90::kDecodeWarps - 1) / sm90::kDecodeWarps));
  g.warps = std::min(g.ctas * sm90::kDecodeWarps, g.units);
  g.partial_floats = g.token_groups * g.warps * 2 * 32 * (t.rows * t.nt * 4);
  g.counters = g.token_groups * g.row_blocks;
  if (t.dp) {  // CTAs of 8 / kw row blocks; partial sums stay in shared memory
    g.dp_kw = dp_warps_per_row_block(g.k_chunks);
    g.ctas = (g.row_blocks + sm90::kDecodeWarps / g.dp_kw - 1) / (sm90::kDecodeWarps / g.dp_kw);
    g.warps = g.ctas * sm90::kDecodeWarps;
    g.partial_floats = 0;
    g.counters = 0;
  }
  return g;
}

}  // namespace

Status decode_can_implement(const Tactic& t, const GemmParams& p) {
  if (p.m > 256)
    return Status(StatusCode::kNotSupported, "tactic " + t.name + ": the decode family serves M <= 256");
  if (!kernel_for(t, p)) return Status(StatusCode::kNotSupported, "tactic " + t.name + ": not instantiated");
  const DecodeGeometry g = geometry(t, p);
  if (g.token_groups > 65535)
    return Status(StatusCode::kNotSupported, "tactic " + t.name + ": too many token groups");
  if (t.dp && g.ctas >= (int64_t(1) << 31))
    return Status(StatusCode::kNotSupported, "tactic " + t.name + ": too many row blocks");
  return Status::ok();
}

// Workspace: [staged A (W4A4 only)][partials][counters].
size_t decode_workspace_bytes(const Tactic& t, const GemmParams& p) {
  const DecodeGeometry g = geometry(t, p);
  return staged_a_bytes(p) + size_t(g.partial_floats) * 4 + size_t(g.counters) * 4;
}

Status decode_launch(const Tactic& t, const GemmParams& p_in, void* workspace, size_t workspace_bytes,
                     cudaStream_t stream) {
  const DecodeGeometry g = geometry(t, p_in);
  GemmParams p = p_in;
  FP4KIT_RETURN_IF_ERROR(stage_activations(p, workspace, stream));
  workspace = static_cast<uint8_t*>(workspace) + staged_a_bytes(p_in);
  const PrepackedShape s = prepacked_shape(p.n, p.k);
  sm90::DecodeGemmArgs a{};
  a.m = int(p.m);
  a.n = int(p.n);
  a.k = int(p.k);
  a.a = p.a;
  a.lda = p.lda ? p.lda : p.k;
  a.b_codes = static_cast<const uint4*>(p.b_prepacked);
  a.b_scales = reinterpret_cast<const uint2*>(static_cast<const uint8_t*>(p.b_prepacked) + s.code_bytes());
  a.k_chunks = g.k_chunks;
  a.row_blocks = g.row_blocks;
  a.alpha = p.alpha;
  a.bias = p.bias;
  a.d = p.d;
  a.ldd = p.ldd ? p.ldd : p.n;
  a.partials = static_cast<float*>(workspace);
  a.counters = reinterpret_cast<int*>(a.partials + g.partial_floats);
  a.slots = 1;
  a.dp_kw = g.dp_kw;
  // The kernel leaves the counters at zero; clearing them here as well makes a workspace that was
  // never initialized (or was used by an aborted launch) safe. A memset node is graph-capturable.
  if (g.counters > 0)
    FP4KIT_CUDA_RETURN(cudaMemsetAsync(a.counters, 0, size_t(g.counters) * 4, stream), "gemm: counter reset");
  const sm90::DecodeKernelFn fn = kernel_for(t, p);
  fn<<<dim3(unsigned(g.ctas), unsigned(g.token_groups)), sm90::kDecodeWarps * 32, 0, stream>>>(a);
  return detail::cuda_status(cudaGetLastError(), ("gemm: launch " + t.name).c_str());
}

// ---- grouped mode (gemm/grouped.h) ------------------------------------------------------------------
namespace {

sm90::DecodeKernelFn grouped_kernel_for(const GroupedTactic& t, const GroupedGemmParams& p) {
  if (t.dp) {
    if (p.a_dtype == DType::kBF16) return sm90::decode_dp_kernel_for<__nv_bfloat16, __nv_bfloat16, true>(t.nt, t.rows, t.unroll);
    return sm90::decode_dp_kernel_for<__half, __half, true>(t.nt, t.rows, t.unroll);
  }
  if (p.a_dtype == DType::kBF16) return sm90::grouped_decode_kernel_for<__nv_bfloat16>(t.nt, t.rows, t.unroll);
  return sm90::grouped_decode_kernel_for<__half>(t.nt, t.rows, t.unroll);
}

// Slots: at most one per group and one per row (a group with rows is active), so the static unit
// list covers every active group however the rows are distributed.
DecodeGeometry grouped_geometry(const GroupedTactic& t, const GroupedGemmParams& p, int64_t* slots) {
  const PrepackedShape s = prepacked_shape(p.n, p.k);
  *slots = std::max<int64_t>(1, std::min(p.groups, p.max_rows));
  DecodeGeometry g;
  g.row_blocks = (p.n + 16 * t.rows - 1) / (16 * t.rows);
  // max_group_rows == 0: unknown, any group may hold all rows.
  const int64_t group_rows = p.max_group_rows > 0 ? std::min(p.max_group_rows, p.max_rows) : p.max_rows;
  g.token_groups = std::max<int64_t>(1, (group_rows + t.nt * 8 - 1) / (t.nt * 8));
  g.k_chunks = s.k_chunks;
  g.units = *slots * g.row_blocks * g.k_chunks;
  const int sms = device_info().available ? device_info().sm_count : 132;
  const sm90::DecodeKernelFn fn = grouped_kernel_for(t, p);
  const int64_t resident = int64_t(sms) * (fn ? ctas_per_sm(fn) : 1);
  g.ctas = std::max<int64_t>(1, std::min(resident, (g.units + sm90::kDecodeWarps - 1) / sm90::kDecodeWarps));
  g.warps = std::min(g.ctas * sm90::kDecodeWarps, g.units);
  g.partial_floats = g.token_groups * g.warps * 2 * 32 * (t.rows * t.nt * 4);
  g.counters = g.token_groups * *slots * g.row_blocks;
  if (t.dp) {  // per slot, CTAs of 8 / kw row blocks
    g.dp_kw = dp_warps_per_row_block(g.k_chunks);
    g.ctas = *slots * ((g.row_blocks + sm90::kDecodeWarps / g.dp_kw - 1) / (sm90::kDecodeWarps / g.dp_kw));
    g.warps = g.ctas * sm90::kDecodeWarps;
    g.partial_floats = 0;
    g.counters = 0;
  }
  return g;
}

}  // namespace

Status grouped_decode_can_implement(const GroupedTactic& t, const GroupedGemmParams& p) {
  if (!grouped_kernel_for(t, p)) return Status(StatusCode::kNotSupported, std::string("grouped tactic ") + t.name + ": not instantiated");
  int64_t slots = 0;
  const DecodeGeometry g = grouped_geometry(t, p, &slots);
  if (g.token_groups > 65535)
    return Status(StatusCode::kNotSupported, std::string("grouped tactic ") + t.name + ": too many token groups");
  if (t.dp && g.ctas >= (int64_t(1) << 31))
    return Status(StatusCode::kNotSupported, std::string("grouped tactic ") + t.name + ": too many row blocks");
  return Status::ok();
}

size_t grouped_decode_workspace_bytes(const GroupedTactic& t, const GroupedGemmParams& p) {
  int64_t slots = 0;
  const DecodeGeometry g = grouped_geometry(t, p, &slots);
  return size_t(g.partial_floats) * 4 + size_t(g.counters) * 4;
}

Status grouped_decode_launch(const GroupedTactic& t, const GroupedGemmParams& p, void* workspace, cudaStream_t stream) {
  int64_t slots = 0;
  const DecodeGeometry g = grouped_geometry(t, p, &slots);
  const PrepackedShape s = prepacked_shape(p.n, p.k);
  sm90::DecodeGemmArgs a{};
  a.m = 0;  // per group
  a.n = int(p.n);
  a.k = int(p.k);
  a.a = p.a;
  a.lda = p.lda ? p.lda : p.k;
  a.b_codes = static_cast<const uint4*>(p.b_prepacked);
  a.b_scales = nullptr;  // per group
  a.k_chunks = g.k_chunks;
  a.row_blocks = g.row_blocks;
  a.alpha = p.alpha;
  a.bias = nullptr;
  a.d = p.d;
  a.ldd = p.ldd ? p.ldd : p.n;
  a.partials = static_cast<float*>(workspace);
  a.counters = reinterpret_cast<int*>(a.partials + g.partial_floats);
  a.slots = slots;
  a.offsets = p.offsets;
  a.active = p.active;
  a.num_active = p.num_active;
  a.group_bytes = s.bytes();
  a.code_bytes = s.code_bytes();
  a.dp_kw = g.dp_kw;
  if (g.counters > 0)
    FP4KIT_CUDA_RETURN(cudaMemsetAsync(a.counters, 0, size_t(g.counters) * 4, stream), "grouped gemm: counter reset");
  const sm90::DecodeKernelFn fn = grouped_kernel_for(t, p);
  fn<<<dim3(unsigned(g.ctas), unsigned(g.token_groups)), sm90::kDecodeWarps * 32, 0, stream>>>(a);
  return detail::cuda_status(cudaGetLastError(), (std::string("grouped gemm: launch ") + t.name).c_str());
}

}  // namespace fp4kit::gemm_impl
