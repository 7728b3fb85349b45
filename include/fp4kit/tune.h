// fp4kit/tune.h — the autotuner: M buckets, the persistent tuning cache, the GEMM and grouped
// GEMM (fused MoE) profilers.
//
// gemm() with GemmParams::tactic == -1, and fused_moe() with fc1_tactic / fc2_tactic == -1, look
// the problem up in the process-wide tuning cache (default_tune_cache()): a hit whose tactic can
// run the problem is used, otherwise the shape heuristic. `fp4kit tune` (tune_gemm(), tune_moe())
// fills the cache. Details: docs/TUNING.md.
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

// ---- M buckets (FlashInfer's hybrid buckets, spec §4.4, plus 24) -----------------------------------
// Powers of 2 from 1 to 256 and 24 (our addition: the decode family's 24-token tile pays only at
// 17..24 tokens); 512..2048 step 256; 2560..4096 step 512; then powers of 2 (8192, 16384, ...).
// tune_m_buckets(max_m) lists the buckets <= max_m plus max_m itself when it is not a bucket
// (FlashInfer's "plus max itself"); empty for max_m <= 0.
inline constexpr int64_t kTuneBucket24 = 24;
std::vector<int64_t> tune_m_buckets(int64_t max_m);
// Runtime mapping (round up to the bucket): m <= 0 -> 1; 17..24 -> 24; else <= 256 -> next power of
// 2; <= 2048 -> ceil to a multiple of 256; <= 4096 -> ceil to a multiple of 512; else next power of 2.
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
  std::string op = "gemm";  // "gemm" (dense) or "grouped_gemm" (fused_moe's FC1 / FC2)
  DType a_dtype = DType::kBF16;  // grouped_gemm: the MoE's act dtype, or kE2M1x2 for W4A4
  DType d_dtype = DType::kBF16;
  int64_t n = 0, k = 0;   // grouped_gemm: one expert's weights [n, k]
  int64_t m_bucket = 0;   // gemm: tune_m_bucket(m); grouped_gemm: tune_m_bucket(tokens T)
  // grouped_gemm only (0 for gemm): with uniform routing these and T fix the expected active
  // experts and rows per expert, everything the grouped heuristic looks at.
  int64_t groups = 0;   // local experts E / ep_size (the grouped GEMM's groups)
  int64_t experts = 0;  // E: each token picks top_k distinct of these
  int64_t top_k = 0;
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
  // tactic table for "gemm" and the grouped GEMM tactic table for "grouped_gemm".
  using TacticValidator = std::function<bool(const std::string& op, int id, const std::string& name)>;
  using WarningSink = std::function<void(const std::string& message)>;  // default: stderr line

  TuneCache(std::string path, TuneDevice device, TacticValidator validator = {}, WarningSink warn = {});
  ~TuneCache();
  TuneCache(const TuneCache&) = delete;
  TuneCache& operator=(const TuneCache&) = delete;

  const std::string& path() const { return path_; }
  const TuneDevice& device() const { return device_; }

  // Tactic id for a key of this device, or -1. No allocation and no file I/O after the first call.
  // groups, experts, top_k: 0 for dense keys.
  int lookup(const std::string_view op, DType a_dtype, DType d_dtype, int64_t n, int64_t k, int64_t m_bucket,
             int64_t groups = 0, int64_t experts = 0, int64_t top_k = 0);
  int lookup(const TuneKey& key) {
    return lookup(key.op, key.a_dtype, key.d_dtype, key.n, key.k, key.m_bucket, key.groups, key.experts, key.top_k);
  }
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
  // Changes whenever the entries held in memory may have changed (load, insert, save): lets callers
  // memoize results derived from lookups (fused_moe's workspace bound).
  uint64_t generation();

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
// The process-wide cache gemm() consults for the current device (one per device, all on the same
// file; the path is fixed at first use); nullptr when the cache is disabled or no GPU is present.
TuneCache* default_tune_cache();
// The tuned tactic for p (p.m mapped to its bucket), or -1 on a miss. Hot path of gemm().
int tuned_gemm_tactic(const GemmParams& p);

// ---- grouped GEMM keys (fused_moe's FC1 and FC2) --------------------------------------------------
// One grouped GEMM of a MoE layer: `groups` local experts with weights [n, k] each; every token is
// routed to top_k distinct of `experts` experts (the local ones are `groups` of them).
// FC1: n = 2I, k = H; FC2: n = H, k = I; groups = E / ep_size.
struct GroupedGemmShape {
  int64_t n = 0, k = 0;
  int64_t groups = 0, experts = 0, top_k = 0;
  bool operator==(const GroupedGemmShape&) const = default;
};
// The cache key of that GEMM for T tokens: op "grouped_gemm", m_bucket = tune_m_bucket(tokens).
// a_dtype: the act dtype (W4A16) or kE2M1x2 (W4A4); d_dtype: the act dtype.
TuneKey grouped_gemm_tune_key(const GroupedGemmShape& s, DType a_dtype, DType d_dtype, int64_t tokens);

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
  std::string label;  // tune_moe: "<layer> fc1" / "<layer> fc2"; empty for tune_gemm
  int best_tactic = -1;  // -1 when no tactic ran
  std::string best_name;
  double best_us = -1;
  int heuristic_tactic = -1;
  double heuristic_us = -1;  // < 0 if the heuristic's tactic failed
  std::vector<TacticTiming> timings;
};

struct TuneOptions {
  DType a_dtype = DType::kBF16;  // kBF16 / kFP16 (W4A16) or kE2M1x2 (W4A4)
  DType d_dtype = DType::kBF16;  // W4A4: the output (tune_moe: activation) dtype; W4A16: = a_dtype
  ProfileOptions profile;
  std::vector<int> tactics;  // empty: all
};

// For every shape and every bucket of every m (tune_m_bucket(m), deduplicated): profiles at
// M = bucket, inserts the winner into `cache` (if not null) and calls `progress` per result.
// Saves the cache at the end (and returns the save's status).
Status tune_gemm(const std::vector<GemmShape>& shapes, const std::vector<int64_t>& ms, const TuneOptions& opt,
                 TuneCache* cache, std::vector<TuneResult>* results,
                 const std::function<void(const TuneResult&, int index, int total)>& progress = {});

// ---- grouped GEMM (fused MoE) profiling ------------------------------------------------------------
// Times every grouped tactic in `tactics` (all of them when empty) on the grouped GEMM fused_moe
// runs for `s` at T = tokens with act dtype `act_dtype` (kBF16 / kFP16): random weights for all
// groups, random 16-bit activations, uniform random routing (top_k distinct experts per token;
// routing tables rotated so that the experts the calls touch exceed l2_factor x L2), and the
// grouped GEMM's arguments as fused_moe passes them (max_rows = T * top_k, max_group_rows = T).
// Timing as profile_gemm; the heuristic's tactic is timed first, `out` follows `tactics`' order.
// Skipped (status set, us < 0): tactics that cannot implement the problem, whose workspace does not
// fit in a quarter of the free memory, or, when prune_factor > 0, whose eager call after the warm-up
// took longer than prune_factor x the fastest time so far and 1 ms (it cannot win; this keeps
// large-T points short; tune_moe uses 4).
Status profile_grouped_gemm(const GroupedGemmShape& s, DType act_dtype, int64_t tokens,
                            const std::vector<int>& tactics, const ProfileOptions& opt,
                            std::vector<TacticTiming>* out, double prune_factor = 0);

// One MoE layer (the `fp4kit bench moe` presets): H, I, E, top_k; tuned for EP rank 0 of ep_size
// (under uniform routing every rank sees the same distribution).
struct MoeTuneLayer {
  std::string name;
  int64_t hidden = 0, inter = 0, experts = 0, top_k = 0;
  int64_t ep_size = 1;
};
GroupedGemmShape moe_fc1_shape(const MoeTuneLayer& l);  // n = 2I, k = H
GroupedGemmShape moe_fc2_shape(const MoeTuneLayer& l);  // n = H, k = I

// For every layer, FC1 then FC2, at every distinct bucket of `tokens` (T = the bucket): profiles
// the grouped tactics (the heuristic's first), keeps the heuristic's tactic unless another beats
// it by more than the tie margin (as tune_gemm), inserts one grouped_gemm entry per point into
// `cache` (if not null), calls `progress` per result and saves the cache after each layer.
// opt.a_dtype kBF16 / kFP16 (W4A16) or kE2M1x2 (W4A4, act dtype opt.d_dtype).
Status tune_moe(const std::vector<MoeTuneLayer>& layers, const std::vector<int64_t>& tokens, const TuneOptions& opt,
                TuneCache* cache, std::vector<TuneResult>* results,
                const std::function<void(const TuneResult&, int index, int total)>& progress = {});

}  // namespace fp4kit
