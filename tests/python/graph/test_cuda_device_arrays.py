"""Device arrays in and out of a translated call, on the simulated device (issue 35, item 2): the caller's device
arrays (the backend's own DeviceArray, or any object with ``__cuda_array_interface__``: here a small class over
simulated memory, as CuPy's arrays are over real memory) are used in place and give device results; host arrays
give host results unless the call asks for device ones (``device_results=True``). What moves between the host and
the device is counted (``cuda_transfer_counts``): device arrays in and out move nothing."""

import os
import shutil

import numpy as np
import pytest
from harness import warned

import sot
from sot import capture as cap

G = sot._sot.graph
# On a GPU (tests/device/cuda_check.sh sets SOT_CUDA_REAL=1) the same tests run on the real device.
REAL = os.environ.get("SOT_CUDA_REAL") == "1"
pytestmark = [pytest.mark.skipif(shutil.which("c++") is None and not REAL,
                                 reason="no C++ compiler for the simulated device"),
              pytest.mark.skipif(sot.config.backend != "cpu", reason="the same programs as the default run's"),
              pytest.mark.usefixtures("cuda_device")]


class Other:
    """Another library's device array: the interface over memory it holds (here a DeviceArray's), and a host copy
    through ``__array__`` as CuPy gives one through ``.get()``."""

    def __init__(self, inner, mask=None, strides=None):
        self.inner = inner
        self.mask = mask
        self.strides = strides

    @property
    def __cuda_array_interface__(self):
        cai = dict(self.inner.__cuda_array_interface__)
        if self.mask is not None:
            cai["mask"] = self.mask
        if self.strides is not None:
            cai["strides"] = self.strides
        return cai

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self.inner, dtype=dtype)


class DLPackOnly:
    """A device array known only through DLPack (as JAX's are): the capsule of the DeviceArray it wraps."""

    def __init__(self, inner, device=(2, 0)):
        self.inner = inner
        self.device = device

    def __dlpack__(self, stream=None):
        return self.inner.__dlpack__()

    def __dlpack_device__(self):
        return self.device

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self.inner, dtype=dtype)


def chain(a, b):
    return (a * 2.0 + b) / 3.0 - np.sqrt(np.abs(b))


def heat(u, steps):
    for _ in range(steps):
        u[1:-1] = u[1:-1] + 0.1 * (u[2:] - 2.0 * u[1:-1] + u[:-2])
    return u


def floats(seed, *shape, dtype=np.float64):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def moved():
    """What moved since the last call (arrays and bytes each way), the counts reset."""
    c = G.cuda_transfer_counts(reset=True)
    return c["arrays_in"], c["arrays_out"]


@pytest.mark.parametrize("shape,dtype", [((300,), np.float64), ((40, 70), np.float64), ((500,), np.float32)])
def test_device_arrays_in_give_device_arrays_out_and_move_nothing(shape, dtype):
    f = sot.jit(chain, backend="cuda")
    for k in range(4):  # (the first run of a group is the host's: it copies its inputs out once)
        a, b = floats(k, *shape, dtype=dtype), floats(k + 10, *shape, dtype=dtype)
        da, db = sot.to_device(a), sot.to_device(b)
        moved()
        out = f(da, db)
        assert type(out) is sot.DeviceArray and out.shape == shape and out.dtype == dtype
        if k >= 1:
            assert moved() == (0, 0), k
        assert np.array_equal(np.asarray(out), chain(a, b)), k
        # the inputs are unchanged
        assert np.array_equal(np.asarray(da), a) and np.array_equal(np.asarray(db), b)
    assert cap.stats(chain)["hits"] >= 2


def test_the_report_says_where_values_lived():
    from sot.report import plan_lines

    a, b = floats(1, 300), floats(2, 300)
    da, db = sot.to_device(a), sot.to_device(b)
    e = sot.explain(sot.jit(chain, backend="cuda"), da, db)
    compiled = e.graphs[0]["compiled"]
    for _ in range(2):
        assert type(compiled(da, db)) is sot.DeviceArray
    line = next(t for t in plan_lines(compiled.plan()) if t.startswith("on the device:"))
    assert "3 runs copied" in line and "6 of the caller's device arrays used in place" in line, line
    assert "3 results handed back on the device" in line, line
    host = sot.explain(sot.jit(chain, backend="cuda"), a, b).graphs[0]["compiled"]
    line = next(t for t in plan_lines(host.plan()) if t.startswith("on the device:"))
    assert "used in place" not in line and "handed back" not in line, line


def test_results_stay_on_the_device_from_call_to_call():
    f = sot.jit(heat, backend="cuda")
    for k, (n, steps) in enumerate([(4096, 20), (4096, 37), (1000, 5)]):
        u = floats(k, n)
        du = sot.to_device(u)
        f(sot.to_device(u.copy()), steps)  # (a first run of this shape)
        moved()
        out = f(du, steps)
        out2 = f(out, steps)
        assert moved() == (0, 0), k
        assert out is du and out2 is du  # (the caller's array, updated in place, as plain returns it)
        assert np.allclose(np.asarray(du), heat(heat(u.copy(), steps), steps)), k


def test_other_device_arrays_are_taken_in_place_and_come_back_whole():
    def scale_and_keep(x, y):
        z = x * 2.0 + y
        return x, z

    f = sot.jit(scale_and_keep, backend="cuda")
    for k in range(3):
        a, b = floats(k, 256), floats(k + 1, 256)
        x, y = Other(sot.to_device(a)), Other(sot.to_device(b))
        moved()
        got_x, z = f(x, y)
        assert got_x is x  # (the caller's own array)
        assert type(z) is sot.DeviceArray
        if k >= 1:
            assert moved() == (0, 0), k
        assert np.array_equal(np.asarray(z), a * 2.0 + b)


def test_device_results_asked_for_host_inputs():
    f = sot.jit(chain, backend="cuda", device_results=True)
    g = sot.jit(chain, backend="cuda")
    for k in range(3):
        a, b = floats(k, 2000), floats(k + 1, 2000)
        moved()
        out = f(a, b)
        assert type(out) is sot.DeviceArray
        if k >= 1:
            assert moved() == (2, 0), k  # (each input in once; nothing out)
        assert np.array_equal(np.asarray(out), chain(a, b))
        # the same code without device_results: NumPy results
        plain = g(a, b)
        assert type(plain) is np.ndarray and np.array_equal(plain, chain(a, b))
    with pytest.raises(ValueError, match="device_results"):
        sot.jit(chain, backend="cpu", device_results=True)


def test_mixed_device_and_host_inputs():
    f = sot.jit(chain, backend="cuda")
    for k in range(3):
        a, b = floats(k, 40, 50), floats(k + 1, 50)
        out = f(sot.to_device(a), b)
        assert type(out) is sot.DeviceArray
        assert np.array_equal(np.asarray(out), chain(a, b))


def test_writes_into_device_inputs_reach_the_callers_memory():
    def update(x, v):
        x[1:4] = v * 2.0      # on the device
        x[[0, 5]] = -1.0      # an index array: on the host, written back
        return (x * 1.5).sum()

    f = sot.jit(update, backend="cuda")
    for k in range(3):
        a, v = floats(k, 16), floats(k + 1, 3)
        expected_x = a.copy()
        expected = update(expected_x, v)
        inner = sot.to_device(a)
        x = Other(inner)
        got = f(x, v)
        assert np.allclose(got, expected) and type(got) is type(expected), k
        assert np.array_equal(np.asarray(inner), expected_x), k


def test_a_floating_point_error_reruns_on_the_host_and_writes_once():
    def ratio(x, y):
        r = x / y
        x[0:2] = r[0:2]
        return r

    f = sot.jit(ratio, backend="cuda")
    for k in range(3):
        a, b = floats(k, 64), floats(k + 1, 64)
        b[7] = 0.0
        plain_x = a.copy()
        expected, plain_warnings = warned(lambda: ratio(plain_x, b))
        inner = sot.to_device(a)
        got, got_warnings = warned(lambda: f(Other(inner), sot.to_device(b)))
        assert got_warnings == plain_warnings, k
        assert np.array_equal(np.asarray(got), expected), k
        assert np.array_equal(np.asarray(inner), plain_x), k


def test_guards_tell_device_arrays_from_host_ones():
    f = sot.jit(chain, backend="cuda")
    a, b = floats(1, 100), floats(2, 100)
    for _ in range(2):
        assert type(f(sot.to_device(a), sot.to_device(b))) is sot.DeviceArray
        host = f(a, b)
        assert type(host) is np.ndarray and np.array_equal(host, chain(a, b))
        other_shape = f(sot.to_device(floats(3, 7, 9)), sot.to_device(floats(4, 7, 9)))
        assert other_shape.shape == (7, 9)
    assert cap.stats(chain)["hits"] >= 3


def plain_error(fn, *args):
    with pytest.raises(Exception) as caught:
        fn(*args)
    return type(caught.value), str(caught.value)


def through_numpy(a, b):
    return np.sqrt(np.abs(a)) + np.multiply(b, 2.0)  # (NumPy takes Other through __array__)


def test_device_arrays_the_graph_cannot_take_break_with_a_reason():
    a, b = floats(1, 100), floats(2, 100)
    masked = Other(sot.to_device(a), mask=Other(sot.to_device(np.ones(100, bool))))
    odd = Other(sot.to_device(a), strides=(3,))  # (not whole items)
    for x, reason in ((masked, "with a mask"), (odd, "not whole items")):
        # (the class has no operators: Python's own error, as plain)
        assert plain_error(sot.jit(chain, backend="cuda"), x, b) == plain_error(chain, x, b)
        e = sot.explain(sot.jit(through_numpy, backend="cuda"), x, b)
        assert type(e.value) is np.ndarray and np.array_equal(e.value, through_numpy(x, b))
        assert any(reason in r.reason for r in e.break_reasons), e.break_reasons


def test_other_backends_leave_device_arrays_to_python():
    a, b = floats(1, 100), floats(2, 100)
    x, y = Other(sot.to_device(a)), Other(sot.to_device(b))
    for backend in ("cpu", "numpy"):
        sot.reset()
        assert plain_error(sot.jit(chain, backend=backend), x, y) == plain_error(chain, x, y)
        got = sot.jit(through_numpy, backend=backend)(x, y)
        assert type(got) is np.ndarray and np.array_equal(got, through_numpy(x, y))
    sot.reset()
    got = sot.jit(through_numpy, backend="cuda")(x, y)
    assert type(got) is sot.DeviceArray and np.array_equal(np.asarray(got), through_numpy(x, y))


def test_dlpack_arrays_are_taken_in_place():
    def scale_and_keep(x, y):
        z = np.sqrt(np.abs(x)) * 2.0 + y
        return x, z

    f = sot.jit(scale_and_keep, backend="cuda")
    for k in range(3):
        a, b = floats(k, 7, 33), floats(k + 1, 7, 33)
        x, y = DLPackOnly(sot.to_device(a)), sot.to_device(b)
        moved()
        got_x, z = f(x, y)
        assert got_x is x and type(z) is sot.DeviceArray
        if k >= 1:
            assert moved() == (0, 0), k
        assert np.array_equal(np.asarray(z), np.sqrt(np.abs(a)) * 2.0 + b)
    # a DLPack array on the host is not the device's: the original code runs, NumPy through __array__
    e = sot.explain(sot.jit(through_numpy, backend="cuda"), DLPackOnly(sot.to_device(a), (1, 0)), b)
    assert type(e.value) is np.ndarray and np.array_equal(e.value, through_numpy(a, b))
    assert any("not on a CUDA device" in r.reason for r in e.break_reasons), e.break_reasons


def test_device_arrays_export_dlpack():
    a = floats(3, 5, 6)
    d = sot.to_device(a)
    assert d.__dlpack_device__() == (2, 0)
    view = DLPackOnly(d.T[1:4])  # (strided: the capsule says so)
    f = sot.jit(lambda x: x * 1.0, backend="cuda")
    assert np.array_equal(np.asarray(f(view)), a.T[1:4])


@pytest.mark.skipif(not REAL, reason="CuPy needs a GPU")
def test_cupy_arrays_in_give_cupy_arrays_out():
    cupy = pytest.importorskip("cupy")
    f = sot.jit(chain, backend="cuda")
    for k in range(3):
        a, b = cupy.asarray(floats(k, 1000)), cupy.asarray(floats(k + 1, 1000))
        moved()
        out = f(a, b)
        assert type(out) is cupy.ndarray
        if k >= 1:
            assert moved() == (0, 0), k
        assert bool(cupy.allclose(out, chain(a, b), rtol=1e-12, atol=0))


@pytest.mark.skipif(not REAL, reason="CuPy needs a GPU")
def test_cupy_code_is_captured_and_gives_cupys_types(monkeypatch):
    cupy = pytest.importorskip("cupy")
    monkeypatch.setitem(globals(), "cp", cupy)

    def total(x, y):
        return cp.sum(cp.sqrt(cp.abs(x)) * y), cp.maximum(x, y).mean(axis=1)

    f = sot.jit(total, backend="cuda")
    for k in range(3):
        x, y = cupy.asarray(floats(k, 64, 300)), cupy.asarray(floats(k + 1, 64, 300))
        want = total(x, y)
        moved()
        got = f(x, y)
        if k >= 1:
            assert moved() == (0, 0), k
        for g, w in zip(got, want):
            assert type(g) is type(w) and g.shape == w.shape and g.dtype == w.dtype, (g, w)
            assert bool(cupy.allclose(g, w, rtol=1e-12, atol=0))
    e = sot.explain(sot.jit(total, backend="cuda"), x, y)
    assert e.graph_break_count == 0, e.break_reasons


def test_outside_a_translated_function_a_device_array_is_the_numpy_array_it_stands_for():
    a, b = floats(5, 4, 6), floats(6, 6)
    d = sot.to_device(a)
    assert np.array_equal(d + b, a + b) and type(d + b) is np.ndarray
    assert np.array_equal(b - d, b - a) and np.array_equal(-d, -a) and np.array_equal(abs(d), abs(a))
    assert np.array_equal(d < 0, a < 0) and np.array_equal(d == d, a == a)
    assert np.array_equal(np.sin(d), np.sin(a)) and np.array_equal(np.concatenate([d, a]), np.concatenate([a, a]))
    assert d.sum() == a.sum() and np.array_equal(d.sum(axis=0), a.sum(axis=0)) and d.tolist() == a.tolist()
    assert [r.tolist() for r in d] == a.tolist() and str(d) == str(a)
    with pytest.raises(TypeError):
        hash(d)
    # views outside a run are copies: writing one leaves the device array as it was
    h = np.asarray(d)
    h[0, 0] = 99.0
    assert np.asarray(d)[0, 0] == a[0, 0]
    # writes reach the device: item assignment, in-place operators, out=, np.copyto, in-place methods
    f = sot.jit(lambda x: x * 1.0, backend="cuda")
    expected = a.copy()
    for write in (lambda x: x.__setitem__((1, slice(None)), 5.0), lambda x: x.__iadd__(1.5),
                  lambda x: np.multiply(x, 2.0, out=x), lambda x: np.copyto(x, x + 1.0),
                  lambda x: x.sort(axis=1), lambda x: x.__setitem__(slice(0, 2), sot.to_device(expected[2:4]))):
        f(d)  # (the device copy current)
        write(expected)
        write(d)
        assert np.array_equal(np.asarray(f(d)), expected)
        assert np.array_equal(np.asarray(d), expected)
    assert np.multiply(d, 2.0, out=d) is d


def fake_cupy():
    """A module named cupy whose functions take and give device arrays (computing on the host: what CuPy gives on
    the device), as CuPy's do."""
    import types

    module = types.ModuleType("cupy")
    for name in ("sqrt", "absolute", "exp", "add", "multiply", "maximum", "where", "sum", "mean", "tanh"):
        numpy_fn = getattr(np, name)
        setattr(module, name, (lambda fn: lambda *a, **k: sot.to_device(np.asarray(fn(*a, **k))))(numpy_fn))
    module.abs = module.absolute  # (one object, as in CuPy and NumPy)
    return module


def cupy_style(x, y):
    z = cp.sqrt(cp.abs(x)) * 2.0 + cp.exp(-y)
    return cp.where(z > 1.0, cp.tanh(z), z), cp.maximum(x, y).sum(axis=1)


cp = None  # (the module cupy_style calls: a fake CuPy, set by the test)


def test_cupy_calls_are_captured_as_numpys(monkeypatch):
    fake = fake_cupy()
    monkeypatch.setitem(__import__("sys").modules, "cupy", fake)
    monkeypatch.setitem(globals(), "cp", fake)
    f = sot.jit(cupy_style, backend="cuda")
    for k in range(3):
        a, b = floats(k, 30, 40), floats(k + 1, 30, 40)
        x, y = sot.to_device(a), sot.to_device(b)
        want = [np.asarray(w) for w in cupy_style(x, y)]
        moved()
        got = f(x, y)
        if k >= 1:
            assert moved() == (0, 0), k
        assert all(type(g) is sot.DeviceArray for g in got)
        for g, w in zip(got, want):
            assert np.allclose(np.asarray(g), w, rtol=1e-12, atol=0), k
    e = sot.explain(sot.jit(cupy_style, backend="cuda"), x, y)
    assert e.graph_break_count == 0 and not e.fallbacks, (e.break_reasons, e.fallbacks)
    assert e.op_count >= 10  # (every call captured: sqrt, abs, exp, where, tanh, maximum, sum, ...)
    # on another backend the same calls are CuPy's own
    sot.reset()
    got = sot.jit(cupy_style, backend="cpu")(x, y)
    assert all(np.allclose(np.asarray(g), np.asarray(w)) for g, w in zip(got, cupy_style(x, y)))


def dead_sum(p):
    total = np.exp(p).sum()  # noqa: F841 - nothing reads it: kept for its warnings


def test_a_reduction_nothing_reads_runs_on_the_host_with_its_warnings():
    """(the fuzzer's device mode found it: the all-axes sum's kernel had nowhere to store its result)"""
    f = sot.jit(dead_sum, backend="cuda")
    for a in [np.array([0]), np.array([1, 2]), np.array([800.0]), np.zeros((0, 3))]:
        got, got_w = warned(lambda: f(sot.to_device(a)))
        plain, plain_w = warned(lambda: dead_sum(a))
        assert got is plain is None and got_w == plain_w, a


def spread_then_step(p0, p3):
    v6 = p3.std()  # noqa: F841 - a host step on the caller's device array
    for _ in list(range(p0)):  # (a graph break: the steps are a second graph, run in its own residency)
        p3 -= np.sqrt(np.abs(p3)) * 0.25  # (exact ops: the device's are NumPy's bit for bit)


def test_a_device_array_a_host_step_read_stays_coherent_in_the_next_run():
    """(the fuzzer's device mode found it: the block stayed marked as kept coherent by the first run's residency,
    so the second run never marked its device copy stale after a host step wrote the host copy)"""
    f = sot.jit(spread_then_step, backend="cuda")
    for k in range(4):
        a = floats(k, 5)
        d = sot.to_device(a)
        f(3, d)
        spread_then_step(3, a)
        assert np.array_equal(np.asarray(d), a), k
