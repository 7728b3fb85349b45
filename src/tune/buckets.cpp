// M buckets of the autotuner: FlashInfer's hybrid buckets (get_hybrid_num_tokens_buckets and
// map_to_hybrid_bucket_uncapped in flashinfer/fused_moe/utils.py; spec §4.4), with round-up mapping,
// plus one bucket of our own at 24 tokens: the decode family's 24-token tile (tactic 64) pays only at
// 17..24 tokens, and a bucket timed at 32 (where that tile takes two passes) never chose it, so a tuned
// cache overrode the heuristic with a slower tile there (docs/TUNING.md "M buckets").
#include <cstdint>
#include <vector>

#include "fp4kit/tune.h"

namespace fp4kit {
namespace {

// Saturates at 2^62 (the largest power of two in int64): a doubling past it would wrap to 0 and
// never reach x.
int64_t next_pow2(int64_t x) {
  int64_t p = 1;
  while (p < x && p < (int64_t(1) << 62)) p <<= 1;
  return p;
}

int64_t ceil_to(int64_t x, int64_t step) { return (x + step - 1) / step * step; }

}  // namespace

std::vector<int64_t> tune_m_buckets(int64_t max_m) {
  std::vector<int64_t> b;
  if (max_m <= 0) return b;
  for (int64_t m = 1; m <= 256 && m <= max_m; m <<= 1) {
    b.push_back(m);
    if (m == 16 && kTuneBucket24 <= max_m) b.push_back(kTuneBucket24);
  }
  for (int64_t m = 512; m <= 2048 && m <= max_m; m += 256) b.push_back(m);
  for (int64_t m = 2560; m <= 4096 && m <= max_m; m += 512) b.push_back(m);
  for (int64_t m = 8192; m <= max_m && m > 0; m <<= 1) b.push_back(m);
  if (b.back() != max_m) b.push_back(max_m);
  return b;
}

int64_t tune_m_bucket(int64_t m) {
  if (m <= 0) return 1;
  if (m > 16 && m <= kTuneBucket24) return kTuneBucket24;
  if (m <= 256) return next_pow2(m);
  if (m <= 2048) return ceil_to(m, 256);
  if (m <= 4096) return ceil_to(m, 512);
  return next_pow2(m);
}

}  // namespace fp4kit
