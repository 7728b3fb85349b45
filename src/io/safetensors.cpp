// Safetensors reader (mmap, validating) and streaming writer; sharded checkpoints.
// Depends only on fp4kit/status.h and nlohmann-json, so the fuzzer (tests/safetensors/
// fuzz_header.cpp) builds it with clang alone.
#include "fp4kit/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <set>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "common/json_bounded.h"

namespace fp4kit::st {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct DtypeEntry {
  Dtype d;
  const char* name;
  int bits;
};
constexpr DtypeEntry kDtypes[] = {
    {Dtype::kBOOL, "BOOL", 8},        {Dtype::kU8, "U8", 8},          {Dtype::kI8, "I8", 8},
    {Dtype::kI16, "I16", 16},         {Dtype::kU16, "U16", 16},       {Dtype::kF16, "F16", 16},
    {Dtype::kBF16, "BF16", 16},       {Dtype::kI32, "I32", 32},       {Dtype::kU32, "U32", 32},
    {Dtype::kF32, "F32", 32},         {Dtype::kF64, "F64", 64},       {Dtype::kI64, "I64", 64},
    {Dtype::kU64, "U64", 64},         {Dtype::kC64, "C64", 64},       {Dtype::kF8_E4M3, "F8_E4M3", 8},
    {Dtype::kF8_E5M2, "F8_E5M2", 8},  {Dtype::kF8_E8M0, "F8_E8M0", 8}, {Dtype::kF4, "F4", 4},
    {Dtype::kF6_E2M3, "F6_E2M3", 6},  {Dtype::kF6_E3M2, "F6_E3M2", 6},
};

Status bad(std::string_view what, const std::string& msg) {
  return Status(StatusCode::kInvalidArgument, std::string(what) + ": " + msg);
}

// Quotes a (possibly long or binary) name for a message.
std::string q(std::string_view s) {
  std::string r = "'";
  const size_t n = std::min<size_t>(s.size(), 120);
  for (size_t i = 0; i < n; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      r += buf;
    } else {
      r += char(c);
    }
  }
  if (s.size() > n) r += "...";
  return r + "'";
}

// Parses JSON text, rejecting duplicate keys in any object. Never throws.
Status parse_json_strict(std::string_view text, json* out, std::string_view what) {
  // nlohmann's lexer takes a NUL byte for the end of input; JSON never contains a raw NUL.
  if (const size_t z = text.find('\0'); z != std::string_view::npos)
    return bad(what, "header is not valid JSON (NUL byte at offset " + std::to_string(z) + ")");
  std::vector<std::unordered_set<std::string>> stack;
  std::string duplicate;
  bool too_deep = false;  // see common/json_bounded.h: dump() recurses once per level
  auto cb = [&](int depth, json::parse_event_t ev, json& parsed) -> bool {
    too_deep |= depth > fp4kit::detail::kMaxJsonDepth;
    if (too_deep) return false;
    switch (ev) {
      case json::parse_event_t::object_start: stack.emplace_back(); break;
      case json::parse_event_t::object_end:
        if (!stack.empty()) stack.pop_back();
        break;
      case json::parse_event_t::key:
        if (!stack.empty() && parsed.is_string()) {
          const std::string& k = parsed.get_ref<const std::string&>();
          if (!stack.back().insert(k).second && duplicate.empty()) duplicate = k.empty() ? std::string("\"\"") : k;
        }
        break;
      default: break;
    }
    return true;
  };
  try {
    *out = json::parse(text.begin(), text.end(), cb, /*allow_exceptions=*/true, /*ignore_comments=*/false);
  } catch (const json::exception& e) {
    return bad(what, std::string("header is not valid JSON (") + e.what() + ")");
  } catch (const std::bad_alloc&) {
    return Status(StatusCode::kInvalidArgument, std::string(what) + ": out of memory parsing the JSON header");
  }
  if (too_deep)
    return bad(what, "header is not valid JSON (containers nest deeper than " +
                         std::to_string(fp4kit::detail::kMaxJsonDepth) + " levels)");
  if (!duplicate.empty()) return bad(what, "duplicate key " + q(duplicate) + " in a JSON object (names must be unique)");
  return Status::ok();
}

bool get_u64(const json& v, uint64_t* out) {
  if (!v.is_number_unsigned()) {
    if (v.is_number_integer() && v.get<int64_t>() >= 0) {
      *out = uint64_t(v.get<int64_t>());
      return true;
    }
    return false;
  }
  *out = v.get<uint64_t>();
  return true;
}

}  // namespace

const char* dtype_name(Dtype d) {
  for (const auto& e : kDtypes)
    if (e.d == d) return e.name;
  return "?";
}

bool dtype_from_name(std::string_view s, Dtype* out) {
  for (const auto& e : kDtypes) {
    if (s == e.name) {
      *out = e.d;
      return true;
    }
  }
  return false;
}

int dtype_bits(Dtype d) {
  for (const auto& e : kDtypes)
    if (e.d == d) return e.bits;
  return 0;
}

bool tensor_bytes(Dtype d, const std::vector<int64_t>& shape, uint64_t* out_bytes) {
  uint64_t n = 1;
  for (int64_t s : shape) {
    if (s < 0) return false;
    if (__builtin_mul_overflow(n, uint64_t(s), &n) || n > uint64_t(INT64_MAX)) return false;
  }
  uint64_t bits = 0;
  if (__builtin_mul_overflow(n, uint64_t(dtype_bits(d)), &bits)) return false;
  if (bits % 8 != 0) return false;
  *out_bytes = bits / 8;
  return true;
}

int64_t TensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

Status parse_safetensors(const uint8_t* data, size_t size, ParsedHeader* out, std::string_view what) {
  *out = ParsedHeader{};
  if (size < 8)
    return bad(what, "file is " + std::to_string(size) + " bytes, shorter than the 8-byte header length (truncated)");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | data[i];
  if (n < 2) return bad(what, "header length " + std::to_string(n) + " is below the minimum of 2 ('{}')");
  if (n > kMaxHeaderBytes)
    return bad(what, "header length " + std::to_string(n) + " exceeds the limit of " +
                         std::to_string(kMaxHeaderBytes) + " bytes");
  if (n > size - 8)
    return bad(what, "header length " + std::to_string(n) + " exceeds the " + std::to_string(size - 8) +
                         " bytes after the length field (truncated file)");
  const std::string_view text(reinterpret_cast<const char*>(data + 8), size_t(n));
  json h;
  FP4KIT_RETURN_IF_ERROR(parse_json_strict(text, &h, what));
  if (!h.is_object()) return bad(what, std::string("header is a JSON ") + h.type_name() + ", expected an object");

  out->header_bytes = n;
  out->data_offset = 8 + n;
  out->data_bytes = size - 8 - n;
  for (auto it = h.begin(); it != h.end(); ++it) {
    const std::string& name = it.key();
    const json& e = it.value();
    if (name == "__metadata__") {
      if (!e.is_object()) return bad(what, "__metadata__ must be an object of string -> string");
      for (auto m = e.begin(); m != e.end(); ++m) {
        if (!m.value().is_string())
          return bad(what, "__metadata__ value of " + q(m.key()) + " is a " + m.value().type_name() + ", expected a string");
        out->metadata[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    const std::string tn = "tensor " + q(name);
    if (!e.is_object()) return bad(what, tn + ": entry is a " + std::string(e.type_name()) + ", expected an object");
    TensorInfo t;
    t.name = name;
    auto d = e.find("dtype");
    if (d == e.end() || !d->is_string()) return bad(what, tn + ": missing or non-string \"dtype\"");
    if (!dtype_from_name(d->get_ref<const std::string&>(), &t.dtype))
      return bad(what, tn + ": unknown dtype " + q(d->get_ref<const std::string&>()));
    auto s = e.find("shape");
    if (s == e.end() || !s->is_array()) return bad(what, tn + ": missing or non-array \"shape\"");
    for (const json& v : *s) {
      uint64_t x = 0;
      if (!get_u64(v, &x) || x > uint64_t(INT64_MAX))
        return bad(what, tn + ": shape entry " + v.dump().substr(0, 40) + " is not an integer >= 0");
      t.shape.push_back(int64_t(x));
    }
    auto o = e.find("data_offsets");
    if (o == e.end() || !o->is_array() || o->size() != 2)
      return bad(what, tn + ": \"data_offsets\" must be an array [begin, end]");
    if (!get_u64((*o)[0], &t.begin) || !get_u64((*o)[1], &t.end))
      return bad(what, tn + ": data_offsets must be integers >= 0");
    if (t.begin > t.end)
      return bad(what, tn + ": data_offsets begin " + std::to_string(t.begin) + " > end " + std::to_string(t.end));
    if (t.end > out->data_bytes)
      return bad(what, tn + ": data_offsets end " + std::to_string(t.end) + " is past the data buffer (" +
                           std::to_string(out->data_bytes) + " bytes; truncated file?)");
    uint64_t bytes = 0;
    if (!tensor_bytes(t.dtype, t.shape, &bytes))
      return bad(what, tn + ": shape x dtype size overflows or is not a whole number of bytes");
    if (bytes != t.end - t.begin)
      return bad(what, tn + ": shape x dtype size is " + std::to_string(bytes) + " bytes but data_offsets span " +
                           std::to_string(t.end - t.begin));
    out->tensors.push_back(std::move(t));
  }
  std::sort(out->tensors.begin(), out->tensors.end(), [](const TensorInfo& a, const TensorInfo& b) {
    return a.begin != b.begin ? a.begin < b.begin : (a.end != b.end ? a.end < b.end : a.name < b.name);
  });
  const TensorInfo* prev = nullptr;  // the non-empty range ending last so far
  for (const TensorInfo& t : out->tensors) {
    if (t.begin == t.end) continue;
    if (prev && t.begin < prev->end)
      return bad(what, "tensors " + q(prev->name) + " [" + std::to_string(prev->begin) + ", " +
                           std::to_string(prev->end) + ") and " + q(t.name) + " [" + std::to_string(t.begin) + ", " +
                           std::to_string(t.end) + ") overlap");
    if (!prev || t.end > prev->end) prev = &t;
  }
  return Status::ok();
}

// ---- SafetensorsFile --------------------------------------------------------------------------

Status SafetensorsFile::open(const std::string& path, std::unique_ptr<SafetensorsFile>* out) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return bad(path, std::string("cannot open: ") + std::strerror(errno));
  struct stat sb{};
  if (::fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    ::close(fd);
    return bad(path, "not a regular file");
  }
  std::unique_ptr<SafetensorsFile> f(new SafetensorsFile());
  f->path_ = path;
  f->size_ = size_t(sb.st_size);
  if (f->size_ >= 8) {
    void* p = ::mmap(nullptr, f->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      return bad(path, std::string("mmap failed: ") + std::strerror(err));
    }
    f->base_ = static_cast<const uint8_t*>(p);
  }
  ::close(fd);
  static const uint8_t kEmpty[1] = {0};
  FP4KIT_RETURN_IF_ERROR(parse_safetensors(f->base_ ? f->base_ : kEmpty, f->size_, &f->header_, path));
  for (size_t i = 0; i < f->header_.tensors.size(); ++i) f->index_.emplace(f->header_.tensors[i].name, i);
  *out = std::move(f);
  return Status::ok();
}

SafetensorsFile::~SafetensorsFile() {
  if (base_) ::munmap(const_cast<uint8_t*>(base_), size_);
}

const TensorInfo* SafetensorsFile::find(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &header_.tensors[it->second];
}

void SafetensorsFile::release(const TensorInfo& t) const {
  if (!base_ || t.end == t.begin) return;
  const long page = ::sysconf(_SC_PAGESIZE);
  uintptr_t b = reinterpret_cast<uintptr_t>(data(t));
  uintptr_t e = b + t.nbytes();
  b = b / uintptr_t(page) * uintptr_t(page);
  ::madvise(reinterpret_cast<void*>(b), e - b, MADV_DONTNEED);
}

// ---- writer -----------------------------------------------------------------------------------

Status build_header(const std::vector<TensorSpec>& plan, const std::map<std::string, std::string>& metadata,
                    std::string* header_json, std::vector<uint64_t>* sizes) {
  nlohmann::ordered_json h = nlohmann::ordered_json::object();
  if (!metadata.empty()) {
    nlohmann::ordered_json m = nlohmann::ordered_json::object();
    for (const auto& [k, v] : metadata) m[k] = v;
    h["__metadata__"] = m;
  }
  sizes->clear();
  std::unordered_set<std::string> names;
  uint64_t offset = 0;
  for (const TensorSpec& t : plan) {
    if (t.name == "__metadata__" || !names.insert(t.name).second)
      return bad("safetensors writer", "tensor name " + q(t.name) + " is reserved or duplicated");
    uint64_t bytes = 0;
    if (!tensor_bytes(t.dtype, t.shape, &bytes))
      return bad("safetensors writer", "tensor " + q(t.name) + ": invalid shape for its dtype");
    nlohmann::ordered_json e;
    e["dtype"] = dtype_name(t.dtype);
    e["shape"] = t.shape;
    e["data_offsets"] = {offset, offset + bytes};
    h[t.name] = e;
    offset += bytes;
    sizes->push_back(bytes);
  }
  try {
    *header_json = h.dump();
  } catch (const nlohmann::json::exception& e) {
    return bad("safetensors writer", std::string("cannot serialize header: ") + e.what());
  }
  while (header_json->size() % 8 != 0) header_json->push_back(' ');
  return Status::ok();
}

Status SafetensorsWriter::create(const std::string& path, const std::vector<TensorSpec>& plan,
                                 const std::map<std::string, std::string>& metadata,
                                 std::unique_ptr<SafetensorsWriter>* out) {
  std::unique_ptr<SafetensorsWriter> w(new SafetensorsWriter());
  std::string header;
  FP4KIT_RETURN_IF_ERROR(build_header(plan, metadata, &header, &w->sizes_));
  w->path_ = path;
  w->tmp_path_ = path + ".tmp";
  w->plan_ = plan;
  FILE* f = std::fopen(w->tmp_path_.c_str(), "wb");
  if (!f) return bad(w->tmp_path_, std::string("cannot create: ") + std::strerror(errno));
  w->file_ = f;
  uint8_t len[8];
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) len[i] = uint8_t(n >> (8 * i));
  if (std::fwrite(len, 1, 8, f) != 8 || std::fwrite(header.data(), 1, header.size(), f) != header.size())
    return bad(w->tmp_path_, std::string("write failed: ") + std::strerror(errno));
  while (w->current_ < w->sizes_.size() && w->sizes_[w->current_] == 0) ++w->current_;  // empty tensors
  *out = std::move(w);
  return Status::ok();
}

SafetensorsWriter::~SafetensorsWriter() {
  if (file_) std::fclose(static_cast<FILE*>(file_));
  if (!finished_ && !tmp_path_.empty()) std::remove(tmp_path_.c_str());
}

Status SafetensorsWriter::write(std::string_view name, const void* data, size_t bytes) {
  if (finished_ || !file_) return bad(path_, "write after finish");
  if (current_ >= plan_.size()) return bad(path_, "tensor " + q(name) + " written but every planned tensor is complete");
  if (name != plan_[current_].name)
    return bad(path_, "tensor " + q(name) + " written out of plan order (expected " + q(plan_[current_].name) + ")");
  // (Compared without the sum, which wraps for a huge `bytes`.)
  if (bytes > sizes_[current_] - written_in_current_)
    return bad(path_, "tensor " + q(name) + ": " + std::to_string(written_in_current_) + " + " + std::to_string(bytes) +
                          " bytes written, planned " + std::to_string(sizes_[current_]));
  if (bytes && data == nullptr) return bad(path_, "tensor " + q(name) + ": data is null");
  if (bytes && std::fwrite(data, 1, bytes, static_cast<FILE*>(file_)) != bytes)
    return bad(tmp_path_, std::string("write failed: ") + std::strerror(errno));
  written_in_current_ += bytes;
  total_ += bytes;
  if (written_in_current_ == sizes_[current_]) {
    ++current_;
    written_in_current_ = 0;
    while (current_ < sizes_.size() && sizes_[current_] == 0) ++current_;
  }
  return Status::ok();
}

Status SafetensorsWriter::finish() {
  if (finished_) return Status::ok();
  if (current_ < plan_.size())
    return bad(path_, "finish() before tensor " + q(plan_[current_].name) + " was fully written");
  FILE* f = static_cast<FILE*>(file_);
  file_ = nullptr;
  const bool ok = std::fflush(f) == 0;
  if (std::fclose(f) != 0 || !ok) return bad(tmp_path_, std::string("close failed: ") + std::strerror(errno));
  if (std::rename(tmp_path_.c_str(), path_.c_str()) != 0)
    return bad(path_, std::string("rename from .tmp failed: ") + std::strerror(errno));
  finished_ = true;
  return Status::ok();
}

// ---- checkpoints ------------------------------------------------------------------------------

Status read_json_file(const std::string& path, std::string* text) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return bad(path, "cannot open");
  in.seekg(0, std::ios::end);
  const std::streamoff n = in.tellg();
  if (n < 0 || uint64_t(n) > kMaxHeaderBytes) return bad(path, "unreadable or larger than 100 MB");
  in.seekg(0);
  text->resize(size_t(n));
  if (n && !in.read(text->data(), n)) return bad(path, "read failed");
  return Status::ok();
}

namespace {
bool plain_file_name(const std::string& s) {
  return !s.empty() && s != "." && s != ".." && s.find('/') == std::string::npos && s.find('\0') == std::string::npos;
}
}  // namespace

Status Checkpoint::open(const std::string& path, std::unique_ptr<Checkpoint>* out) {
  std::unique_ptr<Checkpoint> c(new Checkpoint());
  std::error_code ec;
  std::vector<std::string> files;
  std::map<std::string, std::string> weight_map;
  if (fs::is_directory(path, ec)) {
    c->dir_ = path;
    const fs::path index = fs::path(path) / "model.safetensors.index.json";
    if (fs::exists(index, ec)) {
      c->has_index_ = true;
      std::string text;
      FP4KIT_RETURN_IF_ERROR(read_json_file(index.string(), &text));
      json j;
      FP4KIT_RETURN_IF_ERROR(parse_json_strict(text, &j, index.string()));
      if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
        return bad(index.string(), "expected an object with a \"weight_map\" object");
      std::set<std::string> seen;
      for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
        if (!it.value().is_string()) return bad(index.string(), "weight_map value of " + q(it.key()) + " is not a string");
        const std::string file = it.value().get<std::string>();
        if (!plain_file_name(file))
          return bad(index.string(), "weight_map file " + q(file) + " of " + q(it.key()) + " is not a plain file name");
        weight_map[it.key()] = file;
        if (seen.insert(file).second) files.push_back(file);
      }
      std::sort(files.begin(), files.end());
    } else {
      for (const auto& e : fs::directory_iterator(path, ec)) {
        if (e.is_regular_file() && e.path().extension() == ".safetensors") files.push_back(e.path().filename().string());
      }
      std::sort(files.begin(), files.end());
      if (files.empty()) return bad(path, "no *.safetensors files and no model.safetensors.index.json");
    }
  } else if (fs::is_regular_file(path, ec)) {
    c->dir_ = fs::path(path).parent_path().string();
    if (c->dir_.empty()) c->dir_ = ".";
    files.push_back(fs::path(path).filename().string());
  } else {
    return bad(path, "no such file or directory");
  }

  for (size_t s = 0; s < files.size(); ++s) {
    std::unique_ptr<SafetensorsFile> f;
    FP4KIT_RETURN_IF_ERROR(SafetensorsFile::open((fs::path(c->dir_) / files[s]).string(), &f));
    c->shard_names_.push_back(files[s]);
    c->shards_.push_back(std::move(f));
  }
  for (size_t s = 0; s < c->shards_.size(); ++s) {
    for (const TensorInfo& t : c->shards_[s]->tensors()) {
      if (c->has_index_) {
        auto it = weight_map.find(t.name);
        if (it == weight_map.end() || it->second != files[s]) continue;  // not mapped to this shard: ignored
      }
      if (!c->index_.emplace(t.name, c->tensors_.size()).second)
        return bad(path, "tensor " + q(t.name) + " appears in more than one shard");
      c->tensors_.push_back({t.name, CheckpointTensor{s, &t}});
    }
  }
  for (const auto& [name, file] : weight_map) {
    if (!c->index_.count(name))
      return bad(path, "weight_map maps tensor " + q(name) + " to " + q(file) + ", which does not contain it");
  }
  *out = std::move(c);
  return Status::ok();
}

const CheckpointTensor* Checkpoint::find(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second].second;
}

uint64_t Checkpoint::total_tensor_bytes() const {
  uint64_t n = 0;
  for (const auto& [name, t] : tensors_) n += t.info->nbytes();
  return n;
}

Status write_index(const std::string& path, uint64_t total_size, const std::map<std::string, std::string>& weight_map) {
  json j;
  j["metadata"] = {{"total_size", total_size}};
  j["weight_map"] = json::object();
  for (const auto& [k, v] : weight_map) j["weight_map"][k] = v;
  std::ofstream o(path, std::ios::binary | std::ios::trunc);
  if (!o) return bad(path, "cannot create");
  o << j.dump(2) << "\n";
  if (!o) return bad(path, "write failed");
  return Status::ok();
}

// ---- 16-bit floats ----------------------------------------------------------------------------

float bf16_to_float(uint16_t bits) {
  const uint32_t u = uint32_t(bits) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

uint16_t float_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40u);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

float f16_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu, u;
  if (exp == 0x1f) {
    u = sign | 0x7f800000u | (man << 13);
  } else if (exp == 0) {
    if (man == 0) {
      u = sign;
    } else {  // subnormal: normalize
      int e = -1;
      do {
        ++e;
        man <<= 1;
      } while (!(man & 0x400u));
      u = sign | (uint32_t(127 - 15 - e) << 23) | ((man & 0x3ffu) << 13);
    }
  } else {
    u = sign | ((exp + 112u) << 23) | (man << 13);
  }
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

}  // namespace fp4kit::st
