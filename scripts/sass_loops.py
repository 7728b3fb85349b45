#!/usr/bin/env python3
"""Instruction mix of a kernel's loops, from its SASS, without a GPU.

    python3 scripts/sass_loops.py OBJECT_OR_BINARY KERNEL_REGEX [--min 64] [--top 24]

OBJECT_OR_BINARY is a compiled object (e.g. build/CMakeFiles/fp4kit.dir/src/gemm/sm90/decode_dpf_bf16.cu.o)
or an executable; KERNEL_REGEX selects functions by their demangled names (c++filt), e.g.
'decode_dp_kernel<__nv_bfloat16, __nv_bfloat16, 1, 2, 4, false, false, false, true, false, true>'
(regex metacharacters in it must be escaped; a plain substring such as 'decode_dp_kernel' works).
For every loop (a backward branch) of at least --min instructions it prints the instruction count
and the opcode histogram: where the issue slots of a loop go (docs/PERF.md session 20 run 15).

cuobjdump (and the nvdisasm it runs): taken from $CUOBJDUMP, else PATH, else installed once with pip
into .deps/cuobjdump (the nvidia-cuda-cuobjdump and -nvdisasm wheels, pinned below; the dev machine's
CUDA has neither).
"""
import argparse
import collections
import os
import re
import shutil
import subprocess
import sys

# cuobjdump runs nvdisasm for the SASS; both from the same CUDA release.
WHEELS = ["nvidia-cuda-cuobjdump==13.5.37", "nvidia-cuda-nvdisasm==13.5.37"]
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def find_cuobjdump():
    """The cuobjdump to run, and the environment it runs in (nvdisasm on PATH)."""
    env = dict(os.environ)
    exe = os.environ.get("CUOBJDUMP") or shutil.which("cuobjdump")
    if exe and (shutil.which("nvdisasm") or os.environ.get("NVDISASM_PATH")):
        return exe, env
    dest = os.path.join(ROOT, ".deps", "cuobjdump")
    bindir = os.path.join(dest, "nvidia", "cu13", "bin")
    if not all(os.path.exists(os.path.join(bindir, t)) for t in ("cuobjdump", "nvdisasm")):
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", dest, *WHEELS],
                       check=True)
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    return os.path.join(bindir, "cuobjdump"), env


def demangle(names):
    if not names or not shutil.which("c++filt"):
        return {n: n for n in names}
    out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True).stdout.splitlines()
    return dict(zip(names, out))


def functions(sass):
    """{mangled name: [(address, instruction text)]} from cuobjdump --dump-sass output."""
    funcs, cur = {}, None
    for line in sass.splitlines():
        m = re.search(r"Function : (\S+)", line)
        if m:
            cur = funcs.setdefault(m.group(1), [])
            continue
        m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;", line)
        if m and cur is not None:
            cur.append((int(m.group(1), 16), m.group(2)))
    return funcs


def opcode(text):
    text = re.sub(r"^@!?U?P\w+\s+", "", text)  # predicate
    return text.split()[0] if text else "?"


def loops(ins, min_len):
    """(start, end) of backward branches spanning at least min_len instructions, innermost first.
    An unconditional jump back over an EXIT is not a loop: it returns from an out-of-line block (the
    slow path of a BRA.DIV, placed after the function's body)."""
    out = []
    for addr, text in ins:
        if "BRA" not in text:
            continue
        m = re.search(r"0x([0-9a-f]+)", text)
        if not m or int(m.group(1), 16) >= addr or (addr - int(m.group(1), 16)) // 16 + 1 < min_len:
            continue
        start = int(m.group(1), 16)
        if not text.startswith("@") and any(start <= a <= addr and opcode(t) == "EXIT" for a, t in ins):
            continue
        out.append((start, addr))
    return sorted(set(out), key=lambda r: r[1] - r[0])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("object")
    ap.add_argument("kernel")
    ap.add_argument("--min", type=int, default=64, help="shortest loop reported (instructions)")
    ap.add_argument("--top", type=int, default=24, help="opcodes shown per loop")
    a = ap.parse_args()
    exe, env = find_cuobjdump()
    run = subprocess.run([exe, "--dump-sass", a.object], capture_output=True, text=True, env=env)
    if run.returncode != 0:
        sys.exit(f"sass_loops.py: cuobjdump failed: {run.stderr.strip()}")
    sass = run.stdout
    funcs = functions(sass)
    names = demangle(list(funcs))
    pattern = re.compile(a.kernel)
    shown = 0
    for mangled, ins in funcs.items():
        if not pattern.search(names[mangled]) and not pattern.search(mangled):
            continue
        shown += 1
        print(f"{names[mangled]}: {len(ins)} instructions")
        for start, end in loops(ins, a.min):
            body = [t for addr, t in ins if start <= addr <= end]
            hist = collections.Counter(opcode(t) for t in body)
            print(f"  loop 0x{start:x}..0x{end:x}: {len(body)} instructions")
            print("    " + ", ".join(f"{op} {n}" for op, n in hist.most_common(a.top)))
    if not shown:
        sys.exit(f"sass_loops.py: no function matches {a.kernel!r}")


if __name__ == "__main__":
    main()
