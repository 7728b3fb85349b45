// The checkpoint quantizer behind `fp4kit quantize`: a BF16/FP16/FP32 safetensors checkpoint ->
// an NVFP4 checkpoint in NVIDIA ModelOpt's layout (docs/QUANTIZER.md).
//
// Per quantized weight X.weight [N, K]:
//   X.weight          U8      [N, K/2]   two E2M1 codes per byte (element 2j in bits 3:0)
//   X.weight_scale    F8_E4M3 [N, K/16]  linear (row-major) block scales
//   X.weight_scale_2  F32     []         ws2 = amax / 2688 (the decode global scale)
// computed with QuantNumerics::kModelOpt on the GPU (fp4kit::compute_global_scale / quantize_nvfp4)
// or on the CPU (io/nvfp4_cpu.h, threaded), which give the same bytes as reference::quantize_nvfp4.
// Other tensors are copied byte for byte. Shards keep their file names; hf_quant_config.json and
// config.json's quantization_config are written. Streams tensor by tensor: at most one input tensor
// and its outputs are resident (on the GPU: device buffers sized to the largest tensor, once).
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "fp4kit/safetensors.h"
#include "fp4kit/status.h"

namespace fp4kit::io {

// Where tensors are quantized. kAuto: the GPU when a usable sm_90 GPU is present (and its buffers
// can be allocated), else the CPU. kGpu: the GPU or an error.
enum class QuantDevice { kAuto, kCpu, kGpu };
const char* quant_device_name(QuantDevice d);                 // "auto", "cpu", "gpu"
bool parse_quant_device(std::string_view s, QuantDevice* out);  // inverse of quant_device_name

struct QuantizerOptions {
  // ECMAScript regexes searched in the tensor name. A tensor is quantized when it is eligible
  // (a 2-D BF16/F16/F32 "*.weight" with K % 16 == 0) and
  //   (default_quantize_rule(name) || matches an include) && !matches an exclude.
  std::vector<std::string> include;
  std::vector<std::string> exclude;
  // q/k/v projections of one layer (and gate/up, and MoE w1/w3 of one expert) share one
  // weight_scale_2, the largest of theirs.
  bool fuse_scales = false;
  // Re-read the output and compute per-tensor SNR; also checks copied tensors byte for byte.
  bool verify = false;
  // Copy the other regular files of the input directory (tokenizer, generation_config.json, ...).
  bool copy_other_files = true;
  QuantDevice device = QuantDevice::kAuto;
  // CPU path: worker threads for amax and quantization; 0 = the hardware thread count.
  int threads = 0;
  // Calibrated activation amax per module (e.g. "model.layers.0.mlp.down_proj" -> 13.5, finite and
  // > 0), for loaders that run W4A4: each quantized X.weight whose module X has one also gets
  // X.input_scale F32 [] = amax / 2688 (ModelOpt's activation decode scale); with fuse_scales the
  // modules of a fused group that have one share the largest. A key that names no quantized module is
  // an error (a typo would otherwise leave a layer without its scale).
  std::map<std::string, float> input_amax;
  // Called after each input tensor: (input bytes done, input bytes total, tensor name).
  std::function<void(uint64_t, uint64_t, const std::string&)> progress;
};

struct TensorResult {
  std::string name;
  bool quantized = false;
  std::string dtype;           // input dtype
  std::vector<int64_t> shape;  // input shape
  uint64_t in_bytes = 0, out_bytes = 0;
  float amax = 0, ws2 = 0;     // quantized only
  float input_scale = 0;       // the X.input_scale written (QuantizerOptions::input_amax), else 0
  std::string fused_group;     // --fuse-scales group, if any
  double snr_db = std::numeric_limits<double>::quiet_NaN();  // --verify, quantized only
  std::string note;            // e.g. why an included tensor could not be quantized
};

struct QuantizeSummary {
  std::vector<TensorResult> tensors;
  int quantized = 0, copied = 0;
  uint64_t quantized_input_bytes = 0;  // bytes of the input weights that were quantized
  uint64_t input_bytes = 0, output_bytes = 0;
  double seconds = 0;           // whole run (without --verify)
  double quantize_seconds = 0;  // amax + quantize of the quantized tensors
  double verify_seconds = 0;
  std::string device;       // "gpu (NVIDIA H100 80GB HBM3)" or "cpu (N threads)"
  bool used_gpu = false;
  int threads = 0;          // CPU threads (CPU path)
  std::string device_note;  // e.g. why --device auto chose the CPU
  std::vector<std::string> exclude_modules;
  std::vector<std::string> output_files;
  double min_snr_db = std::numeric_limits<double>::quiet_NaN();
  bool verified_copies_identical = true;
};

// The default selection: "*.weight" that is not an embedding (contains "embed"), lm_head, a norm
// (contains "norm"), an MoE router ("router", "*.mlp.gate.weight", "*.block_sparse_moe.gate.weight").
bool default_quantize_rule(std::string_view name);
// "model.layers.3.self_attn.qkv" for q/k/v_proj.weight etc.; empty when not fusible.
std::string fusion_group(std::string_view name);

Status quantize_checkpoint(const std::string& in_path, const std::string& out_dir, const QuantizerOptions& opt,
                           QuantizeSummary* summary);

// Reads QuantizerOptions::input_amax from a JSON object {"module": amax, ...} (the file of
// `fp4kit quantize --input-amax`): every value a finite number > 0.
Status read_input_amax(const std::string& path, std::map<std::string, float>* out);

// What `fp4kit inspect` reports about a checkpoint's quantization.
struct QuantFormatInfo {
  std::string format;          // "NVFP4 (ModelOpt)", "unquantized (BF16)", ...
  int nvfp4_modules = 0;       // X.weight U8 + X.weight_scale F8_E4M3 + X.weight_scale_2 F32, consistent shapes
  int inconsistent_modules = 0;
  std::string hf_quant_config;  // "quant_algo=NVFP4 group_size=16 ..." when hf_quant_config.json exists
};
QuantFormatInfo detect_quant_format(const st::Checkpoint& ckpt);

}  // namespace fp4kit::io
