"""Reductions along an axis that is not the innermost, on the device (graph/backends/cuda/device_reductions.hpp), on
the simulated device: NumPy adds along such an axis in index order, one output element at a time, and so does the
kernel, so sums and means are NumPy's bit for bit and max/min are NumPy's maximum and minimum. The operand never
leaves the device; layouts NumPy sums another way (the axis innermost) and empty axes run on the host."""

import shutil

import numpy as np
import pytest
from harness import CUDA_REAL, warned

import sot
from sot.report import plan_lines

G = sot._sot.graph
pytestmark = [pytest.mark.skipif(shutil.which("c++") is None, reason="no C++ compiler for the simulated device"),
              pytest.mark.skipif(sot.config.backend != "cpu", reason="the same programs as the default run's"),
              pytest.mark.usefixtures("cuda_device")]


def floats(seed, *shape, dtype=np.float64):
    rng = np.random.default_rng(seed)
    # magnitudes over 16 decades: another summation order would round differently
    return (rng.standard_normal(shape) * 10.0 ** rng.uniform(-8, 8, shape)).astype(dtype)


def moved():
    c = G.cuda_transfer_counts(reset=True)
    return c["arrays_in"], c["arrays_out"], c["bytes_out"]


def normalize_columns(x):
    y = x * 2.0 - 1.0
    lo = y.min(axis=0)
    span = np.max(y, axis=0, keepdims=True) - lo
    return (y - lo) / (span + 1.0), y.sum(axis=0), np.mean(y, -2)


def per_plane(x):
    z = x + 0.5
    return z.sum(axis=1) * 2.0, np.amax(z, 0), z.mean(axis=1, keepdims=True)


def same(got, plain):
    assert type(got) is type(plain)
    if isinstance(plain, tuple):
        for g, p in zip(got, plain):
            same(g, p)
        return
    assert got.dtype == plain.dtype and got.shape == plain.shape
    assert np.array_equal(got, plain, equal_nan=True)


@pytest.mark.parametrize("fn,shapes", [
    (normalize_columns, [(300, 40), (517, 33), (64, 300)]),
    (per_plane, [(3, 1000, 9), (5, 77, 260), (2, 3000, 5)]),
])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_reductions_along_an_axis_run_on_the_device_and_are_numpys(fn, shapes, dtype):
    f = sot.jit(fn, backend="cuda")
    for k, shape in enumerate(shapes):
        x = floats(k, *shape, dtype=dtype)
        f(x)  # (the first run of each group is the host's)
        for again in range(2):
            x = floats(10 * k + again + 1, *shape, dtype=dtype)
            moved()
            got = f(x)
            plain = fn(x)
            same(got, plain)
            # the input in, the results out, never the value reduced
            assert moved() == (1, len(plain), sum(p.nbytes for p in plain)), (shape, again)
    assert G.cuda_simulated_counts()["bad_accesses"] == 0
    compiled = sot.explain(sot.jit(fn, backend="cuda"), x).graphs[0]["compiled"]
    for _ in range(2):
        compiled(x)
    plan = compiled.plan()
    # three reductions a run, each run from the second on (the first runs each group on the host first)
    assert 6 <= plan["resident"]["library_steps"] <= 9, plan["resident"]
    line = next(t for t in plan_lines(plan) if t.startswith("on the device:"))
    assert f"{plan['resident']['library_steps']} library steps (products, reductions, copies and fills)" in line, line


def sums_of(x):
    y = x * 1.0
    return y.sum(axis=0)


def test_a_sum_that_overflows_warns_as_numpy():
    f = sot.jit(sums_of, backend="cuda")
    f(floats(1, 40, 50, dtype=np.float32))
    f(floats(2, 40, 50, dtype=np.float32))
    big = np.full((40, 50), 3e37, dtype=np.float32)
    for x in (big, floats(3, 40, 50, dtype=np.float32)):
        got, got_w = warned(lambda: f(x))
        plain, plain_w = warned(lambda: sums_of(x))
        same(got, plain)
        assert got_w == plain_w


def extremes(x):
    y = x - 1.0
    return y.max(axis=0), y.min(axis=0)


def test_max_and_min_propagate_nan_as_numpy():
    f = sot.jit(extremes, backend="cuda")
    x = floats(4, 50, 60)
    f(x)
    f(x)
    x[7, 3] = x[0, 5] = x[49, 59] = np.nan
    x[:, 9] = np.inf
    x[:, 10] = -np.inf
    same(f(x), extremes(x))


def column_sum(x):
    return (x * 3.0).sum(axis=0)


def strided_sum(x):
    return (x * 3.0)[:, ::2].sum(axis=1)


def empty_max(x):
    return (x * 3.0).max(axis=0)


@pytest.mark.parametrize("fn,shape", [
    (strided_sum, (30, 200)),     # the reduced innermost loop steps over every other item
    (column_sum, (20000, 3)),     # three long sums: the host's (a thread each would be slower)
    (column_sum, (0, 4)),         # an empty axis: zeros, on the host
])
def test_layouts_numpy_sums_another_way_run_on_the_host(fn, shape):
    f = sot.jit(fn, backend="cuda")
    for k in range(3):
        x = floats(k, *shape)
        moved()
        got = f(x)
        same(got, fn(x))
        if k > 0 and shape[0] > 0:
            # x in; the value reduced out for the host (the host's result is a NumPy array)
            assert moved() == (1, 1, x.nbytes), k


def test_an_empty_maximum_raises_as_numpy():
    f = sot.jit(empty_max, backend="cuda")
    f(floats(1, 5, 4))
    f(floats(2, 5, 4))
    with pytest.raises(ValueError) as plain:
        empty_max(np.zeros((0, 4)))
    with pytest.raises(ValueError) as got:
        f(np.zeros((0, 4)))
    assert str(got.value) == str(plain.value)


# max and min over all axes (device_reductions.hpp): one row of the rows kernel, the NumPy scalar copied out; a
# zero or NaN result (whose bits depend on the order of comparisons) from the host.

def extremes(x):
    y = x * 3.0 - 1.0
    return y.max(), np.min(y), np.amax(np.abs(y)), y.min() * 2.0


def zero_extremes(x):
    y = np.minimum(x, 0.0) * -1.0  # (-0.0 where x > 0: its min is a zero, of a sign the order may decide)
    return y.min(), np.maximum(x, 0.0).min()


def bits(values):
    return [(type(v), np.asarray(v).tobytes()) for v in values]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("shape", [(5000,), (64, 33), (2, 3, 100)])
def test_max_and_min_over_all_axes_on_the_device_are_numpys(dtype, shape):
    f = sot.jit(extremes, backend="cuda")
    f(floats(0, *shape, dtype=dtype))
    for k in range(3):
        x = floats(1 + k, *shape, dtype=dtype)
        moved()
        assert bits(f(x)) == bits(extremes(x)), k
        assert moved()[:2] == (1, 0), k  # (the operand in; four scalars out, no array)
    x = floats(9, *shape, dtype=dtype)
    x.flat[7] = np.nan
    assert bits(f(x)) == bits(extremes(x))  # (NaN: from the host)


def test_zero_and_nan_extremes_come_from_the_host():
    f = sot.jit(zero_extremes, backend="cuda")
    x = np.abs(floats(3, 1000)) + 1.0
    f(x)
    for k in range(2):
        x = np.abs(floats(4 + k, 1000)) + 1.0
        x[::7] = -x[::7]
        moved()
        assert bits(f(x)) == bits(zero_extremes(x)), k
        assert moved()[:2] == (1, 2), k  # (each zero result: its operand copied out for NumPy)


def shrink_until(x, tol):
    n = 0
    while np.abs(x).max() > tol:
        x = x * 0.5
        n += 1
    return x, n


def test_a_while_loop_on_a_max_copies_no_array_per_step():
    f = sot.jit(shrink_until, backend="cuda")
    f(floats(5, 4096), 1e-3)
    for k in range(2):
        x = floats(6 + k, 4096)
        moved()
        G.cuda_simulated_counts(reset=True)
        got, plain = f(x, 1e-3), shrink_until(x, 1e-3)
        assert got[1] == plain[1] > 10 and np.array_equal(got[0], plain[0]), k
        assert moved()[:2] == (1, 1), k  # (before: the array out every step, for NumPy's max)
        # (the max copied out each step, the flags read at every 32nd read and at the end)
        assert CUDA_REAL or G.cuda_simulated_counts()["synchronizations"] == plain[1] // 32 + 1, k


def fills(x):
    y = x + 1.0
    return np.full_like(y, 0.25) + y.copy(), np.zeros_like(y) - 1.0


def integer_sums(x):
    y = x * 3
    return y.sum(), y.max(axis=0), y.min(axis=1), (y > 0).sum(axis=1)


@pytest.mark.skipif(not G.nvrtc_version()[:1].isdigit(), reason="NVRTC not available")
def test_the_kernels_compile_for_the_gpu_without_spills():
    # the backend's own kernels (no fused group lowers them): reductions along an axis and over all axes, copies
    # and fills (device_creation.hpp)
    floating = (np.float64, np.float32)
    for fn, shape, dtypes in ((per_plane, (3, 50, 7), floating), (extremes, (40, 9), floating), (fills, (300,), floating),
                              (integer_sums, (30, 40), (np.int64, np.int32, np.uint8, np.int16))):
        f = sot.jit(fn, backend="cuda")
        for dtype in dtypes:
            for k in range(3):
                x = floats(k, *shape, dtype=dtype) if dtype in floating else \
                    np.random.default_rng(k).integers(-100, 100, shape).astype(dtype)
                f(x)
    sources = {name: src for name, src in G.cuda_own_kernel_sources() if name.split("_")[0] in
               ("axis", "all", "rows", "fill", "copy")}
    assert {"axis_sum_float64_r3", "axis_max_float64_r2", "axis_mean_float32_r3", "all_max_float64_r2",
            "all_min_float32_r2", "fill_float64_1", "fill_float32_1", "copy_float64_1", "all_sum_int32_r2",
            "axis_max_uint8_r2", "rows_min_int16_r2", "rows_sum_bool_r2"} <= set(sources), sorted(sources)
    for name, src in sources.items():
        out = G.cuda_compile(src)
        assert out["ok"], out["error"] + src
        assert out["spill_bytes"] == 0 and out["registers"] > 0, out["log"]
        entry = "_rows(" if name.split("_")[0] in ("axis", "all", "rows") else "_flat("
        assert f".entry {name}{entry}" in out["ptx"], name
