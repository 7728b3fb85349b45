// GPU path of the checkpoint quantizer: `--device gpu` must write exactly the bytes of
// `--device cpu` (every output file: shards, index, configs), with and without fused scales, on the
// two synthetic checkpoints of checkpoint_synth.h (a tiny two-shard Llama; mixed BF16/F16/F32
// weights with a misaligned tensor, an all-zero weight, ±Inf/NaN/subnormal values). Skips without
// an sm_90 GPU.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "common/gpu_test.h"
#include "io/checkpoint_quantizer.h"
#include "safetensors/checkpoint_synth.h"

namespace fs = std::filesystem;
using namespace fp4kit;
using namespace fp4kit::testing_synth;

namespace {

void expect_gpu_equals_cpu(const fs::path& in, const std::string& tag, bool fuse, int expect_quantized) {
  io::QuantizeSummary cpu_sum, gpu_sum;
  const fs::path out_cpu = temp_dir(tag + "_cpu"), out_gpu = temp_dir(tag + "_gpu");
  io::QuantizerOptions opt;
  opt.fuse_scales = fuse;
  opt.device = io::QuantDevice::kCpu;
  Status s = io::quantize_checkpoint(in.string(), out_cpu.string(), opt, &cpu_sum);
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  opt.device = io::QuantDevice::kGpu;
  s = io::quantize_checkpoint(in.string(), out_gpu.string(), opt, &gpu_sum);
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  EXPECT_FALSE(cpu_sum.used_gpu);
  EXPECT_TRUE(gpu_sum.used_gpu) << gpu_sum.device;
  EXPECT_EQ(gpu_sum.device.rfind("gpu (", 0), 0u) << gpu_sum.device;
  EXPECT_EQ(cpu_sum.quantized, expect_quantized);
  EXPECT_EQ(gpu_sum.quantized, expect_quantized);
  ASSERT_EQ(cpu_sum.tensors.size(), gpu_sum.tensors.size());
  for (size_t i = 0; i < cpu_sum.tensors.size(); ++i) {
    const auto& c = cpu_sum.tensors[i];
    const auto& g = gpu_sum.tensors[i];
    if (!c.quantized) continue;
    // amax is a maximum: exact in any order, so CPU and GPU agree bit for bit, and so does ws2.
    EXPECT_EQ(std::memcmp(&c.amax, &g.amax, 4), 0) << c.name << ": amax cpu " << c.amax << " gpu " << g.amax;
    EXPECT_EQ(std::memcmp(&c.ws2, &g.ws2, 4), 0) << c.name << ": ws2 cpu " << c.ws2 << " gpu " << g.ws2;
  }
  EXPECT_EQ(differing_files(out_cpu, out_gpu), std::vector<std::string>{}) << tag << (fuse ? " fused" : "");
  fs::remove_all(out_cpu);
  fs::remove_all(out_gpu);
}

}  // namespace

TEST(CheckpointQuantizerGpu, GpuOutputEqualsCpuByteForByte) {
  FP4KIT_REQUIRE_SM90A();
  const fs::path llama = temp_dir("gpu_llama_in"), mixed = temp_dir("gpu_mixed_in");
  build_checkpoint(llama);
  build_mixed_checkpoint(mixed);
  for (bool fuse : {false, true}) {
    expect_gpu_equals_cpu(llama, "gpu_llama", fuse, int(kLayers * 7));
    expect_gpu_equals_cpu(mixed / "model.safetensors", "gpu_mixed", fuse, 9);
  }
  fs::remove_all(llama);
  fs::remove_all(mixed);
}
