// CUDA error -> Status conversion for the GPU entry points.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "fp4kit/status.h"

namespace fp4kit::detail {

inline Status cuda_status(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return Status::ok();
  return Status(StatusCode::kCudaError, std::string(what) + ": " + cudaGetErrorName(err) + " (" +
                                            cudaGetErrorString(err) + ")");
}

// After a kernel launch: reports launch-configuration errors without synchronizing.
inline Status last_launch_status(const char* kernel) { return cuda_status(cudaGetLastError(), kernel); }

// kNoDevice when no CUDA device is usable (checked once per process).
Status require_device(const char* function);

// For calls that synchronize `stream`: kInvalidArgument with "<function>: <why>" while the stream
// captures a graph (the synchronization would invalidate the capture).
inline Status refuse_capture(cudaStream_t stream, const char* function, const std::string& why) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  FP4KIT_RETURN_IF_ERROR(cuda_status(cudaStreamIsCapturing(stream, &capture), function));
  if (capture == cudaStreamCaptureStatusNone) return Status::ok();
  return Status(StatusCode::kInvalidArgument, std::string(function) + ": " + why);
}
// The usual why: an option that adds a synchronizing check.
inline std::string syncing_option(const char* option) {
  return std::string(option) + " synchronizes the stream; turn it off to capture a CUDA graph";
}

}  // namespace fp4kit::detail

#define FP4KIT_CUDA_RETURN(expr, what) FP4KIT_RETURN_IF_ERROR(::fp4kit::detail::cuda_status((expr), (what)))
