#include "fp4kit/device.h"

#include <cuda_runtime.h>

#include <string>

#include "common/cuda_check.h"
#include "common/per_device.h"

namespace fp4kit {

namespace {

// Devices in this process (count, driver and runtime versions) and why none is usable, once.
struct ProcessDevices {
  int count = 0;
  DeviceInfo none;  // available = false, with the reason
};

const ProcessDevices& process_devices() {
  static const ProcessDevices p = [] {
    ProcessDevices r;
    const cudaError_t err = cudaGetDeviceCount(&r.count);
    cudaRuntimeGetVersion(&r.none.runtime_version);
    cudaDriverGetVersion(&r.none.driver_version);
    if (err != cudaSuccess || r.count == 0) {
      r.count = 0;
      r.none.reason = err != cudaSuccess ? std::string("cudaGetDeviceCount: ") + cudaGetErrorString(err)
                                         : "no CUDA device found";
      cudaGetLastError();  // clear the sticky error from the failed query
    }
    return r;
  }();
  return p;
}

DeviceInfo query_device(int dev, const DeviceInfo& base) {
  DeviceInfo d;
  d.driver_version = base.driver_version;
  d.runtime_version = base.runtime_version;
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, dev) != cudaSuccess) {
    d.reason = "cudaGetDeviceProperties failed";
    cudaGetLastError();
    return d;
  }
  d.available = true;
  d.name = prop.name;
  d.compute_capability = prop.major * 10 + prop.minor;
  d.sm_count = prop.multiProcessorCount;
  d.l2_bytes = prop.l2CacheSize;
  d.global_memory_bytes = static_cast<long long>(prop.totalGlobalMem);
  int mem_khz = 0, bus_bits = 0;  // double data rate: two transfers per clock
  if (cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, dev) == cudaSuccess &&
      cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, dev) == cudaSuccess)
    d.dram_peak_gbps = 2.0 * mem_khz * 1e3 * (bus_bits / 8.0) / 1e9;
  else
    cudaGetLastError();  // clear only our own failed query (the caller's pending errors stay)
  return d;
}

}  // namespace

int current_device() {
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) {
    cudaGetLastError();
    dev = 0;
  }
  return dev;
}

const DeviceInfo& device_info() {
  const ProcessDevices& p = process_devices();
  if (p.count == 0) return p.none;
  // One entry per device, each queried once (a server may drive GPUs of different kinds).
  static detail::PerDevice<DeviceInfo> infos;
  int dev = current_device();
  if (dev < 0 || dev >= p.count) dev = 0;
  const DeviceInfo* d = infos.get(dev, [&] { return query_device(dev, p.none); });
  return d ? *d : p.none;
}

bool has_sm90a_device() { return device_info().available && device_info().compute_capability == 90; }

const char* version() { return FP4KIT_VERSION; }
const char* build_cuda_archs() { return FP4KIT_CUDA_ARCHS; }

namespace detail {
Status require_device(const char* function) {
  const DeviceInfo& d = device_info();
  if (!d.available) return Status(StatusCode::kNoDevice, std::string(function) + ": " + d.reason);
  if (d.compute_capability != 90)
    return Status(StatusCode::kNotSupported,
                  std::string(function) + ": fp4kit kernels are built for sm_90a; device is sm_" +
                      std::to_string(d.compute_capability));
  return Status::ok();
}
}  // namespace detail

}  // namespace fp4kit
