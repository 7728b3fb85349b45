// cudaLaunchKernelEx with the optional programmatic-dependent-launch attribute, shared by the
// quantization, GEMM and MoE launchers.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <utility>

namespace fp4kit {

// Launches `kernel` on `stream`; with `pdl`, sets cudaLaunchAttributeProgrammaticStreamSerialization
// so the kernel may start while the previous kernel in the stream finishes (our kernels call
// griddepcontrol.wait before touching memory).
template <class... KArgs, class... Args>
cudaError_t launch_kernel(void (*kernel)(KArgs...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream, bool pdl,
                          Args&&... args) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = pdl ? 1 : 0;
  return cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...);
}

}  // namespace fp4kit
