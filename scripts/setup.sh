#!/usr/bin/env bash
# Installs everything fp4kit needs to build and test, unattended and idempotently.
#   Debian packages: compiler tool chain, GoogleTest, nlohmann-json, CLI11, and clang-14 with its
#   libFuzzer/sanitizer runtimes (libclang-rt-14-dev, only a Recommends of clang-14) for the fuzz
#   step of scripts/test.sh (scripts/fuzz.sh).
#   Python (into .deps/venv, ignored by git): nvidia-cutlass (CUTLASS/CuTe headers), numpy, ml_dtypes;
#   and NVIDIA's cuobjdump + nvdisasm wheels into .deps/cuobjdump (the image's CUDA has neither) for the
#   SASS tools, scripts/sass_check.py (a ctest) and sass_loops.py, which read the built kernels without a GPU.
# The CUDA toolkit (nvcc 13.0) is part of the machine image of this project's kind.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

CUTLASS_VERSION=4.2.0.0
NUMPY_VERSION=2.2.6
ML_DTYPES_VERSION=0.5.1
CUDA_TOOLS_VERSION=13.5.37  # as scripts/sass_loops.py's WHEELS

need_apt=()
for pkg in cmake ninja-build g++ libgtest-dev nlohmann-json3-dev libcli11-dev python3-venv clang-14 libclang-rt-14-dev; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need_apt+=("$pkg")
done
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "setup: apt-get install ${need_apt[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need_apt[@]}"
fi

venv=.deps/venv
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
stamp="$venv/.fp4kit-${CUTLASS_VERSION}-${NUMPY_VERSION}-${ML_DTYPES_VERSION}"
if [ ! -f "$stamp" ]; then
  "$venv/bin/python" -m pip install -q --disable-pip-version-check \
    "nvidia-cutlass==${CUTLASS_VERSION}" "numpy==${NUMPY_VERSION}" "ml_dtypes==${ML_DTYPES_VERSION}"
  touch "$stamp"
fi
inc=$("$venv/bin/python" -c 'import cutlass_library, os; print(os.path.join(os.path.dirname(cutlass_library.__file__), "source", "include"))')
test -f "$inc/cute/tensor.hpp" || { echo "setup: CUTLASS headers not found under $inc" >&2; exit 1; }
ln -sfn "$inc" .deps/cutlass-include
tools=.deps/cuobjdump
if [ ! -f "$tools/.fp4kit-${CUDA_TOOLS_VERSION}" ]; then
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps --upgrade --target "$tools" \
    "nvidia-cuda-cuobjdump==${CUDA_TOOLS_VERSION}" "nvidia-cuda-nvdisasm==${CUDA_TOOLS_VERSION}"
  touch "$tools/.fp4kit-${CUDA_TOOLS_VERSION}"
fi
echo "setup: ok (CUTLASS headers at .deps/cutlass-include)"
