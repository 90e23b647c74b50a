#!/bin/bash
# The CUDA backend's checks on a machine with a GPU, as one call of the device tool (`run`): builds the extension
# for that machine's python3 (no kernel, no C++ tests), prints the driver's view, runs the NumPy differential
# suites on the `cuda` backend (float results within the tolerances of tests/python/graph/numpy_differential.py),
# compiles and runs a sample under compute-sanitizer, and copies the logs to $OUT.
#
#   bash tests/device/cuda_check.sh            (from the repository root, on the GPU machine)
set -u
PY=${PY:-python3}
OUT=${OUT:-/tmp/sot-out}
mkdir -p "$OUT"
B=/tmp/sot-build
export PYTHONPATH=$B/python SOT_CACHE_DIR=/tmp/sot-cache PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
{
  cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DPython_EXECUTABLE="$(command -v "$PY")" \
    -DSOT_BUILD_KERNEL=OFF -DSOT_BUILD_TESTS=OFF -DSOT_BUILD_BENCHMARKS=OFF \
    -Dpybind11_DIR="$("$PY" -m pybind11 --cmakedir)" && cmake --build $B -j 16
} > "$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
"$PY" -c "import sot, json; print(json.dumps(sot._sot.graph.cuda_status(), indent=1)); print(sot._sot.graph.nvrtc_version())"
SUITES="tests/python/graph/test_numpy_elementwise.py tests/python/graph/test_numpy_more.py
  tests/python/graph/test_numpy_shapes.py tests/python/graph/test_numpy_programs.py
  tests/python/graph/test_numpy_errors.py tests/python/graph/test_cuda_compile.py tests/python/graph/test_cuda_driver.py"
SOT_BACKEND=cuda timeout 420 "$PY" -m pytest -c tests/pytest.ini -q -p no:cacheprovider -W ignore::DeprecationWarning \
  $SUITES > "$OUT/suites.log" 2>&1
echo "suites rc=$?"; tail -30 "$OUT/suites.log"
cat > /tmp/sot-sample.py <<'PYEOF'
import numpy as np, sot
def f(x, y):
    e = np.exp(x - 1.0) * y + np.sqrt(np.abs(x))
    return e.sum(axis=-1), (e * 2.0).sum(), np.where(x > 0, x, y)
g = sot.jit(f, backend="cuda")
x, y = np.random.default_rng(0).standard_normal((2, 300, 257))
for _ in range(3):
    got = g(x, y)
want = f(x, y)
print([float(np.max(np.abs(a - b))) for a, b in zip(got, want)])
c = sot.explain(f, x, y).graphs[0]["compiled"]
print([(gr["op_names"], gr.get("cuda"), gr.get("device_runs")) for gr in c.plan()["groups"]])
PYEOF
timeout 120 compute-sanitizer --tool memcheck "$PY" /tmp/sot-sample.py > "$OUT/sanitizer.log" 2>&1
echo "sanitizer rc=$?"; tail -15 "$OUT/sanitizer.log"
