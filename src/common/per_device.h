// A value per CUDA device ordinal, each made once on first use (thread-safe): what the library
// caches about "the" GPU must follow the caller's current device.
#pragma once

#include <mutex>

namespace fp4kit::detail {

template <class T, int kMaxDevices = 64>
class PerDevice {
 public:
  // The value of device `dev` (made by make() on first use); nullptr when dev is out of range.
  template <class Make>
  T* get(int dev, Make&& make) {
    if (dev < 0 || dev >= kMaxDevices) return nullptr;
    Slot& s = slots_[dev];
    std::call_once(s.once, [&] { s.value = make(); });
    return &s.value;
  }

 private:
  struct Slot {
    std::once_flag once;
    T value{};
  };
  Slot slots_[kMaxDevices];
};

}  // namespace fp4kit::detail
