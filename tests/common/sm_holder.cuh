// Residency tests: a kernel in another stream that holds all but a few SMs until it is released
// (or a timeout passes) — the situation of a GPU shared with other work, or an MPS client limited to
// fewer SMs. A kernel whose CTAs wait for each other hangs there unless it only ever waits for CTAs
// that are running; the timeout turns such a hang into a test failure.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "fp4kit/device.h"

namespace sm_holder {
namespace {  // a copy of the kernels per test translation unit

// One CTA per SM: (almost) all of its shared memory. Thread 0 flags its start (its own word of mapped
// host memory: plain stores, no atomics across PCIe) and spins on `release`.
__global__ void hold_kernel(volatile int* started, const volatile int* release, int* timed_out, long long timeout_ns) {
  extern __shared__ char smem[];
  if (threadIdx.x == 0) {
    smem[0] = 0;
    started[blockIdx.x] = 1;
    __threadfence_system();
    long long t0 = 0, t = 0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    while (*release == 0) {
      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
      if (t - t0 > timeout_ns) {
        atomicExch(timed_out, 1);
        break;
      }
      __nanosleep(2000);
    }
  }
  __syncthreads();
}

__global__ void release_kernel(int* release) {
  atomicExch(release, 1);
  __threadfence_system();
}

}  // namespace

class SmHolder {
 public:
  SmHolder() {
    EXPECT_EQ(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), cudaSuccess);
    EXPECT_EQ(cudaHostAlloc(&started_, kMaxCtas * sizeof(int), cudaHostAllocMapped), cudaSuccess);
    EXPECT_EQ(cudaMalloc(&flags_, 2 * sizeof(int)), cudaSuccess);
    // Load both kernels now: with lazy loading, the first launch of release_kernel while the holder
    // spins could wait for the device to go idle (the holder would then time out: a false "deadlock").
    cudaFuncAttributes attr;
    EXPECT_EQ(cudaFuncGetAttributes(&attr, hold_kernel), cudaSuccess);
    EXPECT_EQ(cudaFuncGetAttributes(&attr, release_kernel), cudaSuccess);
  }
  SmHolder(const SmHolder&) = delete;
  ~SmHolder() {
    cudaStreamSynchronize(stream_);
    cudaFree(flags_);
    cudaFreeHost(started_);
    cudaStreamDestroy(stream_);
  }
  // Occupies every SM but `left_free` and returns once all the holding CTAs run (false if they do not).
  bool hold(int left_free, long long timeout_ns = 3'000'000'000LL) {
    int max_smem = 0;
    if (cudaDeviceGetAttribute(&max_smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, fp4kit::current_device()) !=
            cudaSuccess ||
        cudaFuncSetAttribute(hold_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, max_smem) != cudaSuccess)
      return false;
    held_ = fp4kit::device_info().sm_count - left_free;
    if (held_ < 1 || held_ > kMaxCtas) return false;
    for (int i = 0; i < held_; ++i) started_[i] = 0;
    // (on the holder's own stream: a legacy-stream memset is not ordered with it)
    if (cudaMemsetAsync(flags_, 0, 2 * sizeof(int), stream_) != cudaSuccess) return false;
    int* started_dev = nullptr;
    if (cudaHostGetDevicePointer(&started_dev, started_, 0) != cudaSuccess) return false;
    hold_kernel<<<held_, 32, size_t(max_smem), stream_>>>(started_dev, flags_, flags_ + 1, timeout_ns);
    if (cudaGetLastError() != cudaSuccess) return false;
    for (int i = 0; i < 5000 && started() < held_; ++i) usleep(1000);
    return started() == held_;
  }
  // Enqueues the release on `stream`: the holder lets go once the work before it there is done.
  void release_after(cudaStream_t stream) { release_kernel<<<1, 1, 0, stream>>>(flags_); }
  // Waits for the holder; true if it had to give up at its timeout (the work it waited for hung).
  bool timed_out() {
    EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
    int f[2] = {0, 0};
    EXPECT_EQ(cudaMemcpy(f, flags_, sizeof(f), cudaMemcpyDeviceToHost), cudaSuccess);
    return f[1] != 0;
  }

 private:
  static constexpr int kMaxCtas = 1024;
  int started() const {
    int n = 0;
    for (int i = 0; i < held_; ++i) n += static_cast<volatile int*>(started_)[i];
    return n;
  }
  cudaStream_t stream_ = nullptr;
  int* started_ = nullptr;
  int* flags_ = nullptr;
  int held_ = 0;
};

}  // namespace sm_holder
