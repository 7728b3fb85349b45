// Safetensors reader/writer: valid files round-trip; each class of malformed file is rejected with
// a clear message (never a crash).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/json_bounded.h"
#include "fp4kit/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace fs = std::filesystem;
using namespace fp4kit;
using namespace fp4kit::st;

namespace {

std::vector<uint8_t> image(const std::string& header, size_t data_bytes, uint64_t declared_len = UINT64_MAX) {
  const uint64_t n = declared_len == UINT64_MAX ? header.size() : declared_len;
  std::vector<uint8_t> out(8 + header.size() + data_bytes, 0xAB);
  for (int i = 0; i < 8; ++i) out[size_t(i)] = uint8_t(n >> (8 * i));
  if (!header.empty()) std::memcpy(out.data() + 8, header.data(), header.size());
  return out;
}

// Parses and returns the error message ("" when accepted). Also runs the fuzz entry on it.
std::string parse_error(const std::vector<uint8_t>& img) {
  LLVMFuzzerTestOneInput(img.data(), img.size());
  ParsedHeader h;
  const Status s = parse_safetensors(img.data(), img.size(), &h, "t.safetensors");
  return s.is_ok() ? std::string() : s.message();
}

#define EXPECT_REJECTED(img, fragment)                                             \
  do {                                                                             \
    const std::string msg_ = parse_error(img);                                     \
    EXPECT_FALSE(msg_.empty()) << "accepted";                                      \
    EXPECT_NE(msg_.find(fragment), std::string::npos) << "message: " << msg_;      \
  } while (0)

fs::path temp_dir(const std::string& tag) {
  const fs::path d = fs::temp_directory_path() / ("fp4kit_st_" + tag + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

}  // namespace

TEST(SafetensorsParse, AcceptsValidHeader) {
  const std::string h =
      R"({"__metadata__":{"format":"pt"},"a":{"dtype":"BF16","shape":[2,3],"data_offsets":[0,12]},)"
      R"("b":{"dtype":"F32","shape":[],"data_offsets":[12,16]},"e":{"dtype":"U8","shape":[0,5],"data_offsets":[16,16]}}   )";
  const auto img = image(h, 16);
  ParsedHeader p;
  ASSERT_TRUE(parse_safetensors(img.data(), img.size(), &p).is_ok()) << parse_error(img);
  ASSERT_EQ(p.tensors.size(), 3u);
  EXPECT_EQ(p.tensors[0].name, "a");
  EXPECT_EQ(p.tensors[0].dtype, Dtype::kBF16);
  EXPECT_EQ(p.tensors[1].name, "b");
  EXPECT_TRUE(p.tensors[1].shape.empty());
  EXPECT_EQ(p.metadata.at("format"), "pt");
  EXPECT_EQ(p.data_offset, 8 + h.size());
}

TEST(SafetensorsParse, EveryDtypeSize) {
  struct Case { const char* name; int64_t elems; uint64_t bytes; };
  const Case cases[] = {{"BOOL", 3, 3},     {"U8", 3, 3},      {"I8", 3, 3},      {"I16", 3, 6},  {"U16", 3, 6},
                        {"F16", 3, 6},      {"BF16", 3, 6},    {"I32", 3, 12},    {"U32", 3, 12}, {"F32", 3, 12},
                        {"F64", 3, 24},     {"I64", 3, 24},    {"U64", 3, 24},    {"C64", 3, 24}, {"F8_E4M3", 3, 3},
                        {"F8_E5M2", 3, 3},  {"F8_E8M0", 3, 3}, {"F4", 4, 2},      {"F6_E2M3", 4, 3}, {"F6_E3M2", 4, 3}};
  for (const Case& c : cases) {
    const std::string h = std::string(R"({"t":{"dtype":")") + c.name + R"(","shape":[)" + std::to_string(c.elems) +
                          R"(],"data_offsets":[0,)" + std::to_string(c.bytes) + "]}}";
    EXPECT_EQ(parse_error(image(h, c.bytes)), "") << c.name;
    Dtype d;
    ASSERT_TRUE(dtype_from_name(c.name, &d));
    EXPECT_STREQ(dtype_name(d), c.name);
  }
  // 3 F4 elements are 12 bits: not whole bytes.
  EXPECT_REJECTED(image(R"({"t":{"dtype":"F4","shape":[3],"data_offsets":[0,2]}})", 2), "whole number of bytes");
}

TEST(SafetensorsMalformed, TruncatedFile) {
  EXPECT_REJECTED((std::vector<uint8_t>{1, 2, 3}), "shorter than the 8-byte header length");
  EXPECT_REJECTED(std::vector<uint8_t>{}, "shorter than the 8-byte header length");
  // Header declared longer than what follows.
  auto img = image(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}})", 4);
  img.resize(20);
  EXPECT_REJECTED(img, "truncated");
  // Data cut short: the tensor's range runs past the end.
  img = image(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}})", 2);
  EXPECT_REJECTED(img, "past the data buffer");
}

TEST(SafetensorsMalformed, HeaderLengthTooBig) {
  EXPECT_REJECTED(image("{}", 0, 200'000'000), "exceeds the limit");
  EXPECT_REJECTED(image("{}", 0, UINT64_MAX - 1), "exceeds the limit");
  EXPECT_REJECTED(image("{}", 0, 1000), "truncated");
  EXPECT_REJECTED(image("{}", 0, 1), "below the minimum");
}

TEST(SafetensorsMalformed, HeaderNotJson) {
  EXPECT_REJECTED(image("{\"a\": ", 0), "not valid JSON");
  EXPECT_REJECTED(image("hello world!", 0), "not valid JSON");
  EXPECT_REJECTED(image(std::string("{\"\xff\xfe\":1}"), 0), "not valid JSON");  // invalid UTF-8
  EXPECT_REJECTED(image(std::string("{}\0\0", 4), 0), "not valid JSON");         // NUL padding
}

TEST(SafetensorsMalformed, HeaderNotObject) {
  EXPECT_REJECTED(image("[1,2,3]", 0), "expected an object");
  EXPECT_REJECTED(image("\"str\"", 0), "expected an object");
  EXPECT_REJECTED(image(R"({"a":[1]})", 0), "tensor 'a': entry is a array");
  EXPECT_REJECTED(image(R"({"__metadata__":{"k":1}})", 0), "expected a string");
  EXPECT_REJECTED(image(R"({"a":{"shape":[1],"data_offsets":[0,1]}})", 1), "\"dtype\"");
  EXPECT_REJECTED(image(R"({"a":{"dtype":"U8","data_offsets":[0,1]}})", 1), "\"shape\"");
  EXPECT_REJECTED(image(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0]}})", 1), "data_offsets");
}

TEST(SafetensorsMalformed, MetadataNotObjectOfStrings) {
  EXPECT_REJECTED(image(R"({"__metadata__":"pt"})", 0), "__metadata__ must be an object");
  EXPECT_REJECTED(image(R"({"__metadata__":["format","pt"]})", 0), "__metadata__ must be an object");
  EXPECT_REJECTED(image(R"({"__metadata__":null})", 0), "__metadata__ must be an object");
  EXPECT_REJECTED(image(R"({"__metadata__":{"format":{"a":"b"}}})", 0), "__metadata__ value of 'format' is a object");
  EXPECT_REJECTED(image(R"({"__metadata__":{"format":"pt","format":"np"}})", 0), "duplicate key 'format'");
}

TEST(SafetensorsMalformed, EntryFieldsOfWrongType) {
  EXPECT_REJECTED(image(R"({"w":{"dtype":7,"shape":[1],"data_offsets":[0,1]}})", 1), "non-string \"dtype\"");
  EXPECT_REJECTED(image(R"({"w":{"dtype":"U8","shape":"1","data_offsets":[0,1]}})", 1), "non-array \"shape\"");
  EXPECT_REJECTED(image(R"({"w":{"dtype":"U8","shape":[[1]],"data_offsets":[0,1]}})", 1), "not an integer >= 0");
  EXPECT_REJECTED(image(R"({"w":{"dtype":"U8","shape":[1],"data_offsets":{"begin":0,"end":1}}})", 1),
                  "must be an array [begin, end]");
  EXPECT_REJECTED(image(R"({"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1,2]}})", 1),
                  "must be an array [begin, end]");
  EXPECT_REJECTED(image(R"({"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1.0]}})", 1), "integers >= 0");
  EXPECT_REJECTED(image(R"({"w":{"dtype":"U8","shape":[1],"data_offsets":["0","1"]}})", 1), "integers >= 0");
}

TEST(SafetensorsMalformed, UnknownDtype) {
  EXPECT_REJECTED(image(R"({"w":{"dtype":"F12","shape":[1],"data_offsets":[0,2]}})", 2), "tensor 'w': unknown dtype 'F12'");
  EXPECT_REJECTED(image(R"({"w":{"dtype":"bf16","shape":[1],"data_offsets":[0,2]}})", 2), "unknown dtype");
}

TEST(SafetensorsMalformed, NegativeOrHugeShape) {
  EXPECT_REJECTED(image(R"({"w":{"dtype":"U8","shape":[-1],"data_offsets":[0,0]}})", 0), "not an integer >= 0");
  EXPECT_REJECTED(image(R"({"w":{"dtype":"U8","shape":[1.5],"data_offsets":[0,0]}})", 0), "not an integer >= 0");
  EXPECT_REJECTED(image(R"({"w":{"dtype":"U8","shape":[18446744073709551615],"data_offsets":[0,0]}})", 0),
                  "not an integer >= 0");
  EXPECT_REJECTED(image(R"({"w":{"dtype":"F64","shape":[4294967296,4294967296],"data_offsets":[0,0]}})", 0),
                  "overflows");
  EXPECT_REJECTED(image(R"({"w":{"dtype":"F64","shape":[1152921504606846976],"data_offsets":[0,0]}})", 0),
                  "overflows");
}

TEST(SafetensorsMalformed, OffsetsOutOfRange) {
  EXPECT_REJECTED(image(R"({"w":{"dtype":"U8","shape":[8],"data_offsets":[4,12]}})", 8), "past the data buffer");
  EXPECT_REJECTED(image(R"({"w":{"dtype":"U8","shape":[1],"data_offsets":[-1,0]}})", 8), "integers >= 0");
  EXPECT_REJECTED(image(R"({"w":{"dtype":"U8","shape":[1],"data_offsets":[18446744073709551615,0]}})", 8),
                  "begin");
}

TEST(SafetensorsMalformed, BeginAfterEnd) {
  EXPECT_REJECTED(image(R"({"w":{"dtype":"U8","shape":[0],"data_offsets":[4,2]}})", 8), "begin 4 > end 2");
}

TEST(SafetensorsMalformed, OverlappingRanges) {
  EXPECT_REJECTED(image(R"({"a":{"dtype":"U8","shape":[8],"data_offsets":[0,8]},)"
                        R"("b":{"dtype":"U8","shape":[4],"data_offsets":[6,10]}})",
                        16),
                  "overlap");
  // Nested: b inside a.
  EXPECT_REJECTED(image(R"({"a":{"dtype":"U8","shape":[8],"data_offsets":[0,8]},)"
                        R"("b":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}})",
                        16),
                  "overlap");
  // Aliases (same range twice).
  EXPECT_REJECTED(image(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
                        R"("b":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}})",
                        4),
                  "overlap");
  // Gaps and empty tensors are fine.
  EXPECT_EQ(parse_error(image(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
                              R"("z":{"dtype":"U8","shape":[0],"data_offsets":[2,2]},)"
                              R"("b":{"dtype":"U8","shape":[4],"data_offsets":[8,12]}})",
                              12)),
            "");
}

TEST(SafetensorsMalformed, SizeMismatch) {
  EXPECT_REJECTED(image(R"({"w":{"dtype":"BF16","shape":[2,3],"data_offsets":[0,8]}})", 12),
                  "tensor 'w': shape x dtype size is 12 bytes but data_offsets span 8");
}

TEST(SafetensorsMalformed, DuplicateNames) {
  EXPECT_REJECTED(image(R"({"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
                        R"("w":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})",
                        2),
                  "duplicate key 'w'");
  EXPECT_REJECTED(image(R"({"w":{"dtype":"U8","dtype":"I8","shape":[1],"data_offsets":[0,1]}})", 1),
                  "duplicate key 'dtype'");
}

TEST(SafetensorsMalformed, DeepNestingDoesNotCrash) {
  std::string h = "{\"a\":";
  h += std::string(100000, '[');
  h += std::string(100000, ']');
  h += "}";
  EXPECT_FALSE(parse_error(image(h, 0)).empty());
}

// A nested shape entry used to be printed in the error message: dump() recursed once per level
// and 200000 levels (400 KB of header) overflowed the stack.
TEST(SafetensorsMalformed, DeepNestingInsideAnEntryIsAnError) {
  std::string h = R"({"t":{"dtype":"U8","shape":)";
  h += std::string(200000, '[');
  h += std::string(200000, ']');
  h += R"(,"data_offsets":[0,0]}})";
  EXPECT_REJECTED(image(h, 0), "nest deeper than 64 levels");
  std::string ok = R"({"t":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"__metadata__":{"a":"b"}})";
  EXPECT_TRUE(parse_error(image(ok, 1)).empty());
}

TEST(JsonBounded, ParsesShallowRejectsDeep) {
  using fp4kit::detail::parse_json_bounded;
  EXPECT_EQ(parse_json_bounded<nlohmann::json>(R"({"a":[1,{"b":2}]})")["a"][1]["b"], 2);
  const std::string at_limit = std::string(64, '[') + std::string(64, ']');
  EXPECT_NO_THROW(parse_json_bounded<nlohmann::json>(at_limit));
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_THROW(parse_json_bounded<nlohmann::ordered_json>(deep), std::invalid_argument);
  EXPECT_THROW(parse_json_bounded<nlohmann::json>("{"), nlohmann::json::exception);
}

TEST(SafetensorsFile, OpenErrorsNameThePath) {
  const fs::path d = temp_dir("open");
  std::unique_ptr<SafetensorsFile> f;
  Status s = SafetensorsFile::open((d / "missing.safetensors").string(), &f);
  EXPECT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("missing.safetensors"), std::string::npos);
  {
    std::ofstream o(d / "short.safetensors", std::ios::binary);
    o << "abc";
  }
  s = SafetensorsFile::open((d / "short.safetensors").string(), &f);
  EXPECT_NE(s.message().find("truncated"), std::string::npos) << s.message();
  {
    std::ofstream o(d / "empty.safetensors", std::ios::binary);
  }
  s = SafetensorsFile::open((d / "empty.safetensors").string(), &f);
  EXPECT_FALSE(s.is_ok());
  // A directory is not a safetensors file.
  fs::create_directories(d / "dir.safetensors");
  s = SafetensorsFile::open((d / "dir.safetensors").string(), &f);
  EXPECT_NE(s.message().find("not a regular file"), std::string::npos) << s.message();
  fs::remove_all(d);
}

TEST(SafetensorsWriter, RoundTripAndAlignment) {
  const fs::path d = temp_dir("writer");
  const std::vector<TensorSpec> plan = {{"x", Dtype::kBF16, {3, 5}},
                                        {"s", Dtype::kF32, {}},
                                        {"empty", Dtype::kU8, {0}},
                                        {"codes", Dtype::kU8, {7}}};
  std::unique_ptr<SafetensorsWriter> w;
  ASSERT_TRUE(SafetensorsWriter::create((d / "a.safetensors").string(), plan, {{"format", "pt"}}, &w).is_ok());
  std::vector<uint16_t> x(15);
  for (size_t i = 0; i < x.size(); ++i) x[i] = uint16_t(i * 977);
  const float sval = 0.125f;
  const uint8_t codes[7] = {1, 2, 3, 4, 5, 6, 7};
  // Out-of-order writes are rejected.
  EXPECT_FALSE(w->write("s", &sval, 4).is_ok());
  ASSERT_TRUE(w->write("x", x.data(), 10).is_ok());  // in two pieces
  ASSERT_TRUE(w->write("x", reinterpret_cast<const uint8_t*>(x.data()) + 10, 20).is_ok());
  ASSERT_TRUE(w->write("s", &sval, 4).is_ok());
  EXPECT_FALSE(w->finish().is_ok());  // codes missing
  ASSERT_TRUE(w->write("codes", codes, 7).is_ok());
  ASSERT_TRUE(w->finish().is_ok());
  EXPECT_FALSE(fs::exists(d / "a.safetensors.tmp"));

  std::unique_ptr<SafetensorsFile> f;
  ASSERT_TRUE(SafetensorsFile::open((d / "a.safetensors").string(), &f).is_ok());
  ASSERT_EQ(f->tensors().size(), 4u);
  const TensorInfo* t = f->find("x");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->shape, (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(std::memcmp(f->data(*t), x.data(), 30), 0);
  float s2;
  std::memcpy(&s2, f->data(*f->find("s")), 4);
  EXPECT_EQ(s2, sval);
  EXPECT_EQ(std::memcmp(f->data(*f->find("codes")), codes, 7), 0);
  EXPECT_EQ(f->metadata().at("format"), "pt");
  // The header is padded to a multiple of 8 so that the data buffer is 8-byte aligned.
  std::ifstream in(d / "a.safetensors", std::ios::binary);
  uint64_t n = 0;
  in.read(reinterpret_cast<char*>(&n), 8);
  EXPECT_EQ(n % 8, 0u);
  // An unfinished writer leaves nothing behind.
  {
    std::unique_ptr<SafetensorsWriter> w2;
    ASSERT_TRUE(SafetensorsWriter::create((d / "b.safetensors").string(), plan, {}, &w2).is_ok());
  }
  EXPECT_FALSE(fs::exists(d / "b.safetensors.tmp"));
  EXPECT_FALSE(fs::exists(d / "b.safetensors"));
  // Duplicate names in a plan are rejected.
  std::unique_ptr<SafetensorsWriter> w3;
  EXPECT_FALSE(
      SafetensorsWriter::create((d / "c.safetensors").string(), {{"a", Dtype::kU8, {1}}, {"a", Dtype::kU8, {1}}}, {}, &w3)
          .is_ok());
  fs::remove_all(d);
}

// write() never reads past what the plan allows: a null pointer or a byte count past the tensor's
// planned size (also one whose sum with the bytes already written wraps) is an error, not a read.
TEST(SafetensorsWriter, RejectsNullDataAndOversizedPieces) {
  const fs::path d = temp_dir("writer_bad");
  std::unique_ptr<SafetensorsWriter> w;
  ASSERT_TRUE(SafetensorsWriter::create((d / "a.safetensors").string(), {{"t", Dtype::kU8, {4}}}, {}, &w).is_ok());
  const uint8_t bytes[4] = {1, 2, 3, 4};
  Status s = w->write("t", nullptr, 4);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
  EXPECT_NE(s.message().find("tensor 't': data is null"), std::string::npos) << s.message();
  ASSERT_TRUE(w->write("t", bytes, 1).is_ok());
  s = w->write("t", bytes + 1, SIZE_MAX);  // 1 + SIZE_MAX wraps to 0
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
  EXPECT_NE(s.message().find("tensor 't': 1 + 18446744073709551615 bytes written, planned 4"), std::string::npos)
      << s.message();
  s = w->write("t", bytes + 1, 4);
  EXPECT_NE(s.message().find("tensor 't': 1 + 4 bytes written, planned 4"), std::string::npos) << s.message();
  ASSERT_TRUE(w->write("t", bytes + 1, 3).is_ok());
  ASSERT_TRUE(w->finish().is_ok());
  std::unique_ptr<SafetensorsFile> f;
  ASSERT_TRUE(SafetensorsFile::open((d / "a.safetensors").string(), &f).is_ok());
  EXPECT_EQ(std::memcmp(f->data(*f->find("t")), bytes, 4), 0);
  fs::remove_all(d);
}
