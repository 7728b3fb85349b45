// Stream-K arithmetic shared by the decode family (warps) and the wgmma family (CTAs): `total`
// work units (k chunks of output tiles, flattened tile-major) are cut into `workers` contiguous,
// equal ranges; a tile whose chunks span several ranges is finished by the last of its workers to
// arrive, which adds every worker's partial in worker order (deterministic whatever the timing).
#pragma once

#include <cstdint>

namespace fp4kit::gemm_impl::sm90 {

// First unit of worker w.
__device__ __forceinline__ int64_t range_begin(int64_t total, int64_t workers, int64_t w) { return total * w / workers; }

// The worker whose range contains unit u.
__device__ __forceinline__ int64_t worker_of(int64_t total, int64_t workers, int64_t u) {
  int64_t w = u * workers / total;
  while (w + 1 < workers && range_begin(total, workers, w + 1) <= u) ++w;
  while (w > 0 && range_begin(total, workers, w) > u) --w;
  return w;
}

// Partial slot of worker w's segment of the tile whose first unit is `tile_first`: 0 when the
// segment starts w's range (w began inside the tile), 1 when it ends it (w began before the tile).
// A worker covers at most two partial tiles, so two slots per worker suffice.
__device__ __forceinline__ int partial_slot(int64_t total, int64_t workers, int64_t w, int64_t tile_first) {
  return range_begin(total, workers, w) >= tile_first ? 0 : 1;
}

// Arrival on a split-K / stream-K tile counter: one thread's release-acquire add at GPU scope,
// after a barrier (bar.sync / __syncwarp) of the threads whose partials it publishes, and before a
// barrier that hands its answer to them (CUTLASS's semaphore pattern). Their partial stores happen
// before the release; the last arriver's acquire orders every unit's partials before its reads.
// __threadfence() by every thread instead (MEMBAR.SC.GPU + ERRBAR) was 11 % of a split-K 128x64
// wgmma tile's samples at M = 64 (ncu, H100).
__device__ __forceinline__ int arrive_acq_rel(int* counter) {
  int old;
  asm volatile("atom.add.acq_rel.gpu.global.s32 %0, [%1], 1;" : "=r"(old) : "l"(counter) : "memory");
  return old;
}

}  // namespace fp4kit::gemm_impl::sm90
