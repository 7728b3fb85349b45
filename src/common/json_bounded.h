// JSON parsing with a nesting limit for every file fp4kit reads (safetensors headers and indexes,
// config.json, hf_quant_config.json, the tuning cache). nlohmann parses and destroys deep nesting
// without recursion, but dump() and comparisons recurse once per level: a hostile file of 10^5
// nested arrays (400 KB) crashes the process as soon as a value is printed in an error message.
// None of these files is legitimately deeper than a few levels.
#pragma once

#include <nlohmann/json.hpp>

#include <stdexcept>
#include <string>
#include <string_view>

namespace fp4kit::detail {

inline constexpr int kMaxJsonDepth = 64;

// Json::parse that throws std::invalid_argument when containers nest deeper than kMaxJsonDepth
// (and whatever Json::parse throws on malformed input).
template <class Json>
Json parse_json_bounded(std::string_view text) {
  bool too_deep = false;
  auto cb = [&](int depth, typename Json::parse_event_t, Json&) {
    too_deep |= depth > kMaxJsonDepth;
    return !too_deep;  // once too deep, keep nothing (the parse still runs to the end)
  };
  Json j = Json::parse(text.begin(), text.end(), cb);
  if (too_deep)
    throw std::invalid_argument("JSON nests deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  return j;
}

}  // namespace fp4kit::detail
