// Synthetic checkpoints for the quantizer tests (test_checkpoint_quantizer.cpp, test_checkpoint_gpu.cpp)
// and helpers to compare outputs.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "format/float16.h"
#include "fp4kit/reference.h"
#include "fp4kit/safetensors.h"

namespace fp4kit::testing_synth {

namespace fs = std::filesystem;

inline constexpr int64_t kHidden = 64, kInter = 128, kVocab = 256, kKv = 32, kLayers = 2;

struct Synth {
  std::string name;
  std::vector<int64_t> shape;
  int shard;
};

inline std::vector<Synth> llama_tensors() {
  std::vector<Synth> t;
  t.push_back({"model.embed_tokens.weight", {kVocab, kHidden}, 0});
  for (int l = 0; l < kLayers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    const int s = l;  // layer l in shard l
    t.push_back({p + "input_layernorm.weight", {kHidden}, s});
    t.push_back({p + "self_attn.q_proj.weight", {kHidden, kHidden}, s});
    t.push_back({p + "self_attn.k_proj.weight", {kKv, kHidden}, s});
    t.push_back({p + "self_attn.v_proj.weight", {kKv, kHidden}, s});
    t.push_back({p + "self_attn.o_proj.weight", {kHidden, kHidden}, s});
    t.push_back({p + "post_attention_layernorm.weight", {kHidden}, s});
    t.push_back({p + "mlp.gate_proj.weight", {kInter, kHidden}, s});
    t.push_back({p + "mlp.up_proj.weight", {kInter, kHidden}, s});
    t.push_back({p + "mlp.down_proj.weight", {kHidden, kInter}, s});
  }
  t.push_back({"model.norm.weight", {kHidden}, 1});
  t.push_back({"lm_head.weight", {kVocab, kHidden}, 1});
  return t;
}

// A two-shard tiny Llama (BF16) with an index, config.json and tokenizer.json; returns the BF16
// bits of every tensor.
inline std::map<std::string, std::vector<uint16_t>> build_checkpoint(const fs::path& dir) {
  using namespace fp4kit::st;
  fs::create_directories(dir);
  std::mt19937_64 rng(1234);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::map<std::string, std::vector<uint16_t>> data;
  const auto tensors = llama_tensors();
  std::map<std::string, std::string> weight_map;
  uint64_t total = 0;
  for (int s = 0; s < 2; ++s) {
    const std::string file = "model-0000" + std::to_string(s + 1) + "-of-00002.safetensors";
    std::vector<TensorSpec> plan;
    for (const Synth& t : tensors)
      if (t.shard == s) plan.push_back({t.name, Dtype::kBF16, t.shape});
    std::unique_ptr<SafetensorsWriter> w;
    EXPECT_TRUE(SafetensorsWriter::create((dir / file).string(), plan, {{"format", "pt"}}, &w).is_ok());
    for (const TensorSpec& t : plan) {
      int64_t n = 1;
      for (int64_t d : t.shape) n *= d;
      const float scale = 0.02f * (1.0f + float(data.size() % 5));
      std::vector<uint16_t> v(static_cast<size_t>(n));
      for (auto& x : v) x = float_to_bf16(scale * normal(rng));
      EXPECT_TRUE(w->write(t.name, v.data(), v.size() * 2).is_ok());
      data[t.name] = v;
      weight_map[t.name] = file;
      total += v.size() * 2;
    }
    EXPECT_TRUE(w->finish().is_ok());
  }
  EXPECT_TRUE(write_index((dir / "model.safetensors.index.json").string(), total, weight_map).is_ok());
  std::ofstream(dir / "config.json") << R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "torch_dtype": "bfloat16"})";
  std::ofstream(dir / "tokenizer.json") << "{}";
  return data;
}

// Values that stress the recipe: Gaussian data whose scale varies by row over 2^min_exp ..
// 2^max_exp, single NaNs (both signs), ±0, FP32/BF16 and FP16 subnormals, E2M1 midpoints, whole
// blocks of +0 and -0; with `extreme`, also ±Inf and values near the FP32/BF16 maximum (a tensor
// holding them has ws2 = Inf or huge, which drives every block through the degenerate paths).
inline std::vector<float> adversarial_values(int64_t rows, int64_t cols, uint64_t seed, int min_exp = -40,
                                             int max_exp = 20, bool extreme = false) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(size_t(rows * cols));
  for (int64_t r = 0; r < rows; ++r) {
    const float scale = std::ldexp(1.0f, min_exp + int(r % (max_exp - min_exp + 1)));
    for (int64_t c = 0; c < cols; ++c) v[size_t(r * cols + c)] = scale * normal(rng);
  }
  std::uniform_int_distribution<int64_t> pick(0, rows * cols - 1);
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const float specials[] = {nan, -nan, 0.0f, -0.0f,
                            1e-40f, -3e-42f,   // FP32 subnormals (BF16 keeps the top bits)
                            5.96e-8f, 6.0e-5f, // FP16 subnormals
                            0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f, -2.5f, -0.25f};
  const float extremes[] = {inf, -inf, 3.38e38f, -65504.0f};
  for (int i = 0; i < int(rows * cols / 50) + 4; ++i) v[size_t(pick(rng))] = specials[size_t(i) % std::size(specials)];
  if (extreme)
    for (int i = 0; i < 8; ++i) v[size_t(pick(rng))] = extremes[size_t(i) % std::size(extremes)];
  if (rows * cols >= 64) {  // whole +0 and -0 blocks
    std::fill(v.begin(), v.begin() + 16, 0.0f);
    std::fill(v.begin() + 16, v.begin() + 32, -0.0f);
  }
  return v;
}

// FP32 values -> raw little-endian bytes of dtype (BF16/FP16 round to nearest even).
inline std::vector<uint8_t> encode_values(const std::vector<float>& v, st::Dtype d) {
  std::vector<uint8_t> out;
  if (d == st::Dtype::kF32) {
    out.resize(v.size() * 4);
    std::memcpy(out.data(), v.data(), out.size());
    return out;
  }
  out.resize(v.size() * 2);
  for (size_t i = 0; i < v.size(); ++i) {
    const uint16_t h = d == st::Dtype::kBF16 ? format::float_to_bf16(v[i]) : format::float_to_fp16(v[i]);
    std::memcpy(out.data() + 2 * i, &h, 2);
  }
  return out;
}

// One file `model.safetensors` with weights in all three input dtypes, shaped so that rows split
// over several threads (more rows than one 64K-element chunk holds), a weight placed at an odd
// byte offset (after a 3-byte U8 tensor), an all-zero weight, one with ±Inf, adversarial values,
// fusible q/k/v and gate/up groups, and copied tensors. Returns the raw bytes of every tensor.
inline std::map<std::string, std::vector<uint8_t>> build_mixed_checkpoint(const fs::path& dir) {
  using namespace fp4kit::st;
  fs::create_directories(dir);
  struct T {
    std::string name;
    Dtype dtype;
    std::vector<int64_t> shape;
  };
  const std::vector<T> ts = {
      {"model.layers.0.self_attn.q_proj.weight", Dtype::kBF16, {4096, 64}},
      {"model.layers.0.self_attn.k_proj.bias", Dtype::kU8, {3}},  // makes the next tensor misaligned
      {"model.layers.0.self_attn.k_proj.weight", Dtype::kBF16, {256, 64}},
      {"model.layers.0.self_attn.v_proj.weight", Dtype::kBF16, {256, 64}},
      {"model.layers.0.mlp.gate_proj.weight", Dtype::kF16, {2048, 128}},
      {"model.layers.0.mlp.up_proj.weight", Dtype::kF16, {2048, 128}},
      {"model.layers.0.mlp.down_proj.weight", Dtype::kF32, {1040, 272}},  // 17 blocks per row
      {"model.layers.0.self_attn.o_proj.weight", Dtype::kBF16, {48, 1040}},  // 65 blocks per row
      {"model.layers.1.mlp.down_proj.weight", Dtype::kBF16, {64, 64}},    // all zero
      {"model.layers.1.self_attn.o_proj.weight", Dtype::kF32, {16, 64}},  // ±Inf, huge values
      {"model.layers.1.mlp.up_proj.weight", Dtype::kBF16, {8, 40}},       // K % 16 != 0: copied
      {"model.norm.weight", Dtype::kBF16, {64}},
      {"lm_head.weight", Dtype::kBF16, {32, 64}},
  };
  std::vector<TensorSpec> plan;
  for (const T& t : ts) plan.push_back({t.name, t.dtype, t.shape});
  std::unique_ptr<SafetensorsWriter> w;
  EXPECT_TRUE(SafetensorsWriter::create((dir / "model.safetensors").string(), plan, {{"format", "pt"}}, &w).is_ok());
  std::map<std::string, std::vector<uint8_t>> bytes;
  uint64_t seed = 7;
  for (const T& t : ts) {
    int64_t n = 1;
    for (int64_t d : t.shape) n *= d;
    std::vector<uint8_t> b;
    if (t.dtype == Dtype::kU8) {
      b = {1, 2, 3};
    } else if (t.name == "model.layers.1.mlp.down_proj.weight") {
      b.assign(size_t(n * 2), 0);
    } else if (t.name == "model.layers.1.self_attn.o_proj.weight") {
      b = encode_values(adversarial_values(t.shape[0], t.shape[1], seed++, -40, 20, true), t.dtype);
    } else if (t.shape.size() == 2) {
      // FP16 rows stay below 2^10 * N(0,1), inside FP16's range.
      const bool f16 = t.dtype == Dtype::kF16;
      b = encode_values(adversarial_values(t.shape[0], t.shape[1], seed++, f16 ? -24 : -40, f16 ? 10 : 20), t.dtype);
    } else {
      b = encode_values(std::vector<float>(size_t(n), 1.0f), t.dtype);
    }
    EXPECT_TRUE(w->write(t.name, b.data(), b.size()).is_ok());
    bytes[t.name] = b;
  }
  EXPECT_TRUE(w->finish().is_ok());
  std::ofstream(dir / "config.json") << R"({"architectures": ["LlamaForCausalLM"]})";
  return bytes;
}

// The names of regular files that differ (or exist on one side only) between two directories.
inline std::vector<std::string> differing_files(const fs::path& a, const fs::path& b) {
  std::map<std::string, int> names;
  for (const fs::path& d : {a, b})
    for (const auto& e : fs::directory_iterator(d))
      if (e.is_regular_file()) ++names[e.path().filename().string()];
  std::vector<std::string> diff;
  for (const auto& [name, count] : names) {
    if (count != 2) {
      diff.push_back(name + " (on one side only)");
      continue;
    }
    std::ifstream fa(a / name, std::ios::binary), fb(b / name, std::ios::binary);
    const std::vector<char> ca((std::istreambuf_iterator<char>(fa)), std::istreambuf_iterator<char>());
    const std::vector<char> cb((std::istreambuf_iterator<char>(fb)), std::istreambuf_iterator<char>());
    if (ca != cb) diff.push_back(name);
  }
  return diff;
}

inline fs::path temp_dir(const std::string& tag) {
  const fs::path d = fs::temp_directory_path() / ("fp4kit_ckpt_" + tag + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  return d;
}

}  // namespace fp4kit::testing_synth
