#!/usr/bin/env bash
# Session 31 run 4 (H100 wanted): new = HEAD + the kStageA-only decode slice bounds + the arrangement's
# scale word / later wait + the MoE round trip (step-sum E2M1, kernel A's factor table) with the block
# amax by redux.sync (redux) or by shuffles (shfl). (1) test_moe (incl. the new bit-exact round-trip
# tests) and test_gemm of redux; memcheck of the round-trip and W4A4 MoE tests; (2) MoE W4A4 A/B base /
# redux / shfl, graph + PDL, 3 reps; (3) dense A/B base vs redux (dense code = run 3's new).
set -u; R=$OUT/r4; mkdir -p $R/moe $R/ab; B=gpu-bin/s31c
for f in fp4kit_base fp4kit_redux fp4kit_shfl test_moe_new test_gemm_new; do xz -dc $B/$f.xz > /tmp/$f; chmod +x /tmp/$f; done
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/gpu.txt
timeout 120 /tmp/test_moe_new --gtest_brief=1 > $R/test_moe.log 2>&1; echo "test_moe rc=$?"; grep -E "PASSED|FAILED|SKIPPED|Failure" $R/test_moe.log | head -8
timeout 60 /tmp/test_gemm_new --gtest_brief=1 > $R/test_gemm.log 2>&1; echo "test_gemm rc=$?"; grep -E "PASSED|FAILED|Failure" $R/test_gemm.log | head -4
timeout 120 compute-sanitizer --tool memcheck /tmp/test_moe_new --gtest_brief=1 --gtest_filter='MoeRoundtrip*:*W4A4*' > $R/memcheck_moe.log 2>&1; echo "memcheck rc=$?"; tail -2 $R/memcheck_moe.log
MO="bench moe --preset fi-256,qwen3.6-35b-a3b,qwen3-30b-a3b,deepseek-v3,fi-32,mixtral-8x7b --t 1,2,4,16 --mode w4a4 --graph --pdl --no-baseline --no-check --target-ms 20 --csv"
for rep in 1 2 3; do
  for v in base redux shfl; do timeout 70 /tmp/fp4kit_$v $MO --output $R/moe/${v}_r$rep.csv >/dev/null 2>&1 || echo "moe $v $rep rc=$?"; done
done
python3 scripts/ab_table.py --base base $R/moe/*_r*.csv > $R/moe.txt 2>&1
cat $R/moe.txt
M="bench gemm --shapes all --m 1,2,3,8,9,16 --mode both --graph --pdl --no-baseline --no-check --target-ms 20 --csv"
for rep in 1 2 3; do
  timeout 80 /tmp/fp4kit_base $M --output $R/ab/base_r$rep.csv >/dev/null 2>&1 || echo "base $rep rc=$?"
  timeout 80 /tmp/fp4kit_redux $M --output $R/ab/new_r$rep.csv >/dev/null 2>&1 || echo "new $rep rc=$?"
done
python3 scripts/ab_table.py --base base $R/ab/*_r*.csv > $R/ab.txt 2>&1
cat $R/ab.txt
tar -C $R -czf $R/raw.tgz moe ab && rm -rf $R/moe $R/ab
