#include "common/gpu_timing.h"

namespace fp4kit::detail {
namespace {

__global__ void delay_kernel(unsigned long long ns) {
  unsigned long long start;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  for (;;) {
    unsigned long long now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    if (now - start >= ns) break;
    __nanosleep(1000);
  }
}

}  // namespace

void launch_delay(unsigned long long ns, cudaStream_t stream) { delay_kernel<<<1, 1, 0, stream>>>(ns); }

CudaEvents::~CudaEvents() {
  for (cudaEvent_t e : ev_)
    if (e) cudaEventDestroy(e);
}

cudaError_t CudaEvents::create(size_t n) {
  ev_.assign(n, nullptr);
  for (cudaEvent_t& e : ev_)
    if (const cudaError_t err = cudaEventCreate(&e); err != cudaSuccess) return err;
  return cudaSuccess;
}

}  // namespace fp4kit::detail
