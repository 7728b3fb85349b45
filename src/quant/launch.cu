#include "quant/launch.h"

#include <mutex>
#include <unordered_map>

#include "fp4kit/device.h"

namespace fp4kit::quant {

int blocks_per_sm(const void* kernel, int threads, size_t smem) {
  static std::mutex mu;
  static std::unordered_map<const void*, int> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(kernel);
  if (it != cache.end()) return it->second;
  if (smem > 48 * 1024) cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem));
  int n = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, threads, smem) != cudaSuccess || n < 1) {
    cudaGetLastError();
    n = 1;
  }
  cache.emplace(kernel, n);
  return n;
}

int sm_count() {
  const int n = device_info().sm_count;
  return n > 0 ? n : 1;
}

}  // namespace fp4kit::quant
