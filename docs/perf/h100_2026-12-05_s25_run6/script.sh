#!/usr/bin/env bash
# Session 25 run 6 (final MoE rules: per-entry kernel B two plain row tiles past a wave, kernel A rolling up
# to two waves on long rows, per-entry path up to 32 entries with <= 1.2 rows per expert and up to 64 with
# H <= 4096): test_moe, the moe_small acceptance sweep, per-entry vs fused-decode at T = 5..7, memcheck.
set -u
R=/tmp/r6; mkdir -p $R; tar -xzf build-carry/fp4kit-binaries.tar.gz -C /tmp
F=/tmp/tools/fp4kit
timeout 150 /tmp/tests/test_moe --gtest_brief=1 > $R/test_moe.log 2>&1; echo "test_moe rc=$?"
grep -E "FAILED|PASSED|SKIPPED \]" $R/test_moe.log | head -8
timeout 150 $F bench moe --preset all --t 1,2,4,8,16 --mode both --graph --pdl --target-ms 30 --csv --output $R/accept_moe_small.csv > $R/accept_moe_small.log 2>&1; echo "moe_small rc=$?"
grep -E "^(checks|RESULT)" $R/accept_moe_small.log
python3 scripts/acceptance.py $R/accept_moe_small.csv > $R/acceptance.txt 2>&1
grep -E "MISSED|#7 [ab]:" $R/acceptance.txt
for p in per-entry fused-decode; do
  timeout 60 $F bench moe --preset qwen3-30b-a3b,qwen3.6-35b-a3b --t 5,6,7 --mode both --graph --pdl --no-baseline --no-check --target-ms 15 --path $p --csv --output $R/gap_$p.csv > $R/gap_$p.log 2>&1 || echo "gap $p rc=$?"
done
python3 - <<'PY'
import csv
R='/tmp/r6'
d={}
for p in ('per-entry','fused-decode'):
    for r in csv.DictReader(l for l in open(f'{R}/gap_{p}.csv') if not l.startswith('#')):
        if r['impl'].startswith('fp4kit'): d[(r['preset'],int(r['T']),r['impl'],p)]=float(r['graph_us'])
for k in sorted({k[:3] for k in d}):
    print(k, d.get(k+('per-entry',)), d.get(k+('fused-decode',)))
PY
timeout 200 compute-sanitizer --tool memcheck /tmp/tests/test_moe --gtest_filter='MoeGpu.PerEntryMatchesReferenceAndPipeline:MoeGpu.PerEntryW4A4MatchesReference' > $R/memcheck_moe.log 2>&1; echo "memcheck rc=$?"
grep -E "ERROR SUMMARY|PASSED|FAILED" $R/memcheck_moe.log | head -4
tar -C /tmp -czf $OUT/r6.tgz r6
