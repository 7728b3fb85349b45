// fp4kit/tune.h — the autotuner: M buckets, the persistent tuning cache, the GEMM profiler.
//
// gemm() with GemmParams::tactic == -1 looks the problem up in the process-wide tuning cache
// (default_tune_cache()): a hit whose tactic can run the problem is used, otherwise the shape
// heuristic. `fp4kit tune` (or tune_gemm()) fills the cache. Details: docs/TUNING.md.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fp4kit/gemm.h"
#include "fp4kit/status.h"
#include "fp4kit/types.h"

namespace fp4kit {

// ---- M buckets (FlashInfer's hybrid buckets, spec §4.4) -------------------------------------------
// Powers of 2 from 1 to 256; 512..2048 step 256; 2560..4096 step 512; then powers of 2
// (8192, 16384, ...). tune_m_buckets(max_m) lists the buckets <= max_m plus max_m itself when it is
// not a bucket (FlashInfer's "plus max itself"); empty for max_m <= 0.
std::vector<int64_t> tune_m_buckets(int64_t max_m);
// Runtime mapping (round up to the bucket): m <= 0 -> 1; <= 256 -> next power of 2;
// <= 2048 -> ceil to a multiple of 256; <= 4096 -> ceil to a multiple of 512; else next power of 2.
int64_t tune_m_bucket(int64_t m);

// ---- cache key and entries ------------------------------------------------------------------------
// The machine a measurement belongs to. Entries of another GPU, SM count, compute capability or
// fp4kit version never match.
struct TuneDevice {
  std::string gpu_name;
  int sm_count = 0;
  int compute_capability = 0;
  std::string fp4kit_version;
  bool operator==(const TuneDevice&) const = default;
};
// The current device (device_info()) and version(); gpu_name is empty when no GPU is present.
TuneDevice current_tune_device();

struct TuneKey {
  std::string op = "gemm";  // operation ("gemm")
  DType a_dtype = DType::kBF16;
  DType d_dtype = DType::kBF16;
  int64_t n = 0, k = 0;
  int64_t m_bucket = 0;  // tune_m_bucket(m)
  bool operator==(const TuneKey&) const = default;
};

struct TuneEntry {
  TuneDevice device;
  TuneKey key;
  int tactic = -1;
  std::string tactic_name;  // verified on load against the tactic table
  double us = 0;            // measured time per call
};

// ---- the cache ------------------------------------------------------------------------------------
// One JSON file shared by every process (docs/TUNING.md has the format). The entries of `device`
// are held in memory for lookups; the others are kept only to be preserved when the file is written.
// Loading is lazy (first lookup/insert/save) and never fails: a missing file is an empty cache; a
// corrupt file, a file without entries for this device (foreign GPU or fp4kit version) or entries
// naming a tactic that no longer exists under that id (stale) are ignored with one warning.
// save() merges: under an flock on "<path>.lock" it re-reads the file, adds this cache's inserted
// entries (they win over equal keys), writes a temp file in the same directory and renames it over
// the file. All members are thread-safe.
class TuneCache {
 public:
  // Whether (op, tactic id, tactic name) names a current tactic; the default checks the GEMM
  // tactic table.
  using TacticValidator = std::function<bool(const std::string& op, int id, const std::string& name)>;
  using WarningSink = std::function<void(const std::string& message)>;  // default: stderr line

  TuneCache(std::string path, TuneDevice device, TacticValidator validator = {}, WarningSink warn = {});
  ~TuneCache();
  TuneCache(const TuneCache&) = delete;
  TuneCache& operator=(const TuneCache&) = delete;

  const std::string& path() const { return path_; }
  const TuneDevice& device() const { return device_; }

  // Tactic id for a key of this device, or -1. No allocation and no file I/O after the first call.
  int lookup(const std::string_view op, DType a_dtype, DType d_dtype, int64_t n, int64_t k, int64_t m_bucket);
  int lookup(const TuneKey& key) { return lookup(key.op, key.a_dtype, key.d_dtype, key.n, key.k, key.m_bucket); }
  // Adds/replaces an entry of this device in memory (entry.device is set to device()).
  void insert(TuneEntry entry);
  // Writes the inserted entries to the file (merge, see above). The in-memory entries then also
  // include the other processes' entries for this device.
  Status save();
  // Entries of this device held in memory.
  std::vector<TuneEntry> entries();
  // Warnings emitted so far (0 or 1 per load).
  int warnings() const;
  // Drops the in-memory state; the next call loads the file again.
  void reload();

 private:
  struct Impl;
  void ensure_loaded();
  std::string path_;
  TuneDevice device_;
  std::unique_ptr<Impl> impl_;
};

// Default path: $FP4KIT_TUNE_CACHE, else $XDG_CACHE_HOME/fp4kit/tune.json, else
// $HOME/.cache/fp4kit/tune.json (empty when none of these is set). FP4KIT_TUNE_CACHE=off disables.
std::string tune_cache_default_path();
// The process-wide cache gemm() consults (path and device fixed at first use); nullptr when the
// cache is disabled or no GPU is present.
TuneCache* default_tune_cache();
// The tuned tactic for p (p.m mapped to its bucket), or -1 on a miss. Hot path of gemm().
int tuned_gemm_tactic(const GemmParams& p);

// ---- profiling --------------------------------------------------------------------------------------
struct ProfileOptions {
  int warmup = 3;        // untimed calls
  int graph_batch = 10;  // calls captured in one CUDA graph (at least one per rotated input set)
  int repeats = 15;      // graph replays timed (median)
  double l2_factor = 2;  // rotated input sets exceed l2_factor x L2
  uint64_t seed = 1;
};

struct TacticTiming {
  int tactic = -1;
  std::string name;
  double us = 0;  // median per call; < 0 when skipped
  Status status;  // why it was skipped
};

// Times every tactic in `tactics` (all of gemm_tactics() when empty) on a problem of p's shape and
// dtypes (p's pointers are ignored: random inputs are allocated and rotated). Tactics that cannot
// implement the problem or fail are recorded with their status and us < 0; never fatal. Fails only
// when no GPU is present or memory cannot be allocated.
Status profile_gemm(const GemmParams& shape, const std::vector<int>& tactics, const ProfileOptions& opt,
                    std::vector<TacticTiming>* out);

struct GemmShape {
  int64_t n = 0, k = 0;
};
struct TuneResult {
  TuneKey key;
  int best_tactic = -1;  // -1 when no tactic ran
  std::string best_name;
  double best_us = -1;
  int heuristic_tactic = -1;
  double heuristic_us = -1;  // < 0 if the heuristic's tactic failed
  std::vector<TacticTiming> timings;
};

struct TuneOptions {
  DType a_dtype = DType::kBF16;  // kBF16 / kFP16 (W4A16) or kE2M1x2 (W4A4)
  DType d_dtype = DType::kBF16;
  ProfileOptions profile;
  std::vector<int> tactics;  // empty: all
};

// For every shape and every bucket of every m (tune_m_bucket(m), deduplicated): profiles at
// M = bucket, inserts the winner into `cache` (if not null) and calls `progress` per result.
// Saves the cache at the end (and returns the save's status).
Status tune_gemm(const std::vector<GemmShape>& shapes, const std::vector<int64_t>& ms, const TuneOptions& opt,
                 TuneCache* cache, std::vector<TuneResult>* results,
                 const std::function<void(const TuneResult&, int index, int total)>& progress = {});

}  // namespace fp4kit
