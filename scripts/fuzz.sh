#!/usr/bin/env bash
# Builds the libFuzzer target of the safetensors header parser (tests/safetensors/fuzz_header.cpp)
# with clang++ (-fsanitize=fuzzer,address,undefined) and runs it for a fixed budget.
#   scripts/fuzz.sh [SECONDS]      default 60; the corpus is kept in build-fuzz/corpus
# Needs clang++ with libFuzzer (Debian 12: clang-14 + libclang-rt-14-dev). Exit code: 0 when no
# crash was found, non-zero (and a crash-* file in build-fuzz/) otherwise.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
budget="${1:-60}"
cxx="${CXX_FUZZ:-clang++}"
out=build-fuzz
mkdir -p "$out/corpus"

"$cxx" -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -Iinclude -Isrc src/io/safetensors.cpp src/common/status.cpp tests/safetensors/fuzz_header.cpp \
  -o "$out/fuzz_header"

# Seed corpus: a few valid and malformed images.
seed() {  # name header [data-bytes]
  python3 - "$out/corpus/$1" "$2" "${3:-0}" <<'PY'
import struct, sys
path, header, n = sys.argv[1], sys.argv[2].encode(), int(sys.argv[3])
open(path, "wb").write(struct.pack("<Q", len(header)) + header + b"\xab" * n)
PY
}
seed valid '{"__metadata__":{"format":"pt"},"a":{"dtype":"BF16","shape":[2,3],"data_offsets":[0,12]},"b":{"dtype":"F32","shape":[],"data_offsets":[12,16]}}' 16
seed nvfp4 '{"w.weight":{"dtype":"U8","shape":[2,8],"data_offsets":[0,16]},"w.weight_scale":{"dtype":"F8_E4M3","shape":[2,1],"data_offsets":[16,18]},"w.weight_scale_2":{"dtype":"F32","shape":[],"data_offsets":[18,22]}}' 22
seed overlap '{"a":{"dtype":"U8","shape":[8],"data_offsets":[0,8]},"b":{"dtype":"U8","shape":[4],"data_offsets":[6,10]}}' 16
seed f4 '{"t":{"dtype":"F4","shape":[4],"data_offsets":[0,2]}}' 2

cat > "$out/safetensors.dict" <<'DICT'
"dtype"
"shape"
"data_offsets"
"__metadata__"
"BF16"
"F16"
"F32"
"U8"
"F8_E4M3"
"F4"
"F6_E2M3"
"C64"
"18446744073709551615"
"-1"
DICT

echo "fuzz.sh: running $out/fuzz_header for ${budget} s"
"$out/fuzz_header" -max_total_time="$budget" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
  -dict="$out/safetensors.dict" -artifact_prefix="$out/" -print_final_stats=1 "$out/corpus" 2>&1 | tail -n 15
rc=${PIPESTATUS[0]}
echo "fuzz.sh: exit code $rc"
exit "$rc"
