// The checkpoint quantizer (docs/QUANTIZER.md).
#include "io/checkpoint_quantizer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <set>

#include <nlohmann/json.hpp>

#include "common/json_bounded.h"
#include "fp4kit/device.h"
#include "fp4kit/layout.h"
#include "fp4kit/reference.h"
#include "io/gpu_quantizer.h"
#include "io/nvfp4_cpu.h"

namespace fp4kit::io {

namespace fs = std::filesystem;
using nlohmann::ordered_json;
using st::Dtype;

namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}
bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

Status err(const std::string& msg) { return Status(StatusCode::kInvalidArgument, "quantize: " + msg); }

bool input_dtype(Dtype d, DType* out) {
  switch (d) {
    case Dtype::kBF16: *out = DType::kBF16; return true;
    case Dtype::kF16: *out = DType::kFP16; return true;
    case Dtype::kF32: *out = DType::kFP32; return true;
    default: return false;
  }
}

// Why a tensor cannot be quantized; empty when it can.
std::string ineligible_reason(const std::string& name, const st::TensorInfo& t) {
  DType dt = DType::kBF16;
  if (!ends_with(name, ".weight")) return "not a *.weight";
  if (!input_dtype(t.dtype, &dt)) return std::string("dtype ") + st::dtype_name(t.dtype) + " (need BF16/F16/F32)";
  if (t.shape.size() != 2) return std::to_string(t.shape.size()) + "-D (need 2-D)";
  if (t.shape[0] <= 0 || t.shape[1] <= 0) return "empty";
  if (t.shape[1] % 16 != 0) return "K=" + std::to_string(t.shape[1]) + " not a multiple of 16";
  return {};
}

std::string module_of(const std::string& weight_name) { return weight_name.substr(0, weight_name.size() - 7); }

struct Compiled {
  std::vector<std::regex> include, exclude;
};

bool any_match(const std::vector<std::regex>& res, const std::string& s) {
  for (const auto& re : res)
    if (std::regex_search(s, re)) return true;
  return false;
}

// kModelOpt's decode global scale of a tensor (or fused group) with this amax: ws2 = amax / 2688
// (FP32 division, as reference::compute_global_scale). An all-zero weight has ws2 = 0 and
// ModelOpt's recipe would divide 0 by 0: use 1.0, which codes every block as scale 1.0 (0x38) and
// every element as 0.
float ws2_from_amax(float amax) {
  const float ws2 = amax / 2688.0f;
  return ws2 == 0.0f ? 1.0f : ws2;
}

// amax and quantization of one tensor on the chosen device. Exactly one tensor is in flight: on
// the GPU, amax() leaves the tensor loaded for the quantize() that follows it.
class Engine {
 public:
  Engine(GpuQuantizer* gpu, int threads) : gpu_(gpu), threads_(threads) {}

  Status amax(const st::SafetensorsFile& f, const st::TensorInfo& t, float* out) {
    DType dt = DType::kBF16;
    input_dtype(t.dtype, &dt);
    const int64_t n = t.shape[0], k = t.shape[1];
    const void* x = host_input(f, t, dt);
    if (gpu_) {
      FP4KIT_RETURN_IF_ERROR(gpu_->load(x, dt, n, k));
      return gpu_->amax(out);
    }
    *out = cpu_amax(x, dt, n * k, threads_);
    return Status::ok();
  }

  // After amax() of the same tensor.
  Status quantize(const st::SafetensorsFile& f, const st::TensorInfo& t, float ws2, uint8_t* codes, uint8_t* scales) {
    DType dt = DType::kBF16;
    input_dtype(t.dtype, &dt);
    const int64_t n = t.shape[0], k = t.shape[1];
    if (gpu_) return gpu_->quantize(ws2, codes, scales);
    cpu_quantize_modelopt(host_input(f, t, dt), dt, n, k, ws2, codes, scales, threads_);
    return Status::ok();
  }

  void drop_copy() { copy_ = {}; }

 private:
  // The tensor's bytes, copied once when the file places them at an address that is not a
  // multiple of the element size (safetensors does not require alignment).
  const void* host_input(const st::SafetensorsFile& f, const st::TensorInfo& t, DType dt) {
    const uint8_t* p = f.data(t);
    if (reinterpret_cast<uintptr_t>(p) % dtype_size(dt) == 0) return p;
    if (copy_name_ != t.name || copy_.size() != t.nbytes()) {
      copy_.assign(p, p + t.nbytes());
      copy_name_ = t.name;
    }
    return copy_.data();
  }

  GpuQuantizer* gpu_;
  int threads_;
  std::vector<uint8_t> copy_;
  std::string copy_name_;
};

// Writes a string to a file.
Status write_text(const fs::path& p, const std::string& text) {
  std::ofstream o(p, std::ios::binary | std::ios::trunc);
  if (!o) return err("cannot create " + p.string());
  o << text;
  if (!o) return err("write failed: " + p.string());
  return Status::ok();
}

float load_elem(const uint8_t* base, Dtype d, int64_t i) {
  uint16_t h;
  switch (d) {
    case Dtype::kBF16: std::memcpy(&h, base + 2 * i, 2); return st::bf16_to_float(h);
    case Dtype::kF16: std::memcpy(&h, base + 2 * i, 2); return st::f16_to_float(h);
    default: {
      float f;
      std::memcpy(&f, base + 4 * i, 4);
      return f;
    }
  }
}

}  // namespace

const char* quant_device_name(QuantDevice d) {
  switch (d) {
    case QuantDevice::kCpu: return "cpu";
    case QuantDevice::kGpu: return "gpu";
    default: return "auto";
  }
}

bool parse_quant_device(std::string_view s, QuantDevice* out) {
  for (QuantDevice d : {QuantDevice::kAuto, QuantDevice::kCpu, QuantDevice::kGpu}) {
    if (s == quant_device_name(d)) {
      *out = d;
      return true;
    }
  }
  return false;
}

bool default_quantize_rule(std::string_view name) {
  if (!ends_with(name, ".weight")) return false;
  if (contains(name, "embed") || contains(name, "lm_head") || contains(name, "norm") || contains(name, "router"))
    return false;
  if (ends_with(name, ".mlp.gate.weight") || ends_with(name, ".block_sparse_moe.gate.weight") || name == "gate.weight")
    return false;
  return true;
}

std::string fusion_group(std::string_view name) {
  static const std::regex kQkv(R"(^(.*)\.(q_proj|k_proj|v_proj)\.weight$)");
  static const std::regex kGateUp(R"(^(.*)\.(gate_proj|up_proj)\.weight$)");
  static const std::regex kW13(R"(^(.*)\.(w1|w3)\.weight$)");
  const std::string s(name);
  std::smatch m;
  if (std::regex_match(s, m, kQkv)) return m[1].str() + ".qkv";
  if (std::regex_match(s, m, kGateUp)) return m[1].str() + ".gate_up";
  if (std::regex_match(s, m, kW13)) return m[1].str() + ".w13";
  return {};
}

Status quantize_checkpoint(const std::string& in_path, const std::string& out_dir, const QuantizerOptions& opt,
                           QuantizeSummary* summary) {
  using clock = std::chrono::steady_clock;
  const auto t_start = clock::now();
  *summary = QuantizeSummary{};
  if (opt.threads < 0) return err("threads must be >= 0 (0 = all hardware threads), got " + std::to_string(opt.threads));

  Compiled re;
  for (const auto* list : {&opt.include, &opt.exclude}) {
    for (const std::string& p : *list) {
      try {
        (list == &opt.include ? re.include : re.exclude).emplace_back(p, std::regex::ECMAScript);
      } catch (const std::regex_error& e) {
        return err("bad regex '" + p + "': " + e.what());
      }
    }
  }

  std::unique_ptr<st::Checkpoint> ckpt;
  FP4KIT_RETURN_IF_ERROR(st::Checkpoint::open(in_path, &ckpt));
  std::error_code ec;
  if (fs::exists(out_dir, ec) && fs::equivalent(out_dir, ckpt->dir(), ec))
    return err("output directory must differ from the input directory");
  fs::create_directories(out_dir, ec);
  if (!fs::is_directory(out_dir, ec)) return err("cannot create output directory " + out_dir);

  // ---- decide -----------------------------------------------------------------------------------
  const auto& all = ckpt->tensors();
  for (const auto& [name, ct] : all) {
    if (ends_with(name, ".weight_scale_2"))
      return err("input already holds '" + name + "': it is a quantized checkpoint");
  }
  std::vector<char> quantize(all.size(), 0);
  std::set<std::string> names;
  for (const auto& [name, ct] : all) names.insert(name);
  summary->tensors.resize(all.size());
  for (size_t i = 0; i < all.size(); ++i) {
    const auto& [name, ct] = all[i];
    TensorResult& r = summary->tensors[i];
    r.name = name;
    r.dtype = st::dtype_name(ct.info->dtype);
    r.shape = ct.info->shape;
    r.in_bytes = ct.info->nbytes();
    const bool included = any_match(re.include, name);
    const bool wanted = (default_quantize_rule(name) || included) && !any_match(re.exclude, name);
    const std::string why = ineligible_reason(name, *ct.info);
    if (wanted && why.empty()) {
      const std::string m = module_of(name);
      if (names.count(m + ".weight_scale") || names.count(m + ".weight_scale_2"))
        return err("tensor '" + name + "' already has a weight_scale (already quantized checkpoint?)");
      quantize[i] = 1;
    } else if (included && !why.empty()) {
      r.note = "included but not quantizable: " + why;
    }
  }
  for (size_t i = 0; i < all.size(); ++i) {
    const auto& [name, ct] = all[i];
    if (quantize[i] || !ends_with(name, ".weight") || ct.info->shape.size() != 2) continue;
    DType dt;
    if (!input_dtype(ct.info->dtype, &dt) || contains(name, "embed") || contains(name, "norm")) continue;
    summary->exclude_modules.push_back(module_of(name));
  }

  // ---- calibrated activation scales -------------------------------------------------------------
  std::map<std::string, float> input_amax;  // quantized module -> amax (fused groups: their largest)
  {
    std::set<std::string> quantized_modules;
    for (size_t i = 0; i < all.size(); ++i)
      if (quantize[i]) quantized_modules.insert(module_of(all[i].first));
    for (const auto& [m, amax] : opt.input_amax) {
      if (!(std::isfinite(amax) && amax > 0.0f))
        return err("input amax of '" + m + "' must be a finite number > 0, got " + std::to_string(amax));
      if (!quantized_modules.count(m))
        return err("input amax given for '" + m + "', which is not a quantized module (keys are module names, "
                   "e.g. 'model.layers.0.mlp.down_proj' for model.layers.0.mlp.down_proj.weight)");
      input_amax[m] = amax;
    }
    if (opt.fuse_scales) {
      std::map<std::string, float> group_max;
      for (const auto& [m, amax] : input_amax) {
        const std::string g = fusion_group(m + ".weight");
        if (!g.empty()) group_max[g] = std::max(group_max[g], amax);
      }
      for (auto& [m, amax] : input_amax) {
        const std::string g = fusion_group(m + ".weight");
        if (!g.empty()) amax = group_max[g];
      }
    }
  }

  // ---- device ------------------------------------------------------------------------------------
  // GPU buffers are sized once, to the largest quantized tensor.
  int64_t max_bytes = 0, max_elements = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    if (!quantize[i]) continue;
    max_bytes = std::max(max_bytes, int64_t(all[i].second.info->nbytes()));
    max_elements = std::max(max_elements, all[i].second.info->numel());
  }
  const int threads = resolve_threads(opt.threads);
  std::unique_ptr<GpuQuantizer> gpu;
  if (opt.device != QuantDevice::kCpu) {
    const DeviceInfo& dev = device_info();
    const bool usable = has_sm90a_device();
    const std::string why = !dev.available ? dev.reason
                                           : "device " + dev.name + " is sm_" + std::to_string(dev.compute_capability) +
                                                 ", the kernels are built for sm_90a";
    if (opt.device == QuantDevice::kGpu && !usable) return err("--device gpu: no usable sm_90 GPU (" + why + ")");
    if (usable && max_elements > 0) {
      const Status g = GpuQuantizer::create(max_bytes, max_elements, &gpu);
      if (!g.is_ok()) {
        if (opt.device == QuantDevice::kGpu) return err("--device gpu: " + g.to_string());
        summary->device_note = "auto: GPU unavailable (" + g.to_string() + "), quantized on the CPU";
        gpu.reset();
      }
    } else if (!usable) {
      summary->device_note = "auto: no usable sm_90 GPU (" + why + "), quantized on the CPU";
    }
    if (gpu) summary->device = "gpu (" + dev.name + ")";
  }
  summary->used_gpu = gpu != nullptr;
  summary->threads = threads;
  if (!gpu) summary->device = "cpu (" + std::to_string(threads) + (threads == 1 ? " thread)" : " threads)");
  Engine engine(gpu.get(), threads);

  // ---- fused global scales (a pre-pass over the group members) ---------------------------------
  std::map<std::string, float> group_amax;  // group -> max amax
  const auto t_q0 = clock::now();
  double quantize_seconds = 0;
  if (opt.fuse_scales) {
    for (size_t i = 0; i < all.size(); ++i) {
      if (!quantize[i]) continue;
      const std::string g = fusion_group(all[i].first);
      if (g.empty()) continue;
      const auto& ct = all[i].second;
      const st::SafetensorsFile& f = *ckpt->shards()[ct.shard];
      float amax = 0;
      FP4KIT_RETURN_IF_ERROR(engine.amax(f, *ct.info, &amax));
      engine.drop_copy();
      f.release(*ct.info);
      auto it = group_amax.find(g);
      if (it == group_amax.end() || amax > it->second) group_amax[g] = amax;
      summary->tensors[i].fused_group = g;
    }
    // A group of one tensor is not fused.
    std::map<std::string, int> count;
    for (const auto& r : summary->tensors)
      if (!r.fused_group.empty()) ++count[r.fused_group];
    for (auto& r : summary->tensors)
      if (!r.fused_group.empty() && count[r.fused_group] < 2) r.fused_group.clear();
  }
  quantize_seconds += std::chrono::duration<double>(clock::now() - t_q0).count();

  // ---- write shards ------------------------------------------------------------------------------
  uint64_t done = 0;
  const uint64_t total = ckpt->total_tensor_bytes();
  std::map<std::string, std::string> weight_map;
  uint64_t total_out = 0;
  const std::map<std::string, std::string> metadata = {{"format", "pt"},
                                                       {"producer", std::string("fp4kit ") + fp4kit::version()}};
  for (size_t s = 0; s < ckpt->shards().size(); ++s) {
    const st::SafetensorsFile& in = *ckpt->shards()[s];
    std::vector<size_t> members;
    for (size_t i = 0; i < all.size(); ++i)
      if (all[i].second.shard == s) members.push_back(i);
    if (members.empty()) continue;
    std::vector<st::TensorSpec> plan;
    for (size_t i : members) {
      const auto& [name, ct] = all[i];
      if (!quantize[i]) {
        plan.push_back({name, ct.info->dtype, ct.info->shape});
        continue;
      }
      const int64_t n = ct.info->shape[0], k = ct.info->shape[1];
      const std::string m = module_of(name);
      plan.push_back({name, Dtype::kU8, {n, k / 2}});
      plan.push_back({m + ".weight_scale", Dtype::kF8_E4M3, {n, k / 16}});
      plan.push_back({m + ".weight_scale_2", Dtype::kF32, {}});
      if (input_amax.count(m)) plan.push_back({m + ".input_scale", Dtype::kF32, {}});
    }
    const std::string file = ckpt->shard_names()[s];
    const fs::path out_path = fs::path(out_dir) / file;
    std::unique_ptr<st::SafetensorsWriter> w;
    FP4KIT_RETURN_IF_ERROR(st::SafetensorsWriter::create(out_path.string(), plan, metadata, &w));
    for (const st::TensorSpec& t : plan) weight_map[t.name] = file;

    std::vector<uint8_t> codes, scales;
    for (size_t i : members) {
      const auto& [name, ct] = all[i];
      const st::TensorInfo& t = *ct.info;
      TensorResult& r = summary->tensors[i];
      if (!quantize[i]) {
        FP4KIT_RETURN_IF_ERROR(w->write(name, in.data(t), size_t(t.nbytes())));
        r.out_bytes = t.nbytes();
        ++summary->copied;
      } else {
        const auto t0 = clock::now();
        const int64_t n = t.shape[0], k = t.shape[1];
        float amax = 0;
        FP4KIT_RETURN_IF_ERROR(engine.amax(in, t, &amax));
        r.amax = amax;
        // A fused group's ws2 comes from the group's amax, by the same FP32 division.
        const float ws2 = ws2_from_amax(r.fused_group.empty() ? amax : group_amax[r.fused_group]);
        r.ws2 = ws2;
        codes.resize(size_t(n * k / 2));
        scales.resize(size_t(n * k / 16));
        FP4KIT_RETURN_IF_ERROR(engine.quantize(in, t, ws2, codes.data(), scales.data()));
        engine.drop_copy();
        quantize_seconds += std::chrono::duration<double>(clock::now() - t0).count();
        const std::string m = module_of(name);
        FP4KIT_RETURN_IF_ERROR(w->write(name, codes.data(), codes.size()));
        FP4KIT_RETURN_IF_ERROR(w->write(m + ".weight_scale", scales.data(), scales.size()));
        FP4KIT_RETURN_IF_ERROR(w->write(m + ".weight_scale_2", &ws2, 4));
        r.quantized = true;
        r.out_bytes = codes.size() + scales.size() + 4;
        if (auto it = input_amax.find(m); it != input_amax.end()) {
          const float input_scale = it->second / 2688.0f;  // the decode convention of weight_scale_2
          FP4KIT_RETURN_IF_ERROR(w->write(m + ".input_scale", &input_scale, 4));
          r.input_scale = input_scale;
          r.out_bytes += 4;
        }
        ++summary->quantized;
        summary->quantized_input_bytes += t.nbytes();
      }
      in.release(t);
      done += t.nbytes();
      if (opt.progress) opt.progress(done, total, name);
    }
    codes = {};
    scales = {};
    FP4KIT_RETURN_IF_ERROR(w->finish());
    total_out += w->data_bytes();
    summary->output_files.push_back(file);
  }
  summary->input_bytes = total;
  summary->output_bytes = total_out;
  if (ckpt->has_index()) {
    FP4KIT_RETURN_IF_ERROR(
        st::write_index((fs::path(out_dir) / "model.safetensors.index.json").string(), total_out, weight_map));
    summary->output_files.push_back("model.safetensors.index.json");
  }

  // ---- hf_quant_config.json, config.json, other files ------------------------------------------
  const std::string version = std::string("fp4kit-") + fp4kit::version();
  ordered_json hq;
  hq["producer"] = {{"name", "modelopt"}, {"version", version}};
  hq["quantization"] = {{"quant_algo", "NVFP4"},
                        {"kv_cache_quant_algo", nullptr},
                        {"group_size", 16},
                        {"exclude_modules", summary->exclude_modules}};
  FP4KIT_RETURN_IF_ERROR(write_text(fs::path(out_dir) / "hf_quant_config.json", hq.dump(4) + "\n"));
  summary->output_files.push_back("hf_quant_config.json");

  const fs::path in_dir = ckpt->dir();
  const fs::path config = in_dir / "config.json";
  if (fs::is_regular_file(config, ec)) {
    std::string text;
    FP4KIT_RETURN_IF_ERROR(st::read_json_file(config.string(), &text));
    ordered_json c;
    try {
      c = fp4kit::detail::parse_json_bounded<ordered_json>(text);
    } catch (const std::exception& e) {
      return err(config.string() + " is not valid JSON: " + e.what());
    }
    if (!c.is_object()) return err(config.string() + " is not a JSON object");
    ordered_json group = {{"input_activations", {{"dynamic", false}, {"num_bits", 4}, {"type", "float"}, {"group_size", 16}}},
                          {"weights", {{"dynamic", false}, {"num_bits", 4}, {"type", "float"}, {"group_size", 16}}},
                          {"targets", {"Linear"}}};
    ordered_json qc;
    qc["config_groups"] = {{"group_0", group}};
    qc["ignore"] = summary->exclude_modules;
    qc["quant_algo"] = "NVFP4";
    qc["producer"] = hq["producer"];
    qc["quant_method"] = "modelopt";
    c["quantization_config"] = qc;
    FP4KIT_RETURN_IF_ERROR(write_text(fs::path(out_dir) / "config.json", c.dump(2) + "\n"));
    summary->output_files.push_back("config.json");
  }
  if (opt.copy_other_files && ckpt->has_index()) {
    for (const auto& e : fs::directory_iterator(in_dir, ec)) {
      if (!e.is_regular_file()) continue;
      const std::string fn = e.path().filename().string();
      if (ends_with(fn, ".safetensors") || ends_with(fn, ".tmp") || fn == "model.safetensors.index.json" ||
          fn == "config.json" || fn == "hf_quant_config.json")
        continue;
      fs::copy_file(e.path(), fs::path(out_dir) / fn, fs::copy_options::overwrite_existing, ec);
      if (ec) return err("cannot copy " + e.path().string() + ": " + ec.message());
      summary->output_files.push_back(fn);
    }
  }
  summary->quantize_seconds = quantize_seconds;
  summary->seconds = std::chrono::duration<double>(clock::now() - t_start).count();

  // ---- verify ------------------------------------------------------------------------------------
  if (opt.verify) {
    const auto t_v = clock::now();
    std::unique_ptr<st::Checkpoint> outc;
    const std::string out_open = ckpt->has_index() || ckpt->shards().size() > 1
                                     ? out_dir
                                     : (fs::path(out_dir) / ckpt->shard_names()[0]).string();
    FP4KIT_RETURN_IF_ERROR(st::Checkpoint::open(out_open, &outc));
    double min_snr = std::numeric_limits<double>::infinity();
    std::vector<float> deq;
    for (size_t i = 0; i < all.size(); ++i) {
      const auto& [name, ct] = all[i];
      const st::SafetensorsFile& in = *ckpt->shards()[ct.shard];
      const st::CheckpointTensor* o = outc->find(name);
      if (!o) return err("verify: output lacks tensor '" + name + "'");
      const st::SafetensorsFile& of = *outc->shards()[o->shard];
      if (!quantize[i]) {
        if (o->info->nbytes() != ct.info->nbytes() ||
            std::memcmp(of.data(*o->info), in.data(*ct.info), size_t(ct.info->nbytes())) != 0) {
          summary->verified_copies_identical = false;
          summary->tensors[i].note = "copy differs from the input";
        }
        continue;
      }
      const std::string m = module_of(name);
      const st::CheckpointTensor* sc = outc->find(m + ".weight_scale");
      const st::CheckpointTensor* s2 = outc->find(m + ".weight_scale_2");
      if (!sc || !s2 || s2->info->nbytes() != 4) return err("verify: output lacks scales of '" + name + "'");
      float ws2;
      std::memcpy(&ws2, outc->shards()[s2->shard]->data(*s2->info), 4);
      const int64_t n = ct.info->shape[0], k = ct.info->shape[1];
      deq.assign(size_t(n * k), 0.0f);
      DequantizeParams d;
      d.format = BlockFormat::kNVFP4;
      d.elements = of.data(*o->info);
      d.scales = outc->shards()[sc->shard]->data(*sc->info);
      d.scale_layout = ScaleLayout::kLinear;
      d.rows = n;
      d.cols = k;
      d.decode_global_scale = &ws2;
      d.output = deq.data();
      d.output_dtype = DType::kFP32;
      d.output_bytes = int64_t(deq.size() * 4);
      FP4KIT_RETURN_IF_ERROR(reference::dequantize(d));
      double sig = 0, noise = 0;
      const uint8_t* x = in.data(*ct.info);
      for (int64_t j = 0; j < n * k; ++j) {
        const double a = load_elem(x, ct.info->dtype, j);
        const double e = a - double(deq[size_t(j)]);
        sig += a * a;
        noise += e * e;
      }
      const double snr = noise == 0 ? std::numeric_limits<double>::infinity() : 10.0 * std::log10(sig / noise);
      summary->tensors[i].snr_db = snr;
      min_snr = std::min(min_snr, snr);
      of.release(*o->info);
      in.release(*ct.info);
    }
    summary->min_snr_db = summary->quantized ? min_snr : std::numeric_limits<double>::quiet_NaN();
    summary->verify_seconds = std::chrono::duration<double>(clock::now() - t_v).count();
  }
  return Status::ok();
}

Status read_input_amax(const std::string& path, std::map<std::string, float>* out) {
  out->clear();
  std::string text;
  FP4KIT_RETURN_IF_ERROR(st::read_json_file(path, &text));
  nlohmann::json j;
  try {
    j = fp4kit::detail::parse_json_bounded<nlohmann::json>(text);
  } catch (const std::exception& e) {
    return err(path + " is not valid JSON: " + e.what());
  }
  if (!j.is_object()) return err(path + ": expected a JSON object {\"module\": amax, ...}");
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!it.value().is_number())
      return err(path + ": the amax of '" + it.key() + "' is a " + it.value().type_name() + ", expected a number");
    const double v = it.value().get<double>();
    if (!(std::isfinite(v) && v > 0.0 && v <= double(std::numeric_limits<float>::max())))
      return err(path + ": the amax of '" + it.key() + "' must be a finite number > 0");
    (*out)[it.key()] = float(v);
  }
  return Status::ok();
}

QuantFormatInfo detect_quant_format(const st::Checkpoint& ckpt) {
  QuantFormatInfo info;
  std::map<std::string, int> float_dtypes;
  for (const auto& [name, ct] : ckpt.tensors()) {
    if (ends_with(name, ".weight") && ct.info->shape.size() == 2) {
      const Dtype d = ct.info->dtype;
      if (d == Dtype::kBF16 || d == Dtype::kF16 || d == Dtype::kF32) ++float_dtypes[st::dtype_name(d)];
    }
    if (!ends_with(name, ".weight_scale_2")) continue;
    const std::string m = name.substr(0, name.size() - std::string_view(".weight_scale_2").size());
    const st::CheckpointTensor* w = ckpt.find(m + ".weight");
    const st::CheckpointTensor* s = ckpt.find(m + ".weight_scale");
    const bool ok = w && s && w->info->dtype == Dtype::kU8 && s->info->dtype == Dtype::kF8_E4M3 &&
                    ct.info->dtype == Dtype::kF32 && ct.info->numel() == 1 && w->info->shape.size() == 2 &&
                    s->info->shape.size() == 2 && w->info->shape[0] == s->info->shape[0] &&
                    w->info->shape[1] * 2 == s->info->shape[1] * 16;
    if (ok)
      ++info.nvfp4_modules;
    else
      ++info.inconsistent_modules;
  }
  std::error_code ec;
  const fs::path hq = fs::path(ckpt.dir()) / "hf_quant_config.json";
  if (fs::is_regular_file(hq, ec)) {
    std::string text;
    if (st::read_json_file(hq.string(), &text).is_ok()) {
      try {
        const auto j = fp4kit::detail::parse_json_bounded<nlohmann::json>(text);
        const auto& q = j.at("quantization");
        info.hf_quant_config = "quant_algo=" + q.value("quant_algo", std::string("?"));
        if (q.contains("group_size")) info.hf_quant_config += " group_size=" + q["group_size"].dump();
        if (q.contains("exclude_modules") && q["exclude_modules"].is_array())
          info.hf_quant_config += " exclude_modules=" + std::to_string(q["exclude_modules"].size());
        if (j.contains("producer")) info.hf_quant_config += " producer=" + j["producer"].dump();
      } catch (const std::exception&) {
        info.hf_quant_config = "(unreadable)";
      }
    }
  }
  if (info.nvfp4_modules > 0) {
    info.format = "NVFP4 (ModelOpt layout: weight U8 [N,K/2], weight_scale F8_E4M3 [N,K/16], weight_scale_2 F32)";
  } else if (!float_dtypes.empty()) {
    std::string d;
    for (const auto& [k, v] : float_dtypes) d += (d.empty() ? "" : "/") + k;
    info.format = "unquantized (" + d + ")";
  } else {
    info.format = "unknown";
  }
  return info;
}

}  // namespace fp4kit::io
