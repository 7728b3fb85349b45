#!/usr/bin/env python3
"""SASS properties every build must keep, read from the built library without a GPU (a ctest).

    python3 scripts/sass_check.py LIBRARY --frames tests/sass/stack_frames.txt [--write-frames]

* Every wgmma kernel issues HGMMA (a large-M kernel without it does its MMAs some other way).
* No kernel's stack frame (spilled registers, local arrays: cuobjdump -res-usage STACK + LOCAL) grows
  past the budget recorded in --frames, and no kernel missing from it has one. The decode and wgmma
  kernels sit at their register bounds (128 / 168), so a code change that spills shows here first
  (docs/GEMM.md, "What every build checks in the SASS", says where the recorded frames' spills lie).
  --write-frames records the current frames instead, after an intended change (say why in the commit).
(ptxas's wgmma serialization warning C7510 is a build-log matter: scripts/test.sh fails on it.)

cuobjdump as in scripts/sass_loops.py ($CUOBJDUMP, PATH, or the pinned wheels that scripts/setup.sh
installs into .deps/cuobjdump). Exits 0 (all hold), 1 (an offender, listed), 77 (no cuobjdump: skipped).
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sass_loops import demangle, find_cuobjdump, functions, opcode  # noqa: E402

SKIP = 77


def stable_names(mangled):
    """Demangled names without `(anonymous namespace)::`, whose mangled form carries a per-file hash."""
    return {k: re.sub(r"\s+", " ", v.replace("(anonymous namespace)::", "")).strip()
            for k, v in demangle(mangled).items()}


def frames_of(exe, env, lib):
    text = subprocess.run([exe, "-res-usage", lib], capture_output=True, text=True, env=env, check=True).stdout
    usage, name = {}, None
    for line in text.splitlines():
        m = re.match(r"\s*Function (\S+):\s*$", line)
        if m:
            name = m.group(1)
        elif name and "REG:" in line:
            u = dict(re.findall(r"(STACK|LOCAL):(\d+)", line))
            usage[name] = int(u.get("STACK", 0)) + int(u.get("LOCAL", 0))
            name = None
    names = stable_names(list(usage))
    return {names[k]: v for k, v in usage.items()}


def wgmma_sass(exe, env, lib):
    """{name: [(address, instruction)]} of the wgmma kernels (only the archive members that hold them)."""
    with tempfile.TemporaryDirectory() as tmp:
        paths = [lib]
        if lib.endswith(".a"):
            members = [m for m in subprocess.run(["ar", "t", lib], capture_output=True, text=True,
                                                 check=True).stdout.split() if "wgmma" in m]
            subprocess.run(["ar", "x", os.path.abspath(lib), *members], cwd=tmp, check=True)
            paths = [os.path.join(tmp, m) for m in members]
        funcs = {}
        for p in paths:
            out = subprocess.run([exe, "--dump-sass", p], capture_output=True, text=True, env=env, check=True)
            funcs.update(functions(out.stdout))
    names = stable_names(list(funcs))
    return {names[k]: v for k, v in funcs.items() if "wgmma" in names[k].split("(")[0]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("library")
    ap.add_argument("--frames", required=True)
    ap.add_argument("--write-frames", action="store_true")
    a = ap.parse_args()
    try:
        exe, env = find_cuobjdump()
    except (subprocess.CalledProcessError, OSError) as e:
        print(f"sass_check.py: SKIPPED: no cuobjdump ({e}); scripts/setup.sh installs one")
        return SKIP
    frames = frames_of(exe, env, a.library)
    current = {k: v for k, v in frames.items() if v > 0}
    if a.write_frames:
        with open(a.frames, "w") as f:
            f.write("# Bytes of stack frame + local memory per kernel (scripts/sass_check.py --write-frames).\n"
                    "# A kernel may not grow past its line; a kernel not listed may have none.\n")
            f.writelines(f"{current[k]} {k}\n" for k in sorted(current))
        print(f"sass_check.py: recorded {len(current)} frames in {a.frames}")
        return 0
    budget = {}
    with open(a.frames) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                size, name = line.rstrip("\n").split(" ", 1)
                budget[name] = int(size)
    failures = [f"stack frame {v} B, budget {budget.get(k, 0)} B: {k}"
                for k, v in sorted(current.items()) if v > budget.get(k, 0)]
    wgmma = wgmma_sass(exe, env, a.library)
    failures += [f"no HGMMA: {k}" for k, body in sorted(wgmma.items())
                 if not any(opcode(t).split(".")[0] == "HGMMA" for _, t in body)]
    if len(frames) < 100 or len(wgmma) < 10:
        failures.append(f"only {len(frames)} kernels, {len(wgmma)} of them wgmma: not the fp4kit library?")
    print(f"sass_check.py: {len(frames)} kernels, {len(current)} with a stack frame, {len(wgmma)} wgmma kernels")
    for k in sorted(budget):
        if k not in frames:
            print(f"  note: in the budget but not built: {k}")
        elif frames[k] < budget[k]:
            print(f"  note: frame shrank {budget[k]} -> {frames[k]} B (record it with --write-frames): {k}")
    for f in failures:
        print(f"  FAILED: {f}")
    print("sass_check.py: " + ("FAILED" if failures else "every wgmma kernel issues HGMMA; no frame past its budget"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
