// The tuning winner rule (tune/winner.h).
#include "tune/winner.h"

namespace fp4kit::tune_impl {

void pick_winner(TuneResult* r) {
  r->best_tactic = -1;
  r->best_name.clear();
  r->best_us = -1;
  r->heuristic_us = -1;
  for (const TacticTiming& t : r->timings) {
    if (t.us >= 0 && (r->best_tactic < 0 || t.us < r->best_us)) {
      r->best_tactic = t.tactic;
      r->best_name = t.name;
      r->best_us = t.us;
    }
    if (t.tactic == r->heuristic_tactic) r->heuristic_us = t.us;
  }
  // A near-tie is not evidence: timings of equally fast tactics swap from run to run (and between
  // graph replay here and eager calls elsewhere).
  if (r->heuristic_us >= 0 && r->best_tactic != r->heuristic_tactic &&
      r->best_us * (1.0 + kTuneTieMargin) >= r->heuristic_us) {
    r->best_tactic = r->heuristic_tactic;
    r->best_us = r->heuristic_us;
    for (const TacticTiming& t : r->timings)
      if (t.tactic == r->heuristic_tactic) r->best_name = t.name;
  }
}

void finish_point(TuneResult&& r, TuneCache* cache,
                  const std::function<void(const TuneResult&, int index, int total)>& progress, int index, int total,
                  std::vector<TuneResult>* results) {
  pick_winner(&r);
  if (cache && r.best_tactic >= 0) {
    TuneEntry e;
    e.key = r.key;
    e.tactic = r.best_tactic;
    e.tactic_name = r.best_name;
    e.us = r.best_us;
    cache->insert(std::move(e));
  }
  if (progress) progress(r, index, total);
  if (results) results->push_back(std::move(r));
}

}  // namespace fp4kit::tune_impl
