// fp4kit quantize IN OUT: a BF16/FP16/FP32 safetensors checkpoint -> NVFP4 in ModelOpt's layout,
// on the GPU when one is usable, else on the CPU (same bytes; docs/QUANTIZER.md).
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "fp4kit/safetensors.h"
#include "src/io/checkpoint_quantizer.h"

namespace fp4kit::cli {
namespace {

struct QuantizeOptions {
  std::string in, out;
  std::vector<std::string> include, exclude;
  bool fuse_scales = false;
  bool verify = false;
  bool quiet = false;
  bool list = false;
  std::string device = "auto";
  int threads = 0;
  std::string input_amax;  // --input-amax FILE
};

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "x" : "") + std::to_string(shape[i]);
  return s.empty() ? "scalar" : s;
}

int run_quantize(const QuantizeOptions& opt) {
  io::QuantizerOptions q;
  q.include = opt.include;
  q.exclude = opt.exclude;
  q.fuse_scales = opt.fuse_scales;
  q.verify = opt.verify;
  if (!io::parse_quant_device(opt.device, &q.device))
    throw CliError("quantize: --device must be auto, cpu or gpu (got '" + opt.device + "')");
  q.threads = opt.threads;
  if (!opt.input_amax.empty()) check(io::read_input_amax(opt.input_amax, &q.input_amax));
  const bool tty = ::isatty(STDERR_FILENO) != 0;
  auto last = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  if (!opt.quiet) {
    q.progress = [&, tty](uint64_t done, uint64_t total, const std::string& name) {
      const auto now = std::chrono::steady_clock::now();
      if (done < total && now - last < std::chrono::milliseconds(100)) return;
      last = now;
      const double frac = total ? double(done) / double(total) : 1.0;
      constexpr int kWidth = 30;
      const int fill = int(frac * kWidth);
      std::string bar(size_t(fill), '#');
      bar += std::string(size_t(kWidth - fill), '.');
      std::string n = name.size() > 48 ? "..." + name.substr(name.size() - 45) : name;
      if (tty) {
        std::fprintf(stderr, "\r[%s] %5.1f%% %s / %s  %-48s", bar.c_str(), 100 * frac, format_bytes(double(done)).c_str(),
                     format_bytes(double(total)).c_str(), n.c_str());
        if (done >= total) std::fprintf(stderr, "\n");
      } else if (done >= total) {
        std::fprintf(stderr, "[%s] 100%% %s\n", bar.c_str(), format_bytes(double(total)).c_str());
      }
      std::fflush(stderr);
    };
  }
  io::QuantizeSummary s;
  check(io::quantize_checkpoint(opt.in, opt.out, q, &s));

  if (opt.list || opt.verify) {
    std::vector<std::string> headers = {"tensor", "dtype", "shape", "action", "ws2"};
    if (opt.verify) headers.push_back("SNR dB");
    Table t(headers, {Table::Align::kLeft, Table::Align::kLeft, Table::Align::kLeft, Table::Align::kLeft,
                      Table::Align::kRight, Table::Align::kRight});
    for (const auto& r : s.tensors) {
      std::string action = r.quantized ? "nvfp4" : "copy";
      if (!r.fused_group.empty()) action += " (fused)";
      if (r.input_scale > 0) action += " +input_scale";
      std::vector<std::string> row = {r.name, r.dtype, shape_string(r.shape), action,
                                      r.quantized ? format_sci(r.ws2, 3) : ""};
      if (opt.verify) row.push_back(r.quantized ? format_fixed(r.snr_db, 2) : "");
      t.add_row(row);
    }
    std::printf("%s\n\n", t.render("  ", true).c_str());
    for (const auto& r : s.tensors)
      if (!r.note.empty()) std::printf("  note: %s: %s\n", r.name.c_str(), r.note.c_str());
  }
  std::printf("quantized %d tensors to NVFP4, copied %d; %s -> %s\n", s.quantized, s.copied,
              format_bytes(double(s.input_bytes)).c_str(), format_bytes(double(s.output_bytes)).c_str());
  std::printf("wrote %s:", opt.out.c_str());
  for (const auto& f : s.output_files) std::printf(" %s", f.c_str());
  std::printf("\n");
  if (!s.exclude_modules.empty()) {
    std::printf("exclude_modules (%zu):", s.exclude_modules.size());
    for (size_t i = 0; i < s.exclude_modules.size() && i < 8; ++i) std::printf(" %s", s.exclude_modules[i].c_str());
    std::printf("%s\n", s.exclude_modules.size() > 8 ? " ..." : "");
  }
  std::printf("device: %s%s%s\n", s.device.c_str(), s.device_note.empty() ? "" : "; ", s.device_note.c_str());
  const double gb = double(s.quantized_input_bytes) / 1e9;
  std::printf("time %.2f s (amax + quantize %.2f s): %.3f GB/s of input weights quantized end to end, %.3f GB/s compute\n",
              s.seconds, s.quantize_seconds, s.seconds > 0 ? gb / s.seconds : 0.0, s.quantize_seconds > 0 ? gb / s.quantize_seconds : 0.0);
  if (opt.verify) {
    std::printf("verify: min SNR %s dB over %d quantized tensors; copied tensors %s (%.2f s)\n",
                format_fixed(s.min_snr_db, 2).c_str(), s.quantized,
                s.verified_copies_identical ? "byte-identical" : "DIFFER", s.verify_seconds);
    if (!s.verified_copies_identical) return 1;
  }
  return 0;
}

}  // namespace

Command add_quantize_command(CLI::App& app) {
  auto opt = std::make_shared<QuantizeOptions>();
  CLI::App* sub = app.add_subcommand(
      "quantize", "Quantize a BF16/FP16/FP32 safetensors checkpoint to NVFP4 (ModelOpt layout)");
  sub->add_option("in", opt->in, "Input checkpoint: a directory or a .safetensors file")->required();
  sub->add_option("out", opt->out, "Output directory (created if missing)")->required();
  sub->add_option("--include", opt->include,
                  "Also quantize tensors whose name matches this ECMAScript regex (repeatable)")
      ->allow_extra_args(false);
  sub->add_option("--exclude", opt->exclude, "Never quantize tensors whose name matches this regex (repeatable)")
      ->allow_extra_args(false);
  sub->add_flag("--fuse-scales", opt->fuse_scales,
                "q/k/v (and gate/up, w1/w3) of one layer share one weight_scale_2 (the largest)");
  sub->add_flag("--verify", opt->verify, "Re-read the output; print per-tensor SNR and check copies byte for byte");
  sub->add_option("--device", opt->device,
                  "auto (default): the GPU when a usable sm_90 GPU is present, else the CPU; cpu; gpu "
                  "(error without one). Both give the same bytes")
      ->check(CLI::IsMember({"auto", "cpu", "gpu"}));
  sub->add_option("--threads", opt->threads, "CPU threads (CPU path); 0 = all hardware threads (default)")
      ->check(CLI::Range(0, 4096));
  sub->add_option("--input-amax", opt->input_amax,
                  "JSON {\"module\": activation amax, ...} from calibration: also write X.input_scale = amax / 2688 "
                  "for those modules (W4A4 loaders need it)");
  sub->add_flag("--list", opt->list, "Print the per-tensor table (implied by --verify)");
  sub->add_flag("-q,--quiet", opt->quiet, "No progress bar");
  return {sub, [opt] { return run_quantize(*opt); }};
}

}  // namespace fp4kit::cli
