// A device allocation for GPU tests: sized in elements, checked transfers, poison fill.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <vector>

template <typename T>
struct DeviceBuffer {
  T* ptr = nullptr;
  size_t count = 0;
  explicit DeviceBuffer(size_t n) : count(n) { EXPECT_EQ(cudaMalloc(&ptr, std::max<size_t>(n, 1) * sizeof(T)), cudaSuccess); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { cudaFree(ptr); }
  void upload(const std::vector<T>& v) {
    EXPECT_EQ(v.size(), count);
    EXPECT_EQ(cudaMemcpy(ptr, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  }
  std::vector<T> download() const {
    std::vector<T> v(count);
    EXPECT_EQ(cudaMemcpy(v.data(), ptr, count * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    return v;
  }
  void poison() { EXPECT_EQ(cudaMemset(ptr, 0xff, std::max<size_t>(count, 1) * sizeof(T)), cudaSuccess); }
};
