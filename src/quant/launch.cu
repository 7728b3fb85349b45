#include "quant/launch.h"

#include <mutex>
#include <map>
#include <utility>

#include "fp4kit/device.h"

namespace fp4kit::quant {

// Per (device, kernel): the dynamic shared memory attribute is a property of the kernel on one device.
int blocks_per_sm(const void* kernel, int threads, size_t smem) {
  static std::mutex mu;
  static std::map<std::pair<int, const void*>, int> cache;
  const std::pair<int, const void*> key(current_device(), kernel);
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  if (smem > 48 * 1024) cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem));
  int n = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, threads, smem) != cudaSuccess || n < 1) {
    cudaGetLastError();
    n = 1;
  }
  cache.emplace(key, n);
  return n;
}

int sm_count() {
  const int n = device_info().sm_count;
  return n > 0 ? n : 1;
}

}  // namespace fp4kit::quant
