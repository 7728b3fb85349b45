// The GEMM tactic table: every kernel configuration gemm() can run, each answering the CUTLASS
// host questions (can_implement, workspace size, launch). The autotuner enumerates this table.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "fp4kit/gemm.h"

namespace fp4kit::gemm_impl {

enum class Family { kDecode, kWgmma };

struct Tactic {
  int id;
  Family family;
  // decode family
  int nt = 0;      // 8-token MMA tiles (tokens per pass = 8 nt)
  int rows = 0;    // 16-row tiles per warp work unit
  int unroll = 0;  // chunks per load group
  bool dp = false;  // data-parallel row blocks with split-K inside the CTA (else stream-K over warps)
  // wgmma family
  int block_n = 0;  // weight rows per CTA (the wgmma M side)
  int block_m = 0;  // tokens per CTA (the wgmma N side)
  int stages = 0;
  std::string name;
};

const std::vector<Tactic>& tactic_table();
const Tactic* find_tactic(int id);

// Problem-independent checks are done by gemm(); these answer per tactic.
Status can_implement(const Tactic& t, const GemmParams& p);
size_t workspace_bytes(const Tactic& t, const GemmParams& p);
Status launch(const Tactic& t, const GemmParams& p, void* workspace, size_t workspace_bytes, cudaStream_t stream);

// Split-K factor of a dense wgmma launch with `tiles` output tiles over `k_chunks` 64-K chunks:
// about one wave of (tile, split) units on `sms` SMs, each split >= 4 chunks, at most 16; 1 when
// the tiles already fill the SMs (sm90/wgmma_kernel.cuh).
int64_t wgmma_k_splits(int64_t tiles, int64_t k_chunks, int sms);

// Shape heuristic used for tactic = -1 until a tuned entry exists.
int heuristic_tactic(const GemmParams& p, int sm_count);
// The data-parallel decode tactic for m tokens over `rows` weight rows of depth k, or -1 when
// stream-K is the better decomposition (too few CTAs to fill the GPU).
int decode_dp_heuristic(int64_t m, int64_t rows, int64_t k, int sm_count);

}  // namespace fp4kit::gemm_impl
