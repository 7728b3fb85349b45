#!/usr/bin/env bash
# The demo command: installs what fp4kit needs (scripts/setup.sh), builds the fp4kit CLI in build/
# and runs `fp4kit demo` (arguments are passed on, e.g. --m 64 or --cpu; see docs/CLI.md).
# Without an sm_90a GPU the demo runs on the CPU reference; with one, on the GPU kernels.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

bash scripts/setup.sh

build=build
if [ -f "$build/CMakeCache.txt" ] && ! grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja$' "$build/CMakeCache.txt"; then
  rm -rf "$build/CMakeCache.txt" "$build/CMakeFiles"
fi
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" --target fp4kit_cli -j "$(nproc)"
echo
exec "$build/tools/fp4kit" demo "$@"
