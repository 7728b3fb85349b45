// Timing pieces shared by the autotuner's profiler (src/tune/profile_common.cu) and the benchmarks
// (bench/bench_util.cu): a delay kernel that holds the stream while the host queues the timed work,
// and an owned set of CUDA events.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <vector>

namespace fp4kit::detail {

// Enqueues a one-thread kernel that spins for `ns` nanoseconds of GPU time, so that the work queued
// behind it (graph replays, event-bracketed calls) runs back to back rather than as the host issues
// it. The launch error, if any, is left for cudaGetLastError().
void launch_delay(unsigned long long ns, cudaStream_t stream);

// `n` CUDA events, destroyed with the object.
class CudaEvents {
 public:
  CudaEvents() = default;
  CudaEvents(const CudaEvents&) = delete;
  CudaEvents& operator=(const CudaEvents&) = delete;
  ~CudaEvents();
  // Creates n events; on failure the events created so far are kept for the destructor.
  cudaError_t create(size_t n);
  cudaEvent_t operator[](size_t i) const { return ev_[i]; }

 private:
  std::vector<cudaEvent_t> ev_;
};

}  // namespace fp4kit::detail
