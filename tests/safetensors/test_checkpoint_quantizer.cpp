// End-to-end checkpoint quantization on a synthetic, two-shard, tiny Llama-shaped BF16 checkpoint
// (checkpoint_synth.h): quantized tensors decode within NVFP4 error, others are byte-identical, the
// output loads back through our reader, the index and the configs are right. Also: thread counts,
// mixed dtypes and misaligned data against the reference, --device handling.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fp4kit/device.h"
#include "fp4kit/reference.h"
#include "fp4kit/safetensors.h"
#include "io/checkpoint_quantizer.h"
#include "safetensors/checkpoint_synth.h"

namespace fs = std::filesystem;
using namespace fp4kit;
using namespace fp4kit::st;

namespace {

using namespace fp4kit::testing_synth;

float e2m1_value(uint32_t code) {
  static const float kMag[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  return (code & 8u) ? -kMag[code & 7u] : kMag[code & 7u];
}
float e4m3_value(uint8_t b) {
  const int e = (b >> 3) & 15, m = b & 7;
  const float mag = e == 0 ? std::ldexp(float(m), -9) : std::ldexp(1.0f + float(m) / 8.0f, e - 7);
  return (b & 0x80) ? -mag : mag;
}

nlohmann::json read_json(const fs::path& p) {
  std::ifstream in(p);
  return nlohmann::json::parse(in);
}

}  // namespace

TEST(CheckpointQuantizer, DefaultRule) {
  using io::default_quantize_rule;
  EXPECT_TRUE(default_quantize_rule("model.layers.0.self_attn.q_proj.weight"));
  EXPECT_TRUE(default_quantize_rule("model.layers.0.mlp.experts.3.down_proj.weight"));
  EXPECT_FALSE(default_quantize_rule("model.layers.0.self_attn.q_proj.bias"));
  EXPECT_FALSE(default_quantize_rule("model.embed_tokens.weight"));
  EXPECT_FALSE(default_quantize_rule("lm_head.weight"));
  EXPECT_FALSE(default_quantize_rule("model.layers.0.input_layernorm.weight"));
  EXPECT_FALSE(default_quantize_rule("model.norm.weight"));
  EXPECT_FALSE(default_quantize_rule("model.layers.0.mlp.gate.weight"));
  EXPECT_FALSE(default_quantize_rule("model.layers.0.block_sparse_moe.gate.weight"));
  EXPECT_FALSE(default_quantize_rule("model.layers.0.mlp.router.weight"));
  EXPECT_EQ(io::fusion_group("model.layers.3.self_attn.k_proj.weight"), "model.layers.3.self_attn.qkv");
  EXPECT_EQ(io::fusion_group("model.layers.3.mlp.up_proj.weight"), "model.layers.3.mlp.gate_up");
  EXPECT_EQ(io::fusion_group("model.layers.3.mlp.down_proj.weight"), "");
}

TEST(CheckpointQuantizer, RoundTripTwoShards) {
  const fs::path in = temp_dir("in"), out = temp_dir("out");
  const auto data = build_checkpoint(in);
  io::QuantizerOptions opt;
  opt.verify = true;
  int progress_calls = 0;
  opt.progress = [&](uint64_t done, uint64_t total, const std::string&) {
    ++progress_calls;
    EXPECT_LE(done, total);
  };
  io::QuantizeSummary sum;
  const Status s = io::quantize_checkpoint(in.string(), out.string(), opt, &sum);
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  EXPECT_EQ(progress_calls, int(data.size()));
  EXPECT_EQ(sum.quantized, int(kLayers * 7));
  EXPECT_EQ(sum.copied, int(data.size()) - int(kLayers * 7));
  EXPECT_TRUE(sum.verified_copies_identical);
  EXPECT_GT(sum.min_snr_db, 15.0);
  EXPECT_EQ(sum.exclude_modules, std::vector<std::string>{"lm_head"});

  std::unique_ptr<Checkpoint> c;
  ASSERT_TRUE(Checkpoint::open(out.string(), &c).is_ok());
  EXPECT_EQ(c->shard_names().size(), 2u);
  EXPECT_EQ(c->tensors().size(), data.size() + 2 * kLayers * 7);

  // The index maps every output tensor to the shard that holds it; total_size is the data bytes.
  const auto idx = read_json(out / "model.safetensors.index.json");
  EXPECT_EQ(idx["weight_map"].size(), c->tensors().size());
  for (const auto& [name, ct] : c->tensors()) EXPECT_EQ(idx["weight_map"][name], c->shard_names()[ct.shard]) << name;
  EXPECT_EQ(idx["metadata"]["total_size"].get<uint64_t>(), c->total_tensor_bytes());

  int checked = 0;
  for (const auto& [name, orig] : data) {
    const CheckpointTensor* t = c->find(name);
    ASSERT_NE(t, nullptr) << name;
    const SafetensorsFile& f = *c->shards()[t->shard];
    if (!io::default_quantize_rule(name)) {
      ASSERT_EQ(t->info->dtype, Dtype::kBF16) << name;
      ASSERT_EQ(t->info->nbytes(), orig.size() * 2);
      EXPECT_EQ(std::memcmp(f.data(*t->info), orig.data(), orig.size() * 2), 0) << name;
      continue;
    }
    const std::string m = name.substr(0, name.size() - 7);
    const CheckpointTensor* sc = c->find(m + ".weight_scale");
    const CheckpointTensor* s2 = c->find(m + ".weight_scale_2");
    ASSERT_TRUE(sc && s2) << name;
    const int64_t n = t->info->shape[0], k2 = t->info->shape[1];
    const int64_t k = k2 * 2;
    ASSERT_EQ(t->info->dtype, Dtype::kU8);
    ASSERT_EQ(int64_t(orig.size()), n * k);
    ASSERT_EQ(sc->info->dtype, Dtype::kF8_E4M3);
    ASSERT_EQ(sc->info->shape, (std::vector<int64_t>{n, k / 16}));
    ASSERT_EQ(s2->info->dtype, Dtype::kF32);
    ASSERT_TRUE(s2->info->shape.empty());
    float ws2;
    std::memcpy(&ws2, c->shards()[s2->shard]->data(*s2->info), 4);
    const uint8_t* codes = f.data(*t->info);
    const uint8_t* scales = c->shards()[sc->shard]->data(*sc->info);

    // Independent decode and SNR.
    double sig = 0, noise = 0;
    float amax = 0;
    for (int64_t r = 0; r < n; ++r) {
      for (int64_t j = 0; j < k; ++j) {
        const uint8_t byte = codes[r * k2 + j / 2];
        const float q = e2m1_value(j % 2 ? byte >> 4 : byte & 15u) * e4m3_value(scales[r * (k / 16) + j / 16]) * ws2;
        const float x = bf16_to_float(orig[size_t(r * k + j)]);
        amax = std::max(amax, std::fabs(x));
        sig += double(x) * x;
        noise += double(x - q) * (x - q);
      }
    }
    EXPECT_EQ(ws2, amax / 2688.0f) << name;
    EXPECT_GT(10 * std::log10(sig / noise), 15.0) << name;

    // Bytes equal to the reference quantizer's kModelOpt output.
    std::vector<uint8_t> rc(size_t(n * k2)), rs(size_t(n * k / 16));
    Nvfp4QuantizeParams p;
    p.input = orig.data();
    p.input_dtype = DType::kBF16;
    p.rows = n;
    p.cols = k;
    p.global_scale = &ws2;
    p.numerics = QuantNumerics::kModelOpt;
    p.out_codes = rc.data();
    p.out_codes_bytes = int64_t(rc.size());
    p.out_scales = rs.data();
    p.out_scales_bytes = int64_t(rs.size());
    p.scale_layout = ScaleLayout::kLinear;
    ASSERT_TRUE(reference::quantize_nvfp4(p).is_ok());
    EXPECT_EQ(std::memcmp(rc.data(), codes, rc.size()), 0) << name;
    EXPECT_EQ(std::memcmp(rs.data(), scales, rs.size()), 0) << name;
    ++checked;
  }
  EXPECT_EQ(checked, int(kLayers * 7));

  // Configs.
  const auto hq = read_json(out / "hf_quant_config.json");
  EXPECT_EQ(hq["quantization"]["quant_algo"], "NVFP4");
  EXPECT_EQ(hq["quantization"]["group_size"], 16);
  EXPECT_TRUE(hq["quantization"]["kv_cache_quant_algo"].is_null());
  EXPECT_EQ(hq["quantization"]["exclude_modules"], nlohmann::json::array({"lm_head"}));
  EXPECT_EQ(hq["producer"]["name"], "modelopt");
  const auto cfg = read_json(out / "config.json");
  EXPECT_EQ(cfg["architectures"][0], "LlamaForCausalLM");
  EXPECT_EQ(cfg["quantization_config"]["quant_method"], "modelopt");
  EXPECT_EQ(cfg["quantization_config"]["quant_algo"], "NVFP4");
  EXPECT_EQ(cfg["quantization_config"]["ignore"], nlohmann::json::array({"lm_head"}));
  EXPECT_TRUE(fs::exists(out / "tokenizer.json"));

  const io::QuantFormatInfo fi = io::detect_quant_format(*c);
  EXPECT_EQ(fi.nvfp4_modules, int(kLayers * 7));
  EXPECT_EQ(fi.inconsistent_modules, 0);
  EXPECT_NE(fi.format.find("NVFP4"), std::string::npos);
  EXPECT_NE(fi.hf_quant_config.find("quant_algo=NVFP4"), std::string::npos);

  std::unique_ptr<Checkpoint> ci;
  ASSERT_TRUE(Checkpoint::open(in.string(), &ci).is_ok());
  EXPECT_EQ(io::detect_quant_format(*ci).format, "unquantized (BF16)");

  // Quantizing an already quantized checkpoint is refused.
  io::QuantizeSummary sum2;
  EXPECT_FALSE(io::quantize_checkpoint(out.string(), (out.string() + "_again"), {}, &sum2).is_ok());
  fs::remove_all(out.string() + "_again");
  fs::remove_all(in);
  fs::remove_all(out);
}

TEST(CheckpointQuantizer, FusedScalesAndIncludeExclude) {
  const fs::path in = temp_dir("in2"), out = temp_dir("out2");
  build_checkpoint(in);
  io::QuantizerOptions opt;
  opt.fuse_scales = true;
  opt.include = {"^lm_head\\.weight$"};
  opt.exclude = {"down_proj"};
  io::QuantizeSummary sum;
  ASSERT_TRUE(io::quantize_checkpoint(in.string(), out.string(), opt, &sum).is_ok());
  EXPECT_EQ(sum.quantized, int(kLayers * 6 + 1));  // no down_proj, plus lm_head
  std::map<std::string, float> ws2_of;
  std::map<std::string, float> group_max;
  for (const auto& r : sum.tensors) {
    if (!r.quantized) continue;
    ws2_of[r.name] = r.ws2;
    if (!r.fused_group.empty()) group_max[r.fused_group] = std::max(group_max[r.fused_group], r.amax);
  }
  EXPECT_TRUE(ws2_of.count("lm_head.weight"));
  EXPECT_FALSE(ws2_of.count("model.layers.0.mlp.down_proj.weight"));
  for (int l = 0; l < kLayers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    const float q = ws2_of.at(p + "self_attn.q_proj.weight");
    EXPECT_EQ(q, ws2_of.at(p + "self_attn.k_proj.weight"));
    EXPECT_EQ(q, ws2_of.at(p + "self_attn.v_proj.weight"));
    EXPECT_EQ(q, group_max.at(p + "self_attn.qkv") / 2688.0f);
    EXPECT_EQ(ws2_of.at(p + "mlp.gate_proj.weight"), ws2_of.at(p + "mlp.up_proj.weight"));
  }
  const auto hq = read_json(out / "hf_quant_config.json");
  EXPECT_EQ(hq["quantization"]["exclude_modules"],
            nlohmann::json::array({"model.layers.0.mlp.down_proj", "model.layers.1.mlp.down_proj"}));
  // Bad regex -> clear error.
  io::QuantizerOptions bad;
  bad.include = {"("};
  const Status s = io::quantize_checkpoint(in.string(), out.string() + "_bad", bad, &sum);
  EXPECT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("bad regex"), std::string::npos);
  fs::remove_all(in);
  fs::remove_all(out);
  fs::remove_all(out.string() + "_bad");
}

// --input-amax: calibrated activation amax per module -> X.input_scale = amax / 2688 (F32 scalar);
// with --fuse-scales the fused group's modules that have one share the largest; bad files and keys
// that name no quantized module are errors.
TEST(CheckpointQuantizer, InputScalesFromCalibratedAmax) {
  const fs::path in = temp_dir("in_amax"), out = temp_dir("out_amax");
  build_checkpoint(in);
  const std::string q0 = "model.layers.0.self_attn.q_proj", k0 = "model.layers.0.self_attn.k_proj";
  const std::string d1 = "model.layers.1.mlp.down_proj";
  io::QuantizerOptions opt;
  opt.fuse_scales = true;
  opt.input_amax = {{q0, 3.0f}, {k0, 7.5f}, {d1, 21.25f}};
  io::QuantizeSummary sum;
  const Status st = io::quantize_checkpoint(in.string(), out.string(), opt, &sum);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  std::unique_ptr<Checkpoint> c;
  ASSERT_TRUE(Checkpoint::open(out.string(), &c).is_ok());
  auto scalar = [&](const std::string& name) {
    const CheckpointTensor* t = c->find(name);
    EXPECT_NE(t, nullptr) << name;
    if (t == nullptr) return -1.0f;
    EXPECT_EQ(t->info->dtype, Dtype::kF32);
    EXPECT_TRUE(t->info->shape.empty()) << name;
    float v = 0;
    std::memcpy(&v, c->shards()[t->shard]->data(*t->info), 4);
    return v;
  };
  EXPECT_EQ(scalar(q0 + ".input_scale"), 7.5f / 2688.0f);  // fused q/k/v: the largest given
  EXPECT_EQ(scalar(k0 + ".input_scale"), 7.5f / 2688.0f);
  EXPECT_EQ(scalar(d1 + ".input_scale"), 21.25f / 2688.0f);
  EXPECT_EQ(c->find("model.layers.0.self_attn.v_proj.input_scale"), nullptr);  // not given
  EXPECT_EQ(c->find("model.layers.0.mlp.down_proj.input_scale"), nullptr);
  int with_scale = 0;
  for (const auto& r : sum.tensors) with_scale += r.input_scale > 0;
  EXPECT_EQ(with_scale, 3);

  auto fails = [&](std::map<std::string, float> amax, const std::string& needle) {
    io::QuantizerOptions o;
    o.input_amax = std::move(amax);
    io::QuantizeSummary s2;
    const Status s = io::quantize_checkpoint(in.string(), out.string() + "_bad", o, &s2);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
    EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
  };
  fails({{"model.layers.0.mlp.down_proj.weight", 1.0f}}, "not a quantized module");  // a tensor name
  fails({{"model.embed_tokens", 1.0f}}, "not a quantized module");                    // not quantized
  fails({{d1, 0.0f}}, "finite number > 0");
  fails({{d1, std::numeric_limits<float>::quiet_NaN()}}, "finite number > 0");

  // The JSON file of --input-amax.
  const fs::path j = in / "amax.json";
  auto read = [&](const std::string& text, std::map<std::string, float>* m) {
    std::ofstream(j) << text;
    return io::read_input_amax(j.string(), m);
  };
  std::map<std::string, float> m;
  ASSERT_TRUE(read(R"({"a.b": 1.5, "c": 2})", &m).is_ok());
  EXPECT_EQ(m, (std::map<std::string, float>{{"a.b", 1.5f}, {"c", 2.0f}}));
  EXPECT_FALSE(read(R"({"a": "1.5"})", &m).is_ok());
  EXPECT_FALSE(read(R"({"a": -1})", &m).is_ok());
  EXPECT_FALSE(read(R"({"a": 1e300})", &m).is_ok());
  EXPECT_FALSE(read(R"([1, 2])", &m).is_ok());
  EXPECT_FALSE(read(R"({"a": )", &m).is_ok());
  fs::remove_all(in);
  fs::remove_all(out);
  fs::remove_all(out.string() + "_bad");
}

TEST(CheckpointQuantizer, SingleFileAndBadIndex) {
  const fs::path d = temp_dir("single");
  fs::create_directories(d);
  std::unique_ptr<SafetensorsWriter> w;
  ASSERT_TRUE(SafetensorsWriter::create((d / "model.safetensors").string(),
                                        {{"a.weight", Dtype::kF32, {4, 32}}, {"b.weight", Dtype::kF32, {4, 8}}}, {}, &w)
                  .is_ok());
  std::vector<float> a(128), b(32);
  for (size_t i = 0; i < a.size(); ++i) a[i] = std::sin(float(i));
  ASSERT_TRUE(w->write("a.weight", a.data(), a.size() * 4).is_ok());
  ASSERT_TRUE(w->write("b.weight", b.data(), b.size() * 4).is_ok());  // all zero, K=8: not quantizable
  ASSERT_TRUE(w->finish().is_ok());
  io::QuantizerOptions opt;
  opt.verify = true;
  io::QuantizeSummary sum;
  const Status s = io::quantize_checkpoint((d / "model.safetensors").string(), (d / "out").string(), opt, &sum);
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  EXPECT_EQ(sum.quantized, 1);
  EXPECT_FALSE(fs::exists(d / "out" / "model.safetensors.index.json"));
  std::unique_ptr<Checkpoint> c;
  ASSERT_TRUE(Checkpoint::open((d / "out" / "model.safetensors").string(), &c).is_ok());
  EXPECT_NE(c->find("a.weight_scale_2"), nullptr);

  // An index that points outside the directory, or at a shard lacking the tensor, is refused.
  fs::create_directories(d / "bad");
  fs::copy_file(d / "model.safetensors", d / "bad" / "model.safetensors");
  std::ofstream(d / "bad" / "model.safetensors.index.json") << R"({"weight_map": {"a.weight": "../model.safetensors"}})";
  Status e = Checkpoint::open((d / "bad").string(), &c);
  EXPECT_NE(e.message().find("not a plain file name"), std::string::npos) << e.message();
  std::ofstream(d / "bad" / "model.safetensors.index.json", std::ios::trunc)
      << R"({"weight_map": {"zzz.weight": "model.safetensors"}})";
  e = Checkpoint::open((d / "bad").string(), &c);
  EXPECT_NE(e.message().find("does not contain it"), std::string::npos) << e.message();
  fs::remove_all(d);
}

namespace {

// Quantizes an input tensor with reference::quantize_nvfp4 (kModelOpt, linear scales).
void reference_quantize(const uint8_t* data, Dtype dt, int64_t n, int64_t k, float ws2, std::vector<uint8_t>* codes,
                        std::vector<uint8_t>* scales) {
  codes->assign(size_t(n * k / 2), 0);
  scales->assign(size_t(n * k / 16), 0);
  // The reference reads 16/32-bit values: give it an aligned copy.
  std::vector<uint32_t> aligned((size_t(n * k) * (dt == Dtype::kF32 ? 4 : 2) + 3) / 4);
  std::memcpy(aligned.data(), data, size_t(n * k) * (dt == Dtype::kF32 ? 4 : 2));
  Nvfp4QuantizeParams p;
  p.input = aligned.data();
  p.input_dtype = dt == Dtype::kBF16 ? DType::kBF16 : dt == Dtype::kF16 ? DType::kFP16 : DType::kFP32;
  p.rows = n;
  p.cols = k;
  p.global_scale = &ws2;
  p.numerics = QuantNumerics::kModelOpt;
  p.out_codes = codes->data();
  p.out_codes_bytes = int64_t(codes->size());
  p.out_scales = scales->data();
  p.out_scales_bytes = int64_t(scales->size());
  p.scale_layout = ScaleLayout::kLinear;
  ASSERT_TRUE(reference::quantize_nvfp4(p).is_ok());
}

// amax of an input tensor by reference::compute_global_scale.
float reference_amax(const uint8_t* data, Dtype dt, int64_t n, int64_t k) {
  std::vector<uint32_t> aligned((size_t(n * k) * (dt == Dtype::kF32 ? 4 : 2) + 3) / 4);
  std::memcpy(aligned.data(), data, size_t(n * k) * (dt == Dtype::kF32 ? 4 : 2));
  GlobalScaleParams g;
  g.input = aligned.data();
  g.input_dtype = dt == Dtype::kBF16 ? DType::kBF16 : dt == Dtype::kF16 ? DType::kFP16 : DType::kFP32;
  g.rows = n;
  g.cols = k;
  g.numerics = QuantNumerics::kModelOpt;
  float gs = 0, amax = -1;
  g.out_global_scale = &gs;
  g.out_amax = &amax;
  EXPECT_TRUE(reference::compute_global_scale(g).is_ok());
  return amax;
}

}  // namespace

// Mixed dtypes, a misaligned tensor, zero / Inf / NaN data, with and without fused scales, on 1, 2
// and 3 CPU threads: every output file is identical across thread counts, and every quantized
// tensor equals the reference quantizer's bytes with ws2 from the reference amax (or the group's).
TEST(CheckpointQuantizer, CpuThreadsAndMixedDtypesMatchReference) {
  const fs::path in = temp_dir("mixed_in");
  const auto bytes = build_mixed_checkpoint(in);
  for (bool fuse : {false, true}) {
    std::vector<fs::path> outs;
    for (int threads : {1, 2, 3}) {
      const fs::path out = temp_dir("mixed_out_t" + std::to_string(threads) + (fuse ? "_fused" : ""));
      io::QuantizerOptions opt;
      opt.device = io::QuantDevice::kCpu;
      opt.threads = threads;
      opt.fuse_scales = fuse;
      io::QuantizeSummary sum;
      const Status s = io::quantize_checkpoint((in / "model.safetensors").string(), out.string(), opt, &sum);
      ASSERT_TRUE(s.is_ok()) << s.to_string();
      EXPECT_FALSE(sum.used_gpu);
      EXPECT_EQ(sum.threads, threads);
      EXPECT_EQ(sum.device, "cpu (" + std::to_string(threads) + (threads == 1 ? " thread)" : " threads)"));
      EXPECT_EQ(sum.quantized, 9);  // every 2-D float *.weight but the K=40 one and lm_head
      outs.push_back(out);
    }
    for (size_t i = 1; i < outs.size(); ++i)
      EXPECT_EQ(differing_files(outs[0], outs[i]), std::vector<std::string>{}) << "threads 1 vs " << i + 1;

    // Against the reference.
    std::unique_ptr<Checkpoint> c;
    ASSERT_TRUE(Checkpoint::open((outs[0] / "model.safetensors").string(), &c).is_ok());
    std::unique_ptr<Checkpoint> ci;
    ASSERT_TRUE(Checkpoint::open((in / "model.safetensors").string(), &ci).is_ok());
    int checked = 0;
    for (const auto& [name, raw] : bytes) {
      const CheckpointTensor* it = ci->find(name);
      ASSERT_NE(it, nullptr);
      const TensorInfo& ti = *it->info;
      const CheckpointTensor* ot = c->find(name);
      ASSERT_NE(ot, nullptr) << name;
      const bool quantized = ot->info->dtype == Dtype::kU8 && ti.dtype != Dtype::kU8;
      if (!quantized) {
        ASSERT_EQ(ot->info->nbytes(), raw.size()) << name;
        EXPECT_EQ(std::memcmp(c->shards()[ot->shard]->data(*ot->info), raw.data(), raw.size()), 0) << name;
        continue;
      }
      const int64_t n = ti.shape[0], k = ti.shape[1];
      float amax = reference_amax(raw.data(), ti.dtype, n, k);
      const std::string g = fuse ? io::fusion_group(name) : "";
      if (!g.empty()) {  // the group's largest amax
        for (const auto& [other, oraw] : bytes) {
          if (other == name || io::fusion_group(other) != g) continue;
          const TensorInfo& oi = *ci->find(other)->info;
          amax = std::max(amax, reference_amax(oraw.data(), oi.dtype, oi.shape[0], oi.shape[1]));
        }
      }
      float ws2 = amax / 2688.0f;
      if (ws2 == 0.0f) ws2 = 1.0f;
      const std::string m = name.substr(0, name.size() - 7);
      float got_ws2;
      std::memcpy(&got_ws2, c->shards()[0]->data(*c->find(m + ".weight_scale_2")->info), 4);
      EXPECT_EQ(std::memcmp(&got_ws2, &ws2, 4), 0) << name << ": ws2 " << got_ws2 << " vs " << ws2;
      std::vector<uint8_t> rc, rs;
      reference_quantize(raw.data(), ti.dtype, n, k, ws2, &rc, &rs);
      EXPECT_EQ(std::memcmp(rc.data(), c->shards()[0]->data(*ot->info), rc.size()), 0) << name;
      EXPECT_EQ(std::memcmp(rs.data(), c->shards()[0]->data(*c->find(m + ".weight_scale")->info), rs.size()), 0)
          << name;
      ++checked;
    }
    EXPECT_EQ(checked, 9);
    for (const auto& o : outs) fs::remove_all(o);
  }
  fs::remove_all(in);
}

TEST(CheckpointQuantizer, DeviceOptions) {
  io::QuantDevice d = io::QuantDevice::kCpu;
  EXPECT_TRUE(io::parse_quant_device("gpu", &d));
  EXPECT_EQ(d, io::QuantDevice::kGpu);
  EXPECT_TRUE(io::parse_quant_device("auto", &d));
  EXPECT_EQ(d, io::QuantDevice::kAuto);
  EXPECT_TRUE(io::parse_quant_device("cpu", &d));
  EXPECT_EQ(d, io::QuantDevice::kCpu);
  EXPECT_FALSE(io::parse_quant_device("cuda", &d));
  EXPECT_STREQ(io::quant_device_name(io::QuantDevice::kGpu), "gpu");

  const fs::path in = temp_dir("dev_in"), out = temp_dir("dev_out");
  build_checkpoint(in);
  io::QuantizeSummary sum;
  io::QuantizerOptions opt;
  opt.threads = -1;
  Status s = io::quantize_checkpoint(in.string(), out.string(), opt, &sum);
  EXPECT_NE(s.message().find("threads must be >= 0"), std::string::npos) << s.to_string();

  // --device auto always works; on a machine without a GPU it says why it used the CPU.
  opt.threads = 0;
  s = io::quantize_checkpoint(in.string(), out.string(), opt, &sum);
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  if (!has_sm90a_device()) {
    EXPECT_FALSE(sum.used_gpu);
    EXPECT_EQ(sum.device.rfind("cpu (", 0), 0u) << sum.device;
    EXPECT_NE(sum.device_note.find("no usable sm_90 GPU"), std::string::npos) << sum.device_note;
    // --device gpu without a GPU is an error that says why.
    opt.device = io::QuantDevice::kGpu;
    s = io::quantize_checkpoint(in.string(), out.string() + "_gpu", opt, &sum);
    EXPECT_FALSE(s.is_ok());
    EXPECT_NE(s.message().find("--device gpu: no usable sm_90 GPU"), std::string::npos) << s.to_string();
  } else {
    EXPECT_TRUE(sum.used_gpu) << sum.device << " " << sum.device_note;
    EXPECT_EQ(sum.device.rfind("gpu (", 0), 0u) << sum.device;
  }
  fs::remove_all(in);
  fs::remove_all(out);
  fs::remove_all(out.string() + "_gpu");
}
