#!/usr/bin/env bash
# Session 46 run 5b (same warm H100 right after run 5; the command as given to the device tool): every tactic,
# W4A16, on narrow layers with K = 8192 / 14336, with run 5's new binary (82c199f).
tar -xJf build-carry/new.tar.xz -C build-carry && timeout 150 build-carry/tools/fp4kit_new bench gemm --shapes 2048x14336,1024x14336,1024x8192,2048x8192 --m 1,8,16 --mode w4a16 --tactic all --graph --pdl --no-baseline --no-check --target-ms 20 --csv --output $OUT/sweep_longk.csv > $OUT/sweep_longk.log 2>&1; echo rc=$?
