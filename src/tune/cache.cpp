// The persistent tuning cache (docs/TUNING.md): JSON file, lazy load, merge-on-write under flock,
// atomic replace (temp file + rename), one warning for a corrupt / foreign / stale file. Entries of
// operations this build does not know are kept verbatim, so a newer build's entries survive an
// older build's save.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <shared_mutex>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "fp4kit/device.h"
#include "fp4kit/tune.h"
#include "gemm/grouped.h"
#include "gemm/tactics.h"

#if __has_include(<nlohmann/json.hpp>)
#include <nlohmann/json.hpp>

#include "common/json_bounded.h"
#include "common/per_device.h"
#define FP4KIT_TUNE_HAVE_JSON 1
#else
#define FP4KIT_TUNE_HAVE_JSON 0
#endif

namespace fp4kit {
namespace {

constexpr const char* kFormatName = "fp4kit-tune-cache";
constexpr int kFormatVersion = 1;

// Operations known to the in-memory map (index = op code); lookups of other names miss.
constexpr std::string_view kOps[] = {"gemm", "grouped_gemm"};
constexpr int kGroupedOp = 1;

int op_code(std::string_view op) {
  for (size_t i = 0; i < std::size(kOps); ++i)
    if (kOps[i] == op) return int(i);
  return -1;
}

struct MapKey {
  int op;
  int a_dtype, d_dtype;
  int64_t n, k, m_bucket;
  int64_t groups, experts, top_k;
  bool operator==(const MapKey&) const = default;
};
struct MapKeyHash {
  size_t operator()(const MapKey& x) const noexcept {
    uint64_t h = 1469598103934665603ull;
    auto mix = [&](uint64_t v) {
      h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    };
    mix(uint64_t(x.op));
    mix(uint64_t(x.a_dtype) << 8 | uint64_t(x.d_dtype));
    mix(uint64_t(x.n));
    mix(uint64_t(x.k));
    mix(uint64_t(x.m_bucket));
    mix(uint64_t(x.groups));
    mix(uint64_t(x.experts) << 16 | uint64_t(x.top_k));
    return size_t(h);
  }
};

bool same_key(const TuneEntry& a, const TuneEntry& b) { return a.device == b.device && a.key == b.key; }

bool parse_dtype(const std::string& s, DType* out) {
  for (DType t : {DType::kBF16, DType::kFP16, DType::kFP32, DType::kE4M3, DType::kE2M1x2, DType::kUE8M0}) {
    if (s == dtype_name(t)) {
      *out = t;
      return true;
    }
  }
  return false;
}

bool default_validator(const std::string& op, int id, const std::string& name) {
  if (op == "gemm") {
    const gemm_impl::Tactic* t = gemm_impl::find_tactic(id);
    return t != nullptr && t->name == name;
  }
  if (op == "grouped_gemm") {
    const gemm_impl::GroupedTactic* t = gemm_impl::grouped_gemm_tactic(id);
    return t != nullptr && name == t->name;
  }
  return false;
}

void default_warning(const std::string& message) { std::fprintf(stderr, "fp4kit: warning: %s\n", message.c_str()); }

std::string read_file(const std::string& path, bool* exists) {
  std::ifstream in(path, std::ios::binary);
  *exists = bool(in);
  if (!in) return {};
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Result of parsing a cache file's text.
struct Parsed {
  std::vector<TuneEntry> entries;  // well-formed entries of known operations, any device
  std::vector<std::string> other_ops;  // entries of operations this build does not know, as JSON text
  bool corrupt = false;            // the file as a whole could not be used
  std::string corrupt_reason;
  int bad_entries = 0;  // entries with missing fields / wrong types
};

#if FP4KIT_TUNE_HAVE_JSON
using nlohmann::json;

bool entry_from_json(const json& j, TuneEntry* e) {
  if (!j.is_object()) return false;
  auto str = [&](const char* f, std::string* out) {
    auto it = j.find(f);
    if (it == j.end() || !it->is_string()) return false;
    *out = it->get<std::string>();
    return true;
  };
  auto integer = [&](const char* f, int64_t* out) {
    auto it = j.find(f);
    if (it == j.end() || !it->is_number_integer()) return false;
    *out = it->get<int64_t>();
    return true;
  };
  // Fields added after format_version 1 was published are optional (absent = 0), so older files
  // load unchanged.
  auto optional_integer = [&](const char* f, int64_t* out) {
    auto it = j.find(f);
    if (it == j.end()) return true;
    return integer(f, out);
  };
  std::string a, d;
  int64_t sm = 0, cc = 0, tactic = 0;
  if (!str("gpu", &e->device.gpu_name) || !integer("sm_count", &sm) || !integer("compute_capability", &cc) ||
      !str("fp4kit_version", &e->device.fp4kit_version) || !str("op", &e->key.op) || !str("a_dtype", &a) ||
      !str("d_dtype", &d) || !integer("n", &e->key.n) || !integer("k", &e->key.k) ||
      !integer("m_bucket", &e->key.m_bucket) || !integer("tactic", &tactic) || !str("tactic_name", &e->tactic_name) ||
      !optional_integer("groups", &e->key.groups) || !optional_integer("experts", &e->key.experts) ||
      !optional_integer("top_k", &e->key.top_k))
    return false;
  auto us = j.find("us");
  if (us == j.end() || !us->is_number()) return false;
  e->us = us->get<double>();
  if (!parse_dtype(a, &e->key.a_dtype) || !parse_dtype(d, &e->key.d_dtype)) return false;
  if (sm < 0 || sm > (1 << 20) || cc < 0 || cc > 10000 || tactic < 0 || tactic > (1 << 20)) return false;
  if (e->key.n <= 0 || e->key.k <= 0 || e->key.m_bucket <= 0) return false;
  const TuneKey& key = e->key;
  if (op_code(key.op) == kGroupedOp) {
    if (key.groups <= 0 || key.experts < key.groups || key.top_k <= 0 || key.top_k > key.experts) return false;
  } else if (key.groups != 0 || key.experts != 0 || key.top_k != 0) {
    return false;  // dense keys have no groups
  }
  e->device.sm_count = int(sm);
  e->device.compute_capability = int(cc);
  e->tactic = int(tactic);
  return true;
}

json entry_to_json(const TuneEntry& e) {
  json j = json::object();
  j["gpu"] = e.device.gpu_name;
  j["sm_count"] = e.device.sm_count;
  j["compute_capability"] = e.device.compute_capability;
  j["fp4kit_version"] = e.device.fp4kit_version;
  j["op"] = e.key.op;
  j["a_dtype"] = dtype_name(e.key.a_dtype);
  j["d_dtype"] = dtype_name(e.key.d_dtype);
  j["n"] = e.key.n;
  j["k"] = e.key.k;
  j["m_bucket"] = e.key.m_bucket;
  if (op_code(e.key.op) == kGroupedOp) {  // dense entries keep the original field set
    j["groups"] = e.key.groups;
    j["experts"] = e.key.experts;
    j["top_k"] = e.key.top_k;
  }
  j["tactic"] = e.tactic;
  j["tactic_name"] = e.tactic_name;
  j["us"] = e.us;
  return j;
}

Parsed parse_text(const std::string& text) {
  Parsed p;
  json j;
  try {
    j = fp4kit::detail::parse_json_bounded<json>(text);
  } catch (const std::exception& ex) {
    p.corrupt = true;
    p.corrupt_reason = "not valid JSON";
    return p;
  }
  if (!j.is_object()) {
    p.corrupt = true;
    p.corrupt_reason = "not a JSON object";
    return p;
  }
  auto fmt = j.find("format");
  auto ver = j.find("format_version");
  auto ent = j.find("entries");
  if (fmt == j.end() || !fmt->is_string() || fmt->get<std::string>() != kFormatName) {
    p.corrupt = true;
    p.corrupt_reason = "not an fp4kit tuning cache (\"format\" is missing or wrong)";
    return p;
  }
  if (ver == j.end() || !ver->is_number_integer() || ver->get<int64_t>() != kFormatVersion) {
    p.corrupt = true;
    p.corrupt_reason = "unsupported format_version";
    return p;
  }
  if (ent == j.end() || !ent->is_array()) {
    p.corrupt = true;
    p.corrupt_reason = "\"entries\" is missing or not an array";
    return p;
  }
  for (const json& x : *ent) {
    if (x.is_object()) {
      auto op = x.find("op");
      if (op != x.end() && op->is_string() && op_code(op->get<std::string>()) < 0) {
        p.other_ops.push_back(x.dump());
        continue;
      }
    }
    TuneEntry e;
    if (entry_from_json(x, &e))
      p.entries.push_back(std::move(e));
    else
      ++p.bad_entries;
  }
  return p;
}

std::string to_text(const std::vector<TuneEntry>& entries, const std::vector<std::string>& other_ops) {
  json arr = json::array();
  for (const TuneEntry& e : entries) arr.push_back(entry_to_json(e));
  for (const std::string& x : other_ops) arr.push_back(json::parse(x));
  json j = json::object();
  j["format"] = kFormatName;
  j["format_version"] = kFormatVersion;
  j["entries"] = std::move(arr);
  return j.dump(1) + "\n";
}
#else
Parsed parse_text(const std::string&) {
  Parsed p;
  p.corrupt = true;
  p.corrupt_reason = "this build of fp4kit has no JSON support (nlohmann/json.hpp not found)";
  return p;
}
std::string to_text(const std::vector<TuneEntry>&, const std::vector<std::string>&) { return {}; }
#endif

// mkdir -p of the directory part of `path`.
void make_parent_dirs(const std::string& path) {
  for (size_t pos = path.find('/', 1); pos != std::string::npos; pos = path.find('/', pos + 1)) {
    const std::string dir = path.substr(0, pos);
    ::mkdir(dir.c_str(), 0755);  // EEXIST and friends: the open below reports real failures
  }
}

std::string dir_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

Status errno_status(const std::string& what) {
  return Status(StatusCode::kInternal, "tune cache: " + what + ": " + std::strerror(errno));
}

// Writes `text` to a temp file next to `path`, fsyncs it and renames it over `path`.
Status write_atomically(const std::string& path, const std::string& text) {
  const size_t slash = path.rfind('/');
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  const std::string tmpl = dir_of(path) + "/." + base + ".tmp.XXXXXX";
  std::vector<char> name(tmpl.begin(), tmpl.end());
  name.push_back('\0');
  const int fd = ::mkstemp(name.data());
  if (fd < 0) return errno_status("cannot create a temp file in " + dir_of(path));
  ::fchmod(fd, 0644);
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t w = ::write(fd, text.data() + done, text.size() - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      Status s = errno_status(std::string("write ") + name.data());
      ::close(fd);
      ::unlink(name.data());
      return s;
    }
    done += size_t(w);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    Status s = errno_status(std::string("fsync/close ") + name.data());
    ::unlink(name.data());
    return s;
  }
  if (::rename(name.data(), path.c_str()) != 0) {
    Status s = errno_status("rename to " + path);
    ::unlink(name.data());
    return s;
  }
  return Status::ok();
}

// flock(LOCK_EX) on "<path>.lock" for the lifetime of the object.
class FileLock {
 public:
  explicit FileLock(const std::string& path) {
    fd_ = ::open((path + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) {
      status_ = errno_status("cannot open " + path + ".lock");
      return;
    }
    while (::flock(fd_, LOCK_EX) != 0) {
      if (errno == EINTR) continue;
      status_ = errno_status("flock " + path + ".lock");
      ::close(fd_);
      fd_ = -1;
      return;
    }
  }
  ~FileLock() {
    if (fd_ >= 0) {
      ::flock(fd_, LOCK_UN);
      ::close(fd_);
    }
  }
  const Status& status() const { return status_; }

 private:
  int fd_ = -1;
  Status status_;
};

}  // namespace

struct TuneCache::Impl {
  TacticValidator validator;
  WarningSink warn;
  mutable std::shared_mutex mu;  // the in-memory entries (lookups take it shared)
  std::mutex save_mu;            // one save() at a time; held across the file I/O instead of mu
  std::atomic<bool> loaded{false};
  std::unordered_map<MapKey, int, MapKeyHash> map;  // this device's valid entries: key -> index
  std::vector<TuneEntry> mine;                      // this device's valid entries
  std::vector<TuneEntry> dirty;                     // inserted, not yet saved
  std::atomic<int> warnings{0};
  std::atomic<uint64_t> generation{0};

  static MapKey map_key(const TuneKey& k) {
    return MapKey{op_code(k.op), int(k.a_dtype), int(k.d_dtype), k.n, k.k, k.m_bucket, k.groups, k.experts, k.top_k};
  }
  void put(const TuneEntry& e) {  // caller holds mu exclusively
    const MapKey mk = map_key(e.key);
    auto it = map.find(mk);
    if (it != map.end()) {
      mine[size_t(it->second)] = e;
    } else {
      map.emplace(mk, int(mine.size()));
      mine.push_back(e);
    }
  }
};

TuneCache::TuneCache(std::string path, TuneDevice device, TacticValidator validator, WarningSink warn)
    : path_(std::move(path)), device_(std::move(device)), impl_(std::make_unique<Impl>()) {
  impl_->validator = validator ? std::move(validator) : TacticValidator(default_validator);
  impl_->warn = warn ? std::move(warn) : WarningSink(default_warning);
}

TuneCache::~TuneCache() = default;

void TuneCache::ensure_loaded() {
  if (impl_->loaded.load(std::memory_order_acquire)) return;
  std::unique_lock lock(impl_->mu);
  if (impl_->loaded.load(std::memory_order_relaxed)) return;
  impl_->map.clear();
  impl_->mine.clear();
  bool exists = false;
  const std::string text = path_.empty() ? std::string() : read_file(path_, &exists);
  if (exists) {
    Parsed p = parse_text(text);
    int stale = 0, matching = 0;
    for (const TuneEntry& e : p.entries) {
      if (!(e.device == device_) || op_code(e.key.op) < 0) continue;
      ++matching;
      if (!impl_->validator(e.key.op, e.tactic, e.tactic_name)) {
        ++stale;
        continue;
      }
      impl_->put(e);
    }
    std::string why;
    if (p.corrupt) {
      why = p.corrupt_reason;
    } else if (p.bad_entries > 0) {
      why = std::to_string(p.bad_entries) + " malformed entr" + (p.bad_entries == 1 ? "y" : "ies");
    } else if (stale > 0) {
      why = std::to_string(stale) + " entr" + (stale == 1 ? "y names a tactic" : "ies name tactics") +
            " not in this build's tactic table (stale; re-run `fp4kit tune`)";
    } else if (!p.entries.empty() && matching == 0) {
      why = "no entries for this GPU (" + device_.gpu_name + ", " + std::to_string(device_.sm_count) + " SMs, sm_" +
            std::to_string(device_.compute_capability) + ") and fp4kit " + device_.fp4kit_version +
            " (foreign cache; run `fp4kit tune`)";
    }
    if (!why.empty()) {
      impl_->warnings.fetch_add(1);
      impl_->warn("tuning cache " + path_ + ": " + why + "; " +
                  (p.corrupt ? "ignored" : "those entries are ignored"));
    }
  }
  // Entries inserted before a reload stay.
  for (const TuneEntry& e : impl_->dirty) impl_->put(e);
  impl_->generation.fetch_add(1);
  impl_->loaded.store(true, std::memory_order_release);
}

int TuneCache::lookup(std::string_view op, DType a_dtype, DType d_dtype, int64_t n, int64_t k, int64_t m_bucket,
                      int64_t groups, int64_t experts, int64_t top_k) {
  ensure_loaded();
  const MapKey mk{op_code(op), int(a_dtype), int(d_dtype), n, k, m_bucket, groups, experts, top_k};
  if (mk.op < 0) return -1;
  std::shared_lock lock(impl_->mu);
  auto it = impl_->map.find(mk);
  return it == impl_->map.end() ? -1 : impl_->mine[size_t(it->second)].tactic;
}

void TuneCache::insert(TuneEntry entry) {
  ensure_loaded();
  entry.device = device_;
  std::unique_lock lock(impl_->mu);
  impl_->generation.fetch_add(1);
  for (TuneEntry& d : impl_->dirty) {
    if (d.key == entry.key) {
      d = entry;
      impl_->put(entry);
      return;
    }
  }
  impl_->dirty.push_back(entry);
  impl_->put(entry);
}

Status TuneCache::save() {
  ensure_loaded();
  if (path_.empty()) return Status(StatusCode::kInvalidArgument, "tune cache: no path");
#if !FP4KIT_TUNE_HAVE_JSON
  return Status(StatusCode::kNotSupported, "tune cache: built without nlohmann/json.hpp");
#else
  // The file lock, the read and the write happen outside mu, so lookups (every gemm / fused_moe with
  // an automatic tactic) never wait for the file system or another process's lock.
  std::lock_guard save_lock(impl_->save_mu);
  std::vector<TuneEntry> dirty;
  {
    std::shared_lock lock(impl_->mu);
    dirty = impl_->dirty;
  }
  make_parent_dirs(path_);
  FileLock file_lock(path_);
  FP4KIT_RETURN_IF_ERROR(file_lock.status());
  bool exists = false;
  const std::string text = read_file(path_, &exists);
  Parsed p = exists ? parse_text(text) : Parsed{};
  std::vector<TuneEntry> merged;
  merged.reserve(p.entries.size() + dirty.size());
  for (TuneEntry& e : p.entries) {
    bool replaced = false;
    for (const TuneEntry& d : dirty) replaced = replaced || same_key(e, d);
    if (replaced) continue;
    // This device's stale entries are dropped; other devices' entries are kept as they are.
    if (e.device == device_ && op_code(e.key.op) >= 0 && !impl_->validator(e.key.op, e.tactic, e.tactic_name))
      continue;
    merged.push_back(std::move(e));
  }
  for (const TuneEntry& d : dirty) merged.push_back(d);
  FP4KIT_RETURN_IF_ERROR(write_atomically(path_, to_text(merged, p.other_ops)));
  std::unique_lock lock(impl_->mu);
  // Entries inserted while the file was written stay dirty and win over the file's for their keys.
  auto still_dirty = [&](const TuneEntry& e) {
    for (const TuneEntry& d : impl_->dirty)
      if (same_key(e, d)) return true;
    return false;
  };
  // Take in the other processes' entries for this device too.
  for (const TuneEntry& e : merged)
    if (e.device == device_ && op_code(e.key.op) >= 0 && !still_dirty(e)) impl_->put(e);
  // Drop the saved entries from dirty unless they changed meanwhile.
  std::vector<TuneEntry> left;
  for (const TuneEntry& d : impl_->dirty) {
    bool saved = false;
    for (const TuneEntry& x : dirty)
      saved = saved || (same_key(x, d) && x.tactic == d.tactic && x.tactic_name == d.tactic_name && x.us == d.us);
    if (!saved) left.push_back(d);
  }
  impl_->dirty = std::move(left);
  impl_->generation.fetch_add(1);
  return Status::ok();
#endif
}

std::vector<TuneEntry> TuneCache::entries() {
  ensure_loaded();
  std::shared_lock lock(impl_->mu);
  return impl_->mine;
}

int TuneCache::warnings() const { return impl_->warnings.load(); }

uint64_t TuneCache::generation() {
  ensure_loaded();
  return impl_->generation.load();
}

void TuneCache::reload() {
  std::unique_lock lock(impl_->mu);
  impl_->loaded.store(false, std::memory_order_release);
}

// ---- process-wide cache -------------------------------------------------------------------------------
TuneDevice current_tune_device() {
  const DeviceInfo& d = device_info();
  TuneDevice t;
  if (d.available) {
    t.gpu_name = d.name;
    t.sm_count = d.sm_count;
    t.compute_capability = d.compute_capability;
  }
  t.fp4kit_version = version();
  return t;
}

std::string tune_cache_default_path() {
  const char* env = std::getenv("FP4KIT_TUNE_CACHE");
  if (env != nullptr && *env != '\0') return std::string(env) == "off" ? std::string() : std::string(env);
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg != nullptr && *xdg == '/') return std::string(xdg) + "/fp4kit/tune.json";
  const char* home = std::getenv("HOME");
  if (home != nullptr && *home != '\0') return std::string(home) + "/.cache/fp4kit/tune.json";
  return {};
}

TuneCache* default_tune_cache() {
  // One per device (its entries are the current GPU's; a process may drive GPUs of different kinds),
  // all on the same file. Leaked on purpose: used until exit.
  static detail::PerDevice<TuneCache*> caches;
  if (!device_info().available) return nullptr;
  TuneCache* const* c = caches.get(current_device(), []() -> TuneCache* {
    const std::string path = tune_cache_default_path();
    return path.empty() ? nullptr : new TuneCache(path, current_tune_device());
  });
  return c ? *c : nullptr;
}

int tuned_gemm_tactic(const GemmParams& p) {
  TuneCache* c = default_tune_cache();
  if (c == nullptr) return -1;
  return c->lookup("gemm", p.a_dtype, p.d_dtype, p.n, p.k, tune_m_bucket(p.m));
}

}  // namespace fp4kit
