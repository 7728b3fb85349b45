// fp4kit/device.h — what this build and this machine offer.
#pragma once

#include <string>

namespace fp4kit {

struct DeviceInfo {
  bool available = false;    // a CUDA device is present and usable
  std::string reason;        // why not, when !available
  std::string name;          // e.g. "NVIDIA H100 80GB HBM3"
  int compute_capability = 0;  // e.g. 90
  int sm_count = 0;
  long long l2_bytes = 0;
  long long global_memory_bytes = 0;
  // Peak DRAM bandwidth from the memory clock and bus width (GB/s; 0 when the driver does not say):
  // H100 SXM ~3350, H200 ~4900. The small-M tactic heuristic reads it per SM (gemm tactics).
  double dram_peak_gbps = 0;
  int driver_version = 0;
  int runtime_version = 0;
};

// The calling thread's current CUDA device (cudaGetDevice), each device queried once per process;
// every entry point plans for the device current at the call.
const DeviceInfo& device_info();
// The current device's ordinal (0 when there is none).
int current_device();
// True when the current device can run the sm_90a kernels of this build.
bool has_sm90a_device();

const char* version();
const char* build_cuda_archs();
// The source tree this library was built from: `git describe --always --dirty` at build time
// (e.g. "393d5fc1a2b3" or "393d5fc1a2b3-dirty"), "unknown" without git.
const char* source_revision();

}  // namespace fp4kit
