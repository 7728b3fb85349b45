// libFuzzer target for the safetensors header parser (scripts/fuzz.sh builds it with clang and
// -fsanitize=fuzzer,address). The input is a whole safetensors image: 8-byte length, JSON, data.
// Also linked into test_safetensors, whose FuzzEntry test runs it over the malformed-file cases.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "fp4kit/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fp4kit::st::ParsedHeader h;
  const fp4kit::Status s = fp4kit::st::parse_safetensors(data, size, &h, "fuzz");
  if (s.is_ok()) {
    // Invariants of an accepted header: every range is inside the data buffer and sized right.
    for (const auto& t : h.tensors) {
      uint64_t bytes = 0;
      if (t.end < t.begin || t.end > h.data_bytes || !fp4kit::st::tensor_bytes(t.dtype, t.shape, &bytes) ||
          bytes != t.end - t.begin)
        __builtin_trap();
      if (t.end > t.begin) {  // touch first and last byte (ASan checks the bounds)
        volatile uint8_t a = data[h.data_offset + t.begin];
        volatile uint8_t b = data[h.data_offset + t.end - 1];
        (void)a;
        (void)b;
      }
    }
    if (h.data_offset + h.data_bytes != size) __builtin_trap();
  } else if (s.message().empty()) {
    __builtin_trap();
  }
  return 0;
}
