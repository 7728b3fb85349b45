#include "gemm/tactics.h"

#include <algorithm>

namespace fp4kit::gemm_impl {

const std::vector<Tactic>& tactic_table() {
  static const std::vector<Tactic> table = [] {
    std::vector<Tactic> t;
    int id = 0;
    for (int nt : {1, 2, 4})
      for (int u : {2, 4})
        for (int splits : {1, 2, 4, 8}) {
          Tactic x{id++, Family::kDecode};
          x.nt = nt;
          x.unroll = u;
          x.splits = splits;
          x.name = "decode_n" + std::to_string(nt * 8) + "_u" + std::to_string(u) + "_sk" + std::to_string(splits);
          t.push_back(x);
        }
    return t;
  }();
  return table;
}

const Tactic* find_tactic(int id) {
  const auto& t = tactic_table();
  return (id >= 0 && id < int(t.size())) ? &t[id] : nullptr;
}

static int decode_id(int nt, int u, int splits) {
  for (const Tactic& t : tactic_table())
    if (t.family == Family::kDecode && t.nt == nt && t.unroll == u && t.splits == splits) return t.id;
  return 0;
}

int heuristic_tactic(const GemmParams& p, int sm_count) {
  const int nt = p.m <= 8 ? 1 : p.m <= 16 ? 2 : 4;
  const int64_t token_groups = (p.m + nt * 8 - 1) / (nt * 8);
  const int64_t row_tiles = (p.n + 63) / 64 * 4;
  const int64_t k_chunks = (p.k + 63) / 64;
  // Enough CTAs for two per SM; split K only while every warp still gets >= 4 chunks.
  int splits = 1;
  while (splits < 8 && row_tiles * token_groups * splits < 2 * int64_t(sm_count) &&
         k_chunks / (8 * splits * 2) >= 4)
    splits *= 2;
  return decode_id(nt, 4, splits);
}

}  // namespace fp4kit::gemm_impl
