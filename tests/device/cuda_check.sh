#!/bin/bash
# The CUDA backend's checks on a machine with a GPU, as one call of the device tool (`run`): builds the extension
# for that machine's python3 (no kernel, no C++ tests), prints the driver's view, runs the NumPy differential
# suites on the `cuda` backend (float results within the tolerances of tests/python/graph/numpy_differential.py)
# as parallel groups of files, the corpus (loop ops included; count changes printed, values checked), the loop
# benchmark on cuda / cpu / numpy, compiles and runs a sample with a loop op under compute-sanitizer, and copies
# the logs to $OUT; first of all the GPU benchmark against the peers (gpu_bench.py; SOT_DEVICE_PEERS=0 skips it,
# SOT_PEERS_ONLY="heat,attention" runs those rows alone).
# Sized to end within about 9 minutes on 16 cores.
#
#   bash tests/device/cuda_check.sh            (from the repository root, on the GPU machine)
#   SOT_DEVICE_ONLY="tests/python/graph/test_numpy_loops.py" bash tests/device/cuda_check.sh   (those files only)
set -u
PY=${PY:-python3}
OUT=${OUT:-/tmp/sot-out}
L=/tmp/sot-logs  # the logs, packed into $OUT/logs.tar.gz at the end (the tool returns 8 files at most)
mkdir -p "$OUT" "$L"
B=${SOT_DEVICE_BUILD:-/tmp/sot-build}
export PYTHONPATH=$B/python SOT_CACHE_DIR=/tmp/sot-cache PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
T0=$(date +%s)
stamp() { echo "[$(($(date +%s) - T0)) s] $*"; }
# Where the compiler finds no libstdc++.so (a missing or dangling development link), the linker takes
# libstdc++.a into the module, whose second copy of the C++ library then meets the process's (a crash in
# std::regex was seen): link the shared one through a directory of our own.
LINK_DIRS=
CXXSO=$(c++ -print-file-name=libstdc++.so)
if [ ! -e "$CXXSO" ]; then
  mkdir -p /tmp/sot-libcxx
  ln -sf "$(ldconfig -p | awk '/libstdc\+\+\.so\.6 .*x86-64/ {print $NF; exit}')" /tmp/sot-libcxx/libstdc++.so
  LINK_DIRS=-L/tmp/sot-libcxx
  echo "no usable $CXXSO: linking $(readlink /tmp/sot-libcxx/libstdc++.so)"
fi
[ -n "${SOT_DEVICE_SKIP_BUILD:-}" ] || {
  cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DPython_EXECUTABLE="$(command -v "$PY")" \
    -DCMAKE_MODULE_LINKER_FLAGS="$LINK_DIRS" \
    -DSOT_BUILD_KERNEL=OFF -DSOT_BUILD_TESTS=OFF -DSOT_BUILD_BENCHMARKS=OFF \
    -Dpybind11_DIR="$("$PY" -m pybind11 --cmakedir)" && cmake --build $B -j 16
} > "$L/build.log" 2>&1 || { tail -40 "$L/build.log"; cp "$L/build.log" "$OUT/"; exit 1; }
stamp built
SO=$(ls $B/python/sot/_sot.*.so)
echo "compiler: $(c++ --version | head -1); LDFLAGS='${LDFLAGS:-}' CXXFLAGS='${CXXFLAGS:-}'"
echo "C++ library: $(ldd "$SO" | grep -c libstdc++) dynamic, $(nm -C "$SO" | grep -c codecvt_c32) static symbols"
# (seen 2026-11-26: libstdc++ linked statically there although c++ finds libstdc++.so; the link line and the
# NEEDED entries say why)
readelf -d "$SO" | grep NEEDED
ninja -C $B -t commands | grep -- "-o python/sot/_sot" | tail -1 | cut -c1-600
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
"$PY" -c "import sot, json, numpy; print(numpy.__version__); print(json.dumps(sot._sot.graph.cuda_status())); print(sot._sot.graph.nvrtc_version())"
timeout 60 "$PY" tests/device/cuda_diag.py 2>&1 | tail -8
stamp diag done
# the GPU benchmark against the peers (tests/device/gpu_bench.py), first, on an idle device
[ "${SOT_DEVICE_PEERS:-1}" = 0 ] || [ -n "${SOT_DEVICE_ONLY:-}" ] || {
  SOT_BACKEND=cuda timeout "${SOT_PEERS_TIMEOUT:-240}" "$PY" tests/device/gpu_bench.py \
    --budget "${SOT_PEERS_BUDGET:-150}" --only "${SOT_PEERS_ONLY:-}" --out "$OUT/gpu_bench.json" 2>&1 | tee "$L/gpu_bench.log" | grep -v Warning
  stamp peers bench done
  # the while loop with its tests read each step before the next is queued (stop 60's run-ahead off)
  SOT_CUDA_RUN_AHEAD=0 SOT_BACKEND=cuda timeout 60 "$PY" tests/device/gpu_bench.py --budget 20 --only jacobi_until \
    --out "$OUT/gpu_bench_no_ahead.json" 2>&1 | grep -v Warning | tail -4
  stamp run-ahead off done
}

G=tests/python/graph
# (test_cuda_compile.py and test_cuda_driver.py start CUDA in their pytest process while collecting: a child
# that process forks cannot use it, so the suites that fork their cases run in processes of their own; so does
# test_numpy_cache.py, whose cases run in its process)
SUITE_GROUPS=("$G/test_numpy_elementwise.py" "$G/test_numpy_more.py" "$G/test_numpy_shapes.py $G/test_numpy_errors.py"
  "$G/test_numpy_programs.py" "$G/test_numpy_loops.py" "$G/test_cuda_compile.py $G/test_cuda_driver.py"
  "$G/test_numpy_breadth.py" "$G/test_numpy_conds.py $G/test_numpy_while_loops.py"
  "$G/test_numpy_cache.py" "$G/test_numpy_buffer_reuse.py $G/test_numpy_opaque_dtypes.py $G/test_numpy_power_dtypes.py")
# SOT_DEVICE_ONLY="a.py b.py": a rerun of those files alone (each in a process of its own), no corpus, bench or
# sanitizer
if [ -n "${SOT_DEVICE_ONLY:-}" ]; then
  read -r -a SUITE_GROUPS <<< "$SOT_DEVICE_ONLY"
fi
i=0
for files in "${SUITE_GROUPS[@]}"; do
  # shellcheck disable=SC2086
  SOT_BACKEND=cuda timeout 150 "$PY" -m pytest -c tests/pytest.ini -q -p no:cacheprovider \
    -W ignore::DeprecationWarning $files > "$L/suite$i.log" 2>&1 &
  i=$((i + 1))
done
# device arrays in and out (sot.DeviceArray, CuPy, objects with __cuda_array_interface__ or DLPack) on the real
# device, with the transfer counts the simulated device checks in make test
SOT_CUDA_REAL=1 timeout 150 "$PY" -m pytest -c tests/pytest.ini -q -p no:cacheprovider \
  -W ignore::DeprecationWarning $G/test_cuda_device_arrays.py $G/test_cuda_axis_reductions.py \
  $G/test_cuda_creation.py $G/test_cuda_scalar_steps.py $G/test_cuda_pinned_copies.py $G/test_cuda_inplace.py \
  $G/test_cuda_vectors_and_sums.py $G/test_cuda_views.py $G/test_cuda_reductions_any_axis.py $G/test_cuda_joins.py \
  > "$L/device_arrays.log" 2>&1 &
# host arrays copied in on the copy stream beside the kernels (off on a GPU unless asked: stop 61's, not yet run
# on one): the copy-stream tests and the loop and program suites with it on
SOT_CUDA_REAL=1 SOT_CUDA_COPY_STREAM=1 timeout 150 "$PY" -m pytest -c tests/pytest.ini -q -p no:cacheprovider \
  -W ignore::DeprecationWarning $G/test_cuda_copy_stream.py > "$L/suite_copy_stream.log" 2>&1 &
[ -n "${SOT_DEVICE_ONLY:-}" ] || SOT_BACKEND=cuda SOT_CUDA_COPY_STREAM=1 timeout 200 "$PY" -m pytest -c tests/pytest.ini -q \
  -p no:cacheprovider -W ignore::DeprecationWarning $G/test_numpy_loops.py $G/test_numpy_programs.py \
  $G/test_numpy_while_loops.py > "$L/suite_copy_stream_numpy.log" 2>&1 &
[ -n "${SOT_DEVICE_ONLY:-}" ] || SOT_BACKEND=cuda SOT_CORPUS_PRINT=1 timeout 280 "$PY" -m pytest -n 4 -c tests/pytest.ini -q -p no:cacheprovider \
  -W ignore::DeprecationWarning -s $G/test_corpus.py > "$L/corpus.log" 2>&1 &
wait
stamp suites done
for log in "$L"/suite*.log "$L/device_arrays.log" "$L/corpus.log"; do
  [ -e "$log" ] || continue
  echo "== $log"; grep -E "^(FAILED|ERROR)|passed|failed|Timeout|Error" "$log" | tail -12
done
if [ -n "${SOT_DEVICE_ONLY:-}" ]; then
  tar -C /tmp -czf "$OUT/logs.tar.gz" sot-logs
  exit 0
fi
for backend in ${SOT_DEVICE_BENCH:-cuda cpu numpy}; do
  SOT_BACKEND=$backend timeout 45 "$PY" tests/bench/bench_loops.py --repeat 3 2>&1 | tail -8
done | tee "$L/bench.log"
stamp bench done
# loop steps replayed (and run as CUDA graphs, 32 steps each) against each step through the body's graph, and
# against eager NumPy on this machine's CPU: the heat loop at 4K and 1M elements, best of 3, host arrays in and out
cat > /tmp/sot-replay.py <<'PYEOF'
import time
import numpy as np
import sot
def heat(u, steps):
    for _ in range(steps):
        u[1:-1] = u[1:-1] + 0.1 * (u[2:] - 2 * u[1:-1] + u[:-2])
    return u
def best(call):
    times = []
    for _ in range(3):
        t = time.perf_counter(); out = call(); times.append(time.perf_counter() - t)
    return min(times), out
for n in (4096, 1 << 20):
    x = np.random.default_rng(2).standard_normal(n)
    plain, want = best(lambda: heat(x.copy(), 500))
    for replay in (False, True):
        sot.config.cuda_replay = replay
        sot.reset()
        h = sot.jit(heat, backend="cuda")
        for _ in range(2):
            h(x.copy(), 500)
        t, got = best(lambda: h(x.copy(), 500))
        print(f"heat n={n} replay={replay}: {t * 1e3:.2f} ms, eager NumPy {plain * 1e3:.2f} ms "
              f"({plain / t:.1f}x), equal {np.array_equal(got, want)}")
# host <-> device copies of 256 MB through the page-locked buffers (4 MiB and 16 MiB chunks) and straight from
# pageable memory (0), best of 3, GB/s each way
big = np.random.default_rng(3).standard_normal(1 << 25)
for chunk in (4 << 20, 16 << 20, 0):
    sot._sot.graph.cuda_staging(chunk)
    ups, downs = [], []
    for _ in range(3):  # (a new device array each time: one copies itself to the host once)
        t = time.perf_counter(); d = sot.to_device(big); ups.append(time.perf_counter() - t)
        t = time.perf_counter(); back = np.asarray(d); downs.append(time.perf_counter() - t)
    up, down = min(ups), min(downs)
    print(f"copies of 256 MB, staging chunk {chunk >> 20} MiB: to the device {big.nbytes / up / 1e9:.1f} GB/s, "
          f"back {big.nbytes / down / 1e9:.1f} GB/s, equal {np.array_equal(back, big)}")
sot._sot.graph.cuda_staging(4 << 20)
PYEOF
timeout 90 "$PY" /tmp/sot-replay.py 2>&1 | tee "$L/replay.log"
stamp replay done
cat > /tmp/sot-sample.py <<'PYEOF'
import numpy as np, sot
def f(x, y):
    e = np.exp(x - 1.0) * y + np.sqrt(np.abs(x))
    return e.sum(axis=-1), (e * 2.0).sum(), np.where(x > 0, x, y)
def heat(u, steps):
    for _ in range(steps):
        u[1:-1] = u[1:-1] + 0.1 * (u[2:] - 2 * u[1:-1] + u[:-2])
    return u
g = sot.jit(f, backend="cuda")
h = sot.jit(heat, backend="cuda")
x, y = np.random.default_rng(0).standard_normal((2, 300, 257))
for _ in range(3):
    got = g(x, y)
    hot = h(x[0].copy(), 40)
want = f(x, y)
print([float(np.max(np.abs(a - b))) for a, b in zip(got, want)], float(np.max(np.abs(hot - heat(x[0].copy(), 40)))))
G = sot._sot.graph
G.cuda_transfer_counts(reset=True)
h(x[0].copy(), 40)
print("the heat loop's run moved (arrays, not flag words):", G.cuda_transfer_counts())
def mlp(x, w1, w2):
    return np.maximum(x @ w1 + 1.0, 0.0) @ w2 * 2.0
m = sot.jit(mlp, backend="cuda")
w1, w2 = np.random.default_rng(1).standard_normal((2, 257, 257))
for _ in range(3):
    got = m(x[0], w1, w2)
G.cuda_transfer_counts(reset=True)
got = m(x[0], w1, w2)
print("mlp: max error", float(np.max(np.abs(got - mlp(x[0], w1, w2)))), "moved", G.cuda_transfer_counts())
c = sot.explain(f, x, y).graphs[0]["compiled"]
print([(gr["op_names"], gr.get("status"), gr.get("path_runs"), gr.get("fallback_runs")) for gr in c.plan()["groups"]])
PYEOF
timeout 60 compute-sanitizer --tool memcheck "$PY" /tmp/sot-sample.py > "$L/sanitizer.log" 2>&1
echo "sanitizer rc=$?"; tail -15 "$L/sanitizer.log"
stamp end
tar -C /tmp -czf "$OUT/logs.tar.gz" sot-logs
