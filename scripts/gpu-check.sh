#!/usr/bin/env bash
# scripts/gpu-check.sh — the one script to run on the GPU machine (H100/H200, CUDA 13, no network).
#
#   bash scripts/gpu-check.sh [check]    GPU summary, fp4kit info, fp4kit demo, every test binary,
#                                        optional memcheck, benchmarks; a summary table last.
#   bash scripts/gpu-check.sh build      build in $BUILD_DIR on this machine (needs GTest for tests)
#   bash scripts/gpu-check.sh pack [DIR] on the dev machine: copy the built binaries of $BUILD_DIR
#                                        (tools/fp4kit, tests/test_*) into DIR (default build-carry/)
#
# Preferred flow: build here (Debian, everything installed), `pack`, carry build-carry/ to the GPU
# machine (it is ignored by git, like every build*/), run `BUILD_DIR=build-carry bash scripts/gpu-check.sh`.
#
# Environment:
#   BUILD_DIR        binaries: <dir>/tools/fp4kit, <dir>/tests/test_* (default: build-carry/ if it
#                    has them, else build/; for `pack`, build/). `check` builds only when neither the
#                    CLI nor a test is there.
#   CUTLASS_INCLUDE  CUTLASS/CuTe include dir for building (default: .deps/cutlass-include, resolved)
#   OUT              logs, CSV, markdown (default: out/gpu-check)
#   SANITIZE=1       also run compute-sanitizer memcheck on SANITIZE_TARGETS, space-separated entries
#                    BINARY[:GTEST_FILTER] (default test_quant, with SANITIZE_FILTER as its filter), e.g.
#                    SANITIZE_TARGETS="test_quant test_gemm:*GroupedGemmGpu*"
#   BENCH            quick (default) | full | none | acceptance (the sweeps of issues #5 and #7: bench gemm
#                    M = 1..16 with graph replay and PDL, M = 24..1536, bench moe T = 1..16 and 4096,
#                    then scripts/acceptance.py prints each acceptance line met / MISSED). Timing per
#                    measurement: ACC_TARGET_MS (30) for the memory-bound M <= 16 / T <= 16 sweeps;
#                    ACC_LONG_TARGET_MS (200) after ACC_WARMUP_MS (100) of untimed calls for M = 24..1536
#                    and T = 4096, whose compute-bound calls run at the power cap (docs/BENCH_GEMM.md)
#   STEP_TIMEOUT     seconds per step (default 240); BENCH_TIMEOUT (default 300; 540 with BENCH=full)
#   BUDGET           seconds for the whole check (default 560): later steps are skipped, not cut off
#   BUILD_TIMEOUT    seconds for `build` (default 580)
# Exit code: 0 when every step that ran passed, 1 otherwise.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

mode=${1:-check}
STEP_TIMEOUT=${STEP_TIMEOUT:-240}
BENCH=${BENCH:-quick}
if [ "$BENCH" = full ]; then BENCH_TIMEOUT=${BENCH_TIMEOUT:-540}; else BENCH_TIMEOUT=${BENCH_TIMEOUT:-300}; fi
BUDGET=${BUDGET:-560}
BUILD_TIMEOUT=${BUILD_TIMEOUT:-580}
OUT=${OUT:-out/gpu-check}

if [ -z "${BUILD_DIR:-}" ]; then
  if [ "$mode" = pack ]; then
    BUILD_DIR=build
  elif [ -f build-carry/fp4kit-binaries.tar.gz ] || [ -x build-carry/tools/fp4kit ]; then
    BUILD_DIR=build-carry
  else
    BUILD_DIR=build
  fi
fi

say() { printf '%s\n' "$*"; }
die() { printf 'gpu-check: %s\n' "$*" >&2; exit 1; }

test_binaries() {
  local f
  for f in "$BUILD_DIR"/tests/test_*; do
    [ -f "$f" ] && [ -x "$f" ] && printf '%s\n' "$f"
  done
}

# ---- pack -------------------------------------------------------------------------------------------
# One compressed archive (the CUDA fat binaries shrink ~4x), so the carried directory stays small.
tarball=fp4kit-binaries.tar.gz
if [ "$mode" = pack ]; then
  dest=${2:-build-carry}
  [ -x "$BUILD_DIR/tools/fp4kit" ] || die "no $BUILD_DIR/tools/fp4kit: build first (bash scripts/test.sh)"
  mapfile -t files < <(cd "$BUILD_DIR" && { echo tools/fp4kit; ls tests/test_* 2>/dev/null | grep -v '\.cmake$'; })
  rm -rf "$dest"
  mkdir -p "$dest"
  tar -C "$BUILD_DIR" -czf "$dest/$tarball" "${files[@]}" || die "tar failed"
  say "gpu-check: packed ${#files[@]} binaries (${files[*]}) into $dest/$tarball ($(du -h "$dest/$tarball" | cut -f1))"
  say "  carry $dest to the GPU machine and run there: BUILD_DIR=$dest bash scripts/gpu-check.sh"
  exit 0
fi

# ---- build --------------------------------------------------------------------------------------------
has_header() {  # has_header REL_PATH: found on the usual include paths (or CPATH)
  local d
  for d in ${CPATH//:/ } /usr/include /usr/local/include; do
    [ -f "$d/$1" ] && return 0
  done
  return 1
}

has_gtest() {
  has_header gtest/gtest.h || { [ -n "${GTEST_ROOT:-}" ] && [ -f "$GTEST_ROOT/include/gtest/gtest.h" ]; }
}

do_build() {
  command -v cmake >/dev/null || die "cmake not found"
  command -v ninja >/dev/null || die "ninja not found"
  command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ] || die "nvcc not found"
  command -v nvcc >/dev/null || export PATH=/usr/local/cuda/bin:$PATH
  local cutlass=${CUTLASS_INCLUDE:-.deps/cutlass-include}
  cutlass=$(readlink -f "$cutlass" 2>/dev/null || true)
  [ -n "$cutlass" ] && [ -f "$cutlass/cute/tensor.hpp" ] ||
    die "CUTLASS headers not found (${CUTLASS_INCLUDE:-.deps/cutlass-include}): carry the include dir and set CUTLASS_INCLUDE"
  local tests=ON
  if ! has_gtest; then
    tests=OFF
    say "gpu-check: NOTE: GoogleTest is not installed here, so the tests are NOT built."
    say "           Build on the dev machine and carry the binaries: bash scripts/gpu-check.sh pack"
  fi
  has_header CLI/CLI.hpp && has_header nlohmann/json.hpp ||
    say "gpu-check: NOTE: CLI11 / nlohmann-json headers not found: the fp4kit CLI will not be built."
  say "gpu-check: building in $BUILD_DIR (tests $tests, CUTLASS $cutlass, $(nproc) jobs)"
  timeout -k 10 "$BUILD_TIMEOUT" cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DFP4KIT_CUTLASS_INCLUDE="$cutlass" -DFP4KIT_BUILD_TESTS=$tests -DFP4KIT_BUILD_TOOLS=ON || return 1
  timeout -k 10 "$BUILD_TIMEOUT" cmake --build "$BUILD_DIR" -j "$(nproc)"
}

if [ "$mode" = build ]; then
  do_build
  exit $?
fi
[ "$mode" = check ] || die "unknown mode '$mode' (check, build or pack)"

# ---- check ---------------------------------------------------------------------------------------------
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
if [ -f "$BUILD_DIR/$tarball" ]; then
  tar -C "$BUILD_DIR" -xzf "$BUILD_DIR/$tarball" || die "cannot unpack $BUILD_DIR/$tarball"
fi
cli="$BUILD_DIR/tools/fp4kit"
if [ ! -x "$cli" ] && [ -z "$(test_binaries)" ]; then
  say "gpu-check: no binaries in $BUILD_DIR: building"
  do_build > "$OUT/build.log" 2>&1 || { tail -n 30 "$OUT/build.log"; die "build failed (log: $OUT/build.log)"; }
fi

# Binaries built elsewhere find libcudart through their rpath; add the toolkit's lib dirs if not.
probe=$( [ -x "$cli" ] && echo "$cli" || test_binaries | head -n 1 )
if [ -n "$probe" ] && ldd "$probe" 2>/dev/null | grep -q 'not found'; then
  for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib "$(dirname "$(command -v nvcc 2>/dev/null || echo /x/x)")/../lib64"; do
    [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  done
fi
export FP4KIT_SOURCE_DIR="$root"
if [ -z "${FP4KIT_PYTHON:-}" ]; then
  if [ -x .deps/venv/bin/python ]; then FP4KIT_PYTHON=$root/.deps/venv/bin/python; else FP4KIT_PYTHON=$(command -v python3 || echo python3); fi
fi
export FP4KIT_PYTHON

failed=0
step_rc=0 step_s=0 step_timed_out=0
summary=()      # "step|status|detail" rows
bench_lines=()  # key lines of the benchmarks

# run_step NAME TIMEOUT LOG CMD...: runs with a timeout unless the budget is spent; sets step_rc.
run_step() {
  local name=$1 limit=$2 log=$3
  shift 3
  if [ "$SECONDS" -ge "$BUDGET" ]; then
    step_rc=-1
    summary+=("$name|SKIPPED|time budget of ${BUDGET} s spent")
    return
  fi
  local left=$((BUDGET - SECONDS + 30))
  [ "$left" -lt "$limit" ] && limit=$left
  local t0=$SECONDS
  timeout -k 10 "$limit" "$@" > "$log" 2>&1 </dev/null
  step_rc=$?
  step_s=$((SECONDS - t0))
  if [ "$step_rc" -eq 124 ] || [ "$step_rc" -eq 137 ]; then step_timed_out=1; else step_timed_out=0; fi
}

say "== gpu-check: $(date -u '+%Y-%m-%d %H:%M:%S UTC'), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'), binaries $BUILD_DIR, logs $OUT"

# 1. GPU
say; say "== nvidia-smi"
if command -v nvidia-smi >/dev/null; then
  timeout -k 5 30 nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem,power.limit,temperature.gpu \
    --format=csv 2>&1 | tee "$OUT/nvidia-smi.txt"
  timeout -k 5 30 nvidia-smi >> "$OUT/nvidia-smi.txt" 2>&1
else
  say "nvidia-smi not found"
fi

# 2. fp4kit info and demo
if [ -x "$cli" ]; then
  say; say "== fp4kit info"
  run_step info 60 "$OUT/info.txt" "$cli" info
  cat "$OUT/info.txt"
  "$cli" info --json > "$OUT/info.json" 2>/dev/null
  if [ "$step_rc" -eq 0 ]; then
    summary+=("info|ok|$(grep -m1 '^GPU kernels' "$OUT/info.txt" | sed 's/  */ /g'); CLI built from $(grep -m1 '^source ' "$OUT/info.txt" | sed 's/^source  *//')")
  elif [ "$step_rc" -ne -1 ]; then
    summary+=("info|FAILED|exit $step_rc")
    failed=1
  fi

  say; say "== fp4kit demo"
  run_step demo "$STEP_TIMEOUT" "$OUT/demo.txt" "$cli" demo
  cat "$OUT/demo.txt"
  if [ "$step_rc" -eq 0 ]; then
    summary+=("demo|ok|$(grep -m1 '^path:' "$OUT/demo.txt" | cut -c7-80)")
    while read -r line; do bench_lines+=("demo: $line"); done < <(grep -E '^  W4A(16|4) ' "$OUT/demo.txt" | sed 's/  */ /g')
  elif [ "$step_rc" -ne -1 ]; then
    summary+=("demo|FAILED|exit $step_rc$([ "$step_timed_out" = 1 ] && echo ' (timeout)'): $(tail -n 1 "$OUT/demo.txt" | cut -c1-100)")
    failed=1
  fi
else
  summary+=("cli|MISSING|no $cli")
  failed=1
fi

# 3. tests
say; say "== tests"
count() { grep -Eo "$1" "$2" | grep -Eo '[0-9]+' | tail -n 1; }
while read -r bin; do
  area=${bin##*/test_}
  log="$OUT/tests_$area.log"
  run_step "test_$area" "$STEP_TIMEOUT" "$log" "$bin" --gtest_brief=1 --gtest_color=no
  [ "$step_rc" -eq -1 ] && continue
  total=$(count '\[==========\] [0-9]+ tests? from' "$log")
  passed=$(count '\[  PASSED  \] [0-9]+' "$log")
  fails=$(count '\[  FAILED  \] [0-9]+ tests?, listed below' "$log")
  skipped=$(count '\[  SKIPPED \] [0-9]+' "$log")
  detail="${passed:-0}/${total:-?} passed, ${fails:-0} failed, ${skipped:-0} skipped, ${step_s} s"
  if [ "$step_rc" -eq 0 ]; then
    status=ok
  else
    failed=1
    if [ "$step_timed_out" = 1 ]; then status=TIMEOUT; elif [ -n "$fails" ]; then status=FAILED; else status="CRASH($step_rc)"; fi
  fi
  summary+=("test_$area|$status|$detail")
  say "test_$area: $status, $detail"
  grep -E '^\[  FAILED  \] [A-Za-z_]' "$log" | sort -u | head -n 10
done < <(test_binaries)
[ -n "$(test_binaries)" ] || { summary+=("tests|MISSING|no $BUILD_DIR/tests/test_* (GTest? see scripts/gpu-check.sh pack)"); failed=1; }

# 4. memcheck: each of SANITIZE_TARGETS, entries BINARY[:GTEST_FILTER] (no globbing of the filters)
if [ "${SANITIZE:-0}" = 1 ]; then
  san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  set -f
  read -r -a san_targets <<< "${SANITIZE_TARGETS:-test_quant${SANITIZE_FILTER:+:$SANITIZE_FILTER}}"
  set +f
  for target in "${san_targets[@]}"; do
    bin=${target%%:*}; filt=""; [[ "$target" == *:* ]] && filt=${target#*:}
    say; say "== compute-sanitizer memcheck: $bin${filt:+ ($filt)}"
    log="$OUT/memcheck_${bin#test_}.log"
    if [ ! -x "$san" ]; then
      summary+=("memcheck|MISSING|compute-sanitizer not found"); break
    elif [ ! -x "$BUILD_DIR/tests/$bin" ]; then
      summary+=("memcheck $bin|MISSING|no $bin"); continue
    fi
    run_step "memcheck_$bin" "$STEP_TIMEOUT" "$log" "$san" --tool memcheck --error-exitcode 99 \
      "$BUILD_DIR/tests/$bin" --gtest_brief=1 --gtest_color=no ${filt:+"--gtest_filter=$filt"}
    if [ "$step_rc" -ne -1 ]; then
      errs=$(grep -m1 'ERROR SUMMARY' "$log" | sed 's/^=* *//')
      if [ "$step_rc" -eq 0 ]; then summary+=("memcheck $bin|ok|${errs:-no summary}, ${step_s} s"); else
        summary+=("memcheck $bin|FAILED|exit $step_rc, ${errs:-no summary}"); failed=1; fi
      say "${errs:-no ERROR SUMMARY line (log: $log)}"
    fi
  done
fi

# 5. benchmarks (their options differ: quantize writes --csv/--md files; gemm prints --markdown and
#    writes --output FILE)
if [ "$BENCH" = acceptance ] && [ -x "$cli" ]; then
  # name|command: each writes $OUT/accept_<name>.csv; tables rotate weights past L2, graph replay, PDL.
  acc_runs=(
    "gemm_small|bench gemm --shapes all --m 1,2,3,4,5,6,8,9,12,16 --mode both --graph --pdl --target-ms ${ACC_TARGET_MS:-30}"
    "moe_small|bench moe --preset all --t 1,2,4,8,16 --mode both --graph --pdl --target-ms ${ACC_TARGET_MS:-30}"
    "gemm_mid|bench gemm --shapes all --m 24,32,48,64,96,128,192,256,384,512,1024,1536 --mode both --graph --pdl --target-ms ${ACC_LONG_TARGET_MS:-200} --warmup-ms ${ACC_WARMUP_MS:-100}"
    "moe_large|bench moe --preset all --t 4096 --mode both --no-reduced-check --target-ms ${ACC_LONG_TARGET_MS:-200} --warmup-ms ${ACC_WARMUP_MS:-100}"
  )
  acc_csvs=()  # only this check's CSVs are judged (a skipped step leaves none behind)
  for entry in "${acc_runs[@]}"; do
    name=${entry%%|*}
    read -r -a cmd <<< "${entry#*|}"
    [ -n "${ACC_ONLY:-}" ] && [[ ",$ACC_ONLY," != *",$name,"* ]] && continue
    rm -f "$OUT/accept_$name.csv"
    say; say "== fp4kit ${cmd[*]}"
    run_step "acc_$name" "$BENCH_TIMEOUT" "$OUT/accept_$name.log" "$cli" "${cmd[@]}" --csv --output "$OUT/accept_$name.csv"
    [ "$step_rc" -eq -1 ] && continue
    [ -f "$OUT/accept_$name.csv" ] && acc_csvs+=("$OUT/accept_$name.csv")
    grep -E '^(summary|checks|RESULT|  )' "$OUT/accept_$name.log" | grep -vE '^  *[0-9]' | head -n 40
    if [ "$step_rc" -eq 0 ]; then summary+=("acc_$name|ok|${step_s} s"); else
      failed=1; summary+=("acc_$name|FAILED|exit $step_rc$([ "$step_timed_out" = 1 ] && echo ' (timeout)'), ${step_s} s"); fi
  done
  if [ ${#acc_csvs[@]} -gt 0 ]; then
    if ! python3 scripts/acceptance.py "${acc_csvs[@]}" > "$OUT/acceptance.txt" 2>&1; then
      failed=1
      summary+=("acceptance|FAILED|scripts/acceptance.py: $(tail -n 1 "$OUT/acceptance.txt" | cut -c1-100)")
    fi
    while read -r line; do bench_lines+=("$line"); done < <(grep -E '^(acceptance:|  #[57] [a-c]:)' "$OUT/acceptance.txt")
  fi
elif [ "$BENCH" != none ] && [ -x "$cli" ]; then
  for which in quantize gemm; do
    say; say "== fp4kit bench $which ($BENCH)"
    if [ "$which" = quantize ]; then
      args=(--csv "$OUT/bench_quantize.csv" --md "$OUT/bench_quantize.md")
    else
      args=(--markdown --output "$OUT/bench_gemm.csv")
    fi
    [ "$BENCH" = full ] || args+=(--quick)
    log="$OUT/bench_$which.log"
    run_step "bench_$which" "$BENCH_TIMEOUT" "$log" "$cli" bench "$which" "${args[@]}"
    [ "$step_rc" -eq -1 ] && continue
    cat "$log"
    if [ "$step_rc" -eq 2 ] && grep -q 'not built' "$log"; then
      summary+=("bench_$which|not built|")
      continue
    fi
    if [ "$step_rc" -eq 0 ]; then
      summary+=("bench_$which|ok|${step_s} s, $(cd "$OUT" && ls bench_"$which".* | tr '\n' ' ')")
    else
      failed=1
      summary+=("bench_$which|FAILED|exit $step_rc$([ "$step_timed_out" = 1 ] && echo ' (timeout)'), ${step_s} s")
    fi
    # The benchmarks' verdict lines ("summary: ...", "checks: ...", "RESULT: ...").
    while read -r line; do bench_lines+=("$which: $line"); done < <(grep -iE '^(summary:|checks:|result:|tactics:)' "$log" | head -n 8 | cut -c1-160)
  done
fi

# 6. summary
{
  say
  say "== gpu-check summary ($(grep -m1 -v '^name' "$OUT/nvidia-smi.txt" 2>/dev/null | cut -d, -f1 || echo 'no GPU'); ${SECONDS} s)"
  printf '%-16s %-10s %s\n' step status detail
  printf '%-16s %-10s %s\n' ---- ------ ------
  for row in "${summary[@]}"; do
    IFS='|' read -r a b c <<< "$row"
    printf '%-16s %-10s %s\n' "$a" "$b" "$c"
  done
  if [ ${#bench_lines[@]} -gt 0 ]; then
    say
    for line in "${bench_lines[@]}"; do say "  $line"; done
  fi
  say
  if [ "$failed" = 0 ]; then say "gpu-check: PASS (logs in $OUT)"; else say "gpu-check: FAIL (logs in $OUT)"; fi
} | tee "$OUT/summary.txt"
exit "$failed"
