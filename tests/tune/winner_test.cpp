// The winner rule of tune_gemm / tune_moe (CPU): fastest tactic, but the heuristic's is kept
// unless beaten by more than kTuneTieMargin.
#include <gtest/gtest.h>

#include "fp4kit/tune.h"
#include "tune/winner.h"

namespace fp4kit {
namespace {

TuneResult point(int heuristic, std::vector<std::pair<int, double>> times) {
  TuneResult r;
  r.heuristic_tactic = heuristic;
  for (auto [id, us] : times) {
    TacticTiming t;
    t.tactic = id;
    t.name = "t" + std::to_string(id);
    t.us = us;
    r.timings.push_back(t);
  }
  return r;
}

TEST(TuneWinner, FastestWinsWhenClearlyFaster) {
  TuneResult r = point(1, {{0, 10.0}, {1, 12.0}, {2, -1}});
  tune_impl::pick_winner(&r);
  EXPECT_EQ(r.best_tactic, 0);
  EXPECT_EQ(r.best_name, "t0");
  EXPECT_DOUBLE_EQ(r.best_us, 10.0);
  EXPECT_DOUBLE_EQ(r.heuristic_us, 12.0);
}

TEST(TuneWinner, HeuristicKeptWithinTheTieMargin) {
  const double h = 100.0, fast = h / (1.0 + tune_impl::kTuneTieMargin) + 1e-9;  // just inside
  TuneResult r = point(3, {{0, fast}, {3, h}});
  tune_impl::pick_winner(&r);
  EXPECT_EQ(r.best_tactic, 3);
  EXPECT_EQ(r.best_name, "t3");
  EXPECT_DOUBLE_EQ(r.best_us, h);
  TuneResult r2 = point(3, {{0, h / (1.0 + tune_impl::kTuneTieMargin) - 1e-6}, {3, h}});  // just outside
  tune_impl::pick_winner(&r2);
  EXPECT_EQ(r2.best_tactic, 0);
}

TEST(TuneWinner, FailedHeuristicOrNothingRan) {
  TuneResult r = point(2, {{0, 10.0}, {2, -1}});
  tune_impl::pick_winner(&r);
  EXPECT_EQ(r.best_tactic, 0);
  EXPECT_LT(r.heuristic_us, 0);
  TuneResult none = point(0, {{0, -1}, {1, -1}});
  tune_impl::pick_winner(&none);
  EXPECT_EQ(none.best_tactic, -1);
}

}  // namespace
}  // namespace fp4kit
