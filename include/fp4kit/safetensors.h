// fp4kit/safetensors.h — a validating safetensors reader (memory-mapped) and a streaming writer,
// plus sharded checkpoints (model.safetensors.index.json). Format and rules: docs/QUANTIZER.md.
//
// File layout: u64 little-endian header length N, N bytes of UTF-8 JSON (an object mapping tensor
// names to {"dtype", "shape", "data_offsets": [begin, end]}, plus an optional "__metadata__"
// object of string -> string), then the data buffer; offsets are relative to the data start.
//
// Files are untrusted: every header field is checked (see parse_safetensors) and a malformed file
// yields a Status naming the tensor and the rule, never a crash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fp4kit/status.h"

namespace fp4kit::st {

// Every dtype of the safetensors format (safetensors 0.6).
enum class Dtype {
  kBOOL, kU8, kI8, kI16, kU16, kF16, kBF16, kI32, kU32, kF32, kF64, kI64, kU64, kC64,
  kF8_E4M3, kF8_E5M2, kF8_E8M0,
  kF4,       // float4 e2m1, 4 bits per element (packed)
  kF6_E2M3,  // 6 bits per element (packed)
  kF6_E3M2,  // 6 bits per element (packed)
};

const char* dtype_name(Dtype d);                 // "BF16"
bool dtype_from_name(std::string_view s, Dtype* out);
int dtype_bits(Dtype d);                         // 1-element size in bits (BOOL: 8)

// Bytes of `numel` elements of `d`; false when the product overflows int64 or a sub-byte type
// does not fill whole bytes.
bool tensor_bytes(Dtype d, const std::vector<int64_t>& shape, uint64_t* out_bytes);

struct TensorInfo {
  std::string name;
  Dtype dtype = Dtype::kU8;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  // byte range in the data buffer
  uint64_t nbytes() const { return end - begin; }
  int64_t numel() const;
};

// Limits of the reader.
inline constexpr uint64_t kMaxHeaderBytes = 100'000'000;

// Parses and validates a whole safetensors image held in memory (`size` bytes, the 8-byte length
// included). On success `tensors` are sorted by data offset, and `data_offset`
// is 8 + N. Rules (each violation is an error naming the rule):
//   file >= 8 bytes; 2 <= N <= 100 MB; N <= size - 8; header is valid UTF-8 JSON; no duplicate key
//   in any JSON object; top level is an object; each entry other than "__metadata__" is an object
//   with "dtype" (a known dtype name), "shape" (array of integers >= 0) and "data_offsets" (two
//   integers >= 0); begin <= end; end <= data buffer size; shape product * dtype size computed
//   with overflow checks == end - begin; no two non-empty ranges overlap; "__metadata__" is an
//   object of string -> string.
struct ParsedHeader {
  std::vector<TensorInfo> tensors;  // sorted by begin (then name)
  std::map<std::string, std::string> metadata;
  uint64_t header_bytes = 0;  // N
  uint64_t data_offset = 0;   // 8 + N
  uint64_t data_bytes = 0;    // size - 8 - N
};
Status parse_safetensors(const uint8_t* data, size_t size, ParsedHeader* out,
                         std::string_view what = "safetensors");

// A read-only, memory-mapped safetensors file.
class SafetensorsFile {
 public:
  static Status open(const std::string& path, std::unique_ptr<SafetensorsFile>* out);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  const std::vector<TensorInfo>& tensors() const { return header_.tensors; }
  const std::map<std::string, std::string>& metadata() const { return header_.metadata; }
  const TensorInfo* find(std::string_view name) const;
  // Pointer to the tensor's bytes (valid while this object lives).
  const uint8_t* data(const TensorInfo& t) const { return base_ + header_.data_offset + t.begin; }
  uint64_t file_bytes() const { return size_; }
  // Tells the kernel a tensor's pages are no longer needed (bounded resident memory).
  void release(const TensorInfo& t) const;

 private:
  SafetensorsFile() = default;
  std::string path_;
  const uint8_t* base_ = nullptr;
  size_t size_ = 0;
  ParsedHeader header_;
  std::map<std::string, size_t, std::less<>> index_;
};

// The plan of one output tensor.
struct TensorSpec {
  std::string name;
  Dtype dtype = Dtype::kU8;
  std::vector<int64_t> shape;
};

// Streaming writer: the header (offsets from the plan, padded with spaces to a multiple of 8) is
// written first, then tensors in plan order, each with write() (in one or more pieces). The file is
// written to PATH.tmp and renamed to PATH by finish(); a writer destroyed unfinished removes it.
class SafetensorsWriter {
 public:
  static Status create(const std::string& path, const std::vector<TensorSpec>& plan,
                       const std::map<std::string, std::string>& metadata,
                       std::unique_ptr<SafetensorsWriter>* out);
  ~SafetensorsWriter();
  SafetensorsWriter(const SafetensorsWriter&) = delete;
  SafetensorsWriter& operator=(const SafetensorsWriter&) = delete;

  // Appends bytes of the tensor `name`, which must be the current one in plan order; a tensor is
  // complete when its planned byte count has been written.
  Status write(std::string_view name, const void* data, size_t bytes);
  Status finish();
  uint64_t data_bytes() const { return total_; }

 private:
  SafetensorsWriter() = default;
  std::string path_, tmp_path_;
  void* file_ = nullptr;  // FILE*
  std::vector<TensorSpec> plan_;
  std::vector<uint64_t> sizes_;
  size_t current_ = 0;
  uint64_t written_in_current_ = 0;
  uint64_t total_ = 0;
  bool finished_ = false;
};

// Serializes a header for `plan` (offsets in plan order), padded with spaces to a multiple of 8.
Status build_header(const std::vector<TensorSpec>& plan, const std::map<std::string, std::string>& metadata,
                    std::string* header_json, std::vector<uint64_t>* sizes);

// A checkpoint: one .safetensors file, or a directory with model.safetensors.index.json
// ({"weight_map": {tensor: file}}), or a directory of *.safetensors files without an index.
struct CheckpointTensor {
  size_t shard = 0;               // index into Checkpoint::shards
  const TensorInfo* info = nullptr;
};

class Checkpoint {
 public:
  static Status open(const std::string& path, std::unique_ptr<Checkpoint>* out);

  const std::string& dir() const { return dir_; }
  bool has_index() const { return has_index_; }
  const std::vector<std::string>& shard_names() const { return shard_names_; }  // file names
  const std::vector<std::unique_ptr<SafetensorsFile>>& shards() const { return shards_; }
  // All tensors, in shard order then data-offset order.
  const std::vector<std::pair<std::string, CheckpointTensor>>& tensors() const { return tensors_; }
  const CheckpointTensor* find(std::string_view name) const;
  uint64_t total_tensor_bytes() const;

 private:
  std::string dir_;
  bool has_index_ = false;
  std::vector<std::string> shard_names_;
  std::vector<std::unique_ptr<SafetensorsFile>> shards_;
  std::vector<std::pair<std::string, CheckpointTensor>> tensors_;
  std::map<std::string, size_t, std::less<>> index_;
};

// Writes DIR/model.safetensors.index.json: {"metadata": {"total_size": N}, "weight_map": {...}}.
Status write_index(const std::string& path, uint64_t total_size,
                   const std::map<std::string, std::string>& weight_map);

// Reads a small JSON file (config.json, an index) with duplicate-key detection.
Status read_json_file(const std::string& path, std::string* text);

// BF16/F16/F32 helpers.
float bf16_to_float(uint16_t bits);
uint16_t float_to_bf16(float f);  // round to nearest even
float f16_to_float(uint16_t bits);

}  // namespace fp4kit::st
