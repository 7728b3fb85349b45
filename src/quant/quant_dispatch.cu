#include "quant/quant_dispatch.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "quant/tma_kernel.cuh"

namespace fp4kit::quant {

namespace {
std::atomic<int> g_override{int(Variant::kAuto)};
thread_local Variant t_last = Variant::kAuto;
}  // namespace

const char* variant_name(Variant v) {
  switch (v) {
    case Variant::kAuto: return "auto";
    case Variant::kVectorized: return "vectorized";
    case Variant::kTma: return "tma";
  }
  return "?";
}

bool parse_variant(const char* s, Variant* out) {
  if (s == nullptr) return false;
  if (std::strcmp(s, "auto") == 0) {
    *out = Variant::kAuto;
  } else if (std::strcmp(s, "vectorized") == 0 || std::strcmp(s, "vec") == 0) {
    *out = Variant::kVectorized;
  } else if (std::strcmp(s, "tma") == 0) {
    *out = Variant::kTma;
  } else {
    return false;
  }
  return true;
}

void set_variant_override(Variant v) { g_override.store(int(v)); }

Variant requested_variant() {
  const Variant o = Variant(g_override.load());
  if (o != Variant::kAuto) return o;
  Variant env = Variant::kAuto;
  if (parse_variant(std::getenv("FP4KIT_QUANT_VARIANT"), &env)) return env;
  return Variant::kAuto;
}

Variant choose_variant(const VariantQuery& q) {
  if (!q.tma_eligible) return Variant::kVectorized;
  switch (requested_variant()) {
    case Variant::kVectorized: return Variant::kVectorized;
    case Variant::kTma: return Variant::kTma;
    case Variant::kAuto: break;
  }
  const bool full_tiles = q.cols % kTmaTileCols == 0;
  return (full_tiles && q.rows * q.cols >= kTmaMinElements) ? Variant::kTma : Variant::kVectorized;
}

Variant last_variant() { return t_last; }
void set_last_variant(Variant v) { t_last = v; }

}  // namespace fp4kit::quant
