// Kernel launch plumbing shared by the quantization entry points: cudaLaunchKernelEx with the
// optional programmatic-dependent-launch attribute, and cached occupancy queries.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <utility>

#include "common/launch_kernel.h"

namespace fp4kit::quant {

using fp4kit::launch_kernel;  // common/launch_kernel.h

// Resident blocks per SM of `kernel` at `threads` threads and `smem` dynamic shared memory bytes
// (at least 1), cached per kernel. Raises the kernel's dynamic shared memory limit to `smem` first
// when smem > 48 KB.
int blocks_per_sm(const void* kernel, int threads, size_t smem);

// Multiprocessors of the current device.
int sm_count();

}  // namespace fp4kit::quant
