#!/bin/bash
# A crash of the CUDA backend on the GPU machine, located: builds with debug information, runs
# tests/device/cuda_diag.py (its steps announced one by one), then runs it again under cuda-gdb and
# prints the native stack of the crash. One call of the device tool:
#
#   bash tests/device/cuda_debug.sh            (from the repository root, on the GPU machine)
set -u
PY=${PY:-python3}
OUT=${OUT:-/tmp/sot-out}
mkdir -p "$OUT"
B=/tmp/sot-build
export PYTHONPATH=$B/python SOT_CACHE_DIR=/tmp/sot-cache PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
{
  cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPython_EXECUTABLE="$(command -v "$PY")" \
    -DSOT_BUILD_KERNEL=OFF -DSOT_BUILD_TESTS=OFF -DSOT_BUILD_BENCHMARKS=OFF \
    -Dpybind11_DIR="$("$PY" -m pybind11 --cmakedir)" && cmake --build $B -j 16
} > "$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
echo built
timeout 90 "$PY" tests/device/cuda_diag.py 2>&1 | tail -40
echo "== under cuda-gdb"
timeout 150 cuda-gdb -batch -ex run -ex bt -ex 'info registers rip' -ex 'x/6i $pc' \
  --args "$PY" tests/device/cuda_diag.py > "$OUT/gdb.log" 2>&1
grep -v -E '^\[(New Thread|Thread|Detaching)' "$OUT/gdb.log" | tail -70
