// Which tactic a tuning point records (tune_gemm and tune_moe share the rule).
#pragma once

#include <functional>
#include <utility>
#include <vector>

#include "fp4kit/tune.h"

namespace fp4kit::tune_impl {

// The heuristic's tactic is kept unless another one is faster by more than this fraction.
inline constexpr double kTuneTieMargin = 0.015;

// From r->timings and r->heuristic_tactic: sets r->heuristic_us (< 0 when it did not run) and
// r->best_tactic / best_name / best_us = the fastest tactic that ran, or the heuristic's when the
// fastest beats it by no more than kTuneTieMargin. best_tactic = -1 when nothing ran.
void pick_winner(TuneResult* r);

// The end of one tuning point: pick_winner, insert the winner into `cache` (if any and something
// ran), report progress, append to `results` (if any).
void finish_point(TuneResult&& r, TuneCache* cache,
                  const std::function<void(const TuneResult&, int index, int total)>& progress, int index, int total,
                  std::vector<TuneResult>* results);

}  // namespace fp4kit::tune_impl
