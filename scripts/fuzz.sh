#!/usr/bin/env bash
# Builds the libFuzzer target of the safetensors header parser (tests/safetensors/fuzz_header.cpp)
# with clang++ (-fsanitize=fuzzer,address,undefined) in build-fuzz/ (separate from the CMake build)
# and runs it for a fixed time budget. scripts/test.sh (the CI command) runs it after the tests.
#   scripts/fuzz.sh [SECONDS]      default 60; the corpus is kept in build-fuzz/corpus
# Environment: CXX_FUZZ (default: clang++, else clang++-14), FUZZ_SEED (default: libFuzzer picks
# one and prints it; pass it to reproduce a run).
# Needs clang++ with libFuzzer (Debian 12: clang-14 + libclang-rt-14-dev; scripts/setup.sh installs
# them). Exit code: 0 when no crash was found; non-zero when the build failed or a crash, leak or
# timeout was found (its input is saved as build-fuzz/crash-* / leak-* / timeout-*).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
budget="${1:-60}"
if [ -n "${CXX_FUZZ:-}" ]; then
  cxx="$CXX_FUZZ"
elif command -v clang++ >/dev/null 2>&1; then
  cxx=clang++
elif command -v clang++-14 >/dev/null 2>&1; then
  cxx=clang++-14
else
  echo "fuzz.sh: no clang++ found (Debian 12: apt-get install clang-14 libclang-rt-14-dev, or bash scripts/setup.sh)" >&2
  exit 1
fi
out=build-fuzz
mkdir -p "$out/corpus"

echo "fuzz.sh: building $out/fuzz_header with $cxx"
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

seed_arg=()
[ -n "${FUZZ_SEED:-}" ] && seed_arg=(-seed="$FUZZ_SEED")
stamp="$out/.run-start"
touch "$stamp"
log="$out/fuzz.log"
echo "fuzz.sh: running $out/fuzz_header for ${budget} s (log: $log)"
set +e
"$out/fuzz_header" -max_total_time="$budget" -max_len=4096 -timeout=10 -rss_limit_mb=2048 "${seed_arg[@]}" \
  -dict="$out/safetensors.dict" -artifact_prefix="$out/" -print_final_stats=1 "$out/corpus" >"$log" 2>&1
rc=$?
set -e
grep -a -m1 -E '^INFO: Seed: ' "$log" || true
tail -n 15 "$log"
if [ "$rc" -ne 0 ]; then
  artifacts=$(find "$out" -maxdepth 1 -newer "$stamp" \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | tr '\n' ' ')
  echo "fuzz.sh: FAILED: the fuzzer exited with $rc; input(s): ${artifacts:-none saved} (reproduce: $out/fuzz_header FILE)"
else
  echo "fuzz.sh: ok, no crash in ${budget} s"
fi
exit "$rc"
