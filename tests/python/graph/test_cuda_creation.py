"""Arrays made on the device from a device array (graph/backends/cuda/device_creation.hpp), on the simulated device:
``x.copy()``, ``np.copy``, ``np.zeros_like``, ``empty_like``, ``ones_like``, ``full_like`` and ``np.roll`` of a value
the device holds make a new device array, as NumPy's (values bit for bit, dtype, shape, C order), and nothing is copied out for
them. Before, each such step copied its operand out and the new array in: a Jacobi loop (``new = u.copy()`` a step)
moved two arrays each way per step. Layouts NumPy's order "K" keeps (a transposed operand), keyword arguments and
fill values the kernel cannot take run on the host, as before."""

import shutil

import numpy as np
import pytest

from harness import CUDA_REAL

import sot

G = sot._sot.graph
pytestmark = [pytest.mark.skipif(shutil.which("c++") is None, reason="no C++ compiler for the simulated device"),
              pytest.mark.skipif(sot.config.backend != "cpu", reason="the same programs as the default run's"),
              pytest.mark.usefixtures("cuda_device")]


def data(seed, shape, dtype):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return (rng.standard_normal(shape) * 1e3).astype(dtype)
    return rng.integers(-1000, 1000, shape).astype(dtype)


def moved():
    c = G.cuda_transfer_counts(reset=True)
    return c["arrays_in"], c["arrays_out"]


def same(got, plain):
    assert type(got) is type(plain)
    if isinstance(plain, tuple):
        assert len(got) == len(plain)
        for g, p in zip(got, plain):
            same(g, p)
        return
    if not isinstance(plain, np.ndarray):
        assert got == plain
        return
    assert got.dtype == plain.dtype and got.shape == plain.shape, (got.dtype, plain.dtype, got.shape, plain.shape)
    assert got.flags.c_contiguous == plain.flags.c_contiguous and got.strides == plain.strides
    assert np.array_equal(got, plain, equal_nan=True)


def made_from(x):
    y = x * 2  # (a device array: the group's result)
    a = y.copy()
    b = np.copy(y)
    c = np.zeros_like(y)
    d = np.ones_like(y)
    e = np.full_like(y, 0.1)
    f = np.full_like(y, 7)
    a[:2] = y[-2:]  # (the copies are new arrays: writing one changes no other)
    return (a + 0, b + 0, c + 0, d + 0, e + 0, f + 0, y + 0, np.empty_like(y).shape)


def made_from_ints(x):
    y = x * 2
    a = y.copy()
    z = np.zeros_like(y)
    return a + 1, z + 1, y + 1


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("shape", [(1000,), (40, 33), (3, 4, 50)])
def test_copies_and_fills_of_device_arrays_are_numpys_and_stay_on_the_device(dtype, shape):
    f = sot.jit(made_from, backend="cuda")
    f(data(0, shape, dtype))  # (the first run of each group is the host's)
    for k in range(3):
        x = data(1 + k, shape, dtype)
        moved()
        before = G.cuda_simulated_counts()["launches"]
        same(f(x), made_from(x))
        # the operand in, the seven arrays returned out; nothing else either way
        assert moved() == (1, 7), k
        assert CUDA_REAL or G.cuda_simulated_counts()["launches"] > before


def test_integer_copies_and_zeros_on_the_device():
    f = sot.jit(made_from_ints, backend="cuda")
    f(data(0, (500,), np.int64))
    for k in range(2):
        x = data(1 + k, (500,), np.int64)
        moved()
        same(f(x), made_from_ints(x))
        assert moved() == (1, 3), k


def views_made_from(x):
    t = (x + 1.0).T  # a transposed view: order "K" keeps its layout (F order), ndarray.copy gives C order
    r = (x + 1.0)[::-1]  # reversed rows: order "K" gives C order
    return t.copy(), np.copy(t), np.zeros_like(t), np.copy(r), np.ones_like(r), np.full_like(x, 2, dtype=np.int32)


def test_layouts_and_keywords_the_device_does_not_make_run_on_the_host_as_numpy():
    f = sot.jit(views_made_from, backend="cuda")
    x = data(3, (30, 17), np.float64)
    f(x)
    for k in range(2):
        x = data(4 + k, (30 + k, 17), np.float64)
        got, plain = f(x), views_made_from(x)
        same(got, plain)
        assert not got[1].flags.c_contiguous and got[1].flags.f_contiguous  # (NumPy's layout, not C)


def test_a_fill_value_the_kernel_cannot_take_runs_on_the_host():
    def fills(x):
        y = x + 0.0
        return np.full_like(y, 2**60 + 1), np.full_like(y, True), np.full_like(y, np.float32(0.1))

    f = sot.jit(fills, backend="cuda")
    x = data(5, (64,), np.float32)
    f(x)
    same(f(x), fills(x))


def rolled(x, k):
    y = x * 2.0
    return (np.roll(y, 3), np.roll(y, -1, axis=0), np.roll(y, k, axis=-1), np.roll(y, 0), np.roll(y, 10**9 + 7),
            np.roll(y, 2, 0), y + 0)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
@pytest.mark.parametrize("shape", [(1000,), (40, 33), (3, 4, 50), (1,)])
def test_rolls_of_device_arrays_are_numpys_and_stay_on_the_device(dtype, shape):
    f = sot.jit(rolled, backend="cuda")
    for shift in (5, -3, 1001):  # (a new shift is a new graph: its first run is the host's)
        f(data(0, shape, dtype), shift)
        for k in range(2):
            x = data(1 + k, shape, dtype)
            moved()
            same(f(x, shift), rolled(x, shift))
            assert moved() == (1, 7), (shift, k)


def rolled_on_host(x):
    y = x * 2.0
    t = y.T  # (order "K": F order, the host's)
    return np.roll(t, 1, axis=0), np.roll(y, (1, 2), axis=(0, 1)), np.roll(y[:, ::2], 2), np.roll(y, 1.0)


def outcome(fn, *args):
    try:
        return fn(*args)
    except Exception as e:  # (NumPy 2.x rolls by a float shift; 1.24 raises TypeError)
        return type(e)


def test_rolls_the_device_does_not_make_run_on_the_host_as_numpy():
    f = sot.jit(rolled_on_host, backend="cuda")
    for k in range(3):
        x = data(4 + k, (30 + k % 2, 17), np.float64)
        got, plain = outcome(f, x), outcome(rolled_on_host, x)
        if isinstance(plain, type):
            assert got is plain
        else:
            same(got, plain)
    with pytest.raises(np.exceptions.AxisError if hasattr(np, "exceptions") else np.AxisError):
        sot.jit(lambda x: np.roll(x * 2.0, 1, axis=2), backend="cuda")(x)


def life(u, steps):
    for _ in range(steps):
        u = u + 0.1 * (np.roll(u, 1, axis=0) + np.roll(u, -1, axis=0) + np.roll(u, 1, axis=1)
                       + np.roll(u, -1, axis=1) - 4.0 * u)
    return u


@pytest.mark.parametrize("steps", [30, 31])
def test_a_stencil_of_rolls_moves_its_array_once_each_way(steps):
    f = sot.jit(life, backend="cuda")
    f(data(8, (64, 48), np.float64), steps)
    for k in range(2):
        u = data(9 + k, (64, 48), np.float64)
        moved()
        same(f(u, steps), life(u, steps))
        assert moved() == (1, 1), k


def jacobi(u, steps):
    for _ in range(steps):
        new = u.copy()
        new[1:-1] = 0.5 * (u[2:] + u[:-2])
        u = new
    return u


@pytest.mark.parametrize("steps", [40, 41])
def test_a_jacobi_loop_copying_its_array_each_step_moves_it_once_each_way(steps):
    f = sot.jit(jacobi, backend="cuda")
    f(data(6, (2048,), np.float64), steps)
    for k in range(2):
        u = data(7 + k, (2048,), np.float64)
        moved()
        G.cuda_simulated_counts(reset=True)
        same(f(u, steps), jacobi(u, steps))
        assert moved() == (1, 1), k
        # the copy and the slice's group, two launches a step (a new array a step: replayed in a cycle of two)
        assert CUDA_REAL or G.cuda_simulated_counts()["launches"] == 3 * steps, k
    plan = sot.explain(sot.jit(jacobi, backend="cuda"), data(9, (2048,), np.float64), steps).graphs[0]
    plan["compiled"](data(10, (2048,), np.float64))
    assert plan["compiled"].plan()["resident"]["replayed_steps"] == steps - 4


def jacobi_last(u, steps):
    for _ in range(steps):
        new = u.copy()
        new[1:-1] = 0.5 * (u[2:] + u[:-2])
        u = new
    return new  # (a last value of the loop: the carried array, the same object)


def jacobi_change(u, steps):
    for _ in range(steps):
        new = u.copy()
        new[1:-1] = 0.5 * (u[2:] + u[:-2])
        change = new - u  # (a last value that is no carried one: its steps are not replayed)
        u = new
    return u, change


@pytest.mark.parametrize("fn,replayed", [(jacobi_last, True), (jacobi_change, False)])
@pytest.mark.parametrize("steps", [36, 37])
def test_a_loops_last_values_after_replayed_steps(fn, replayed, steps):
    compiled = sot.explain(sot.jit(fn, backend="cuda"), data(20, (512,), np.float64), steps).graphs[0]["compiled"]
    for k in range(3):
        u = data(21 + k, (512,), np.float64)
        same(compiled(u), fn(u, steps))
    assert compiled.plan()["resident"]["replayed_steps"] == (3 * (steps - 4) if replayed else 0)


# Numbers set into a float device array's basic slice or element (DeviceArray.__setitem__): the fill kernel on the
# device, any strides; before, each such step copied the array out and back in.

def heat_bounded(u, steps):
    for _ in range(steps):
        u[1:-1] = u[1:-1] + 0.1 * (u[2:] - 2.0 * u[1:-1] + u[:-2])
        u[0] = 1.0  # (boundary values set every step)
        u[-1] = 0
    return u


def plate(u, steps, edge):
    for _ in range(steps):
        u[1:-1, 1:-1] = 0.25 * (u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:] + u[1:-1, :-2])
        u[:, 0] = edge  # (a column: a strided view)
        u[0, 2:5] = 0.1
    return u


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("steps", [36, 37])
def test_boundary_values_set_each_step_stay_on_the_device(dtype, steps):
    f = sot.jit(heat_bounded, backend="cuda")
    f(data(30, (1000,), dtype), steps)
    for k in range(2):
        u = data(31 + k, (1000,), dtype)
        plain = u.copy()
        moved()
        got = f(u, steps)
        assert moved() == (1, 1), k  # (before: the array out and in at each of the two stores, every step)
        assert got is u and np.array_equal(u, heat_bounded(plain, steps)), k
    compiled = sot.explain(sot.jit(heat_bounded, backend="cuda"), data(40, (1000,), dtype), steps).graphs[0]["compiled"]
    compiled(data(41, (1000,), dtype))
    assert compiled.plan()["resident"]["replayed_steps"] == steps - 3  # (the stores' launches replay too)


@pytest.mark.parametrize("edge", [2.5, np.float64(-1.25), np.float32(0.1), 3])
def test_numbers_into_strided_views_and_elements(edge):
    f = sot.jit(plate, backend="cuda")
    f(data(50, (40, 30), np.float32), 5, edge)
    for k in range(2):
        u = data(51 + k, (40, 30), np.float32)
        plain = u.copy()
        moved()
        assert f(u, 5, edge) is u
        assert moved() == (1, 1), k
        assert np.array_equal(u, plate(plain, 5, edge)), k


def int_store(a, steps):
    for _ in range(steps):
        a[1:] = a[1:] + a[:-1]
        a[0] = 7  # (an int array: NumPy's casts, on the host)
    return a


def test_numbers_into_integer_arrays_run_on_the_host_as_numpy():
    f = sot.jit(int_store, backend="cuda")
    a = data(60, (100,), np.int64)
    f(a.copy(), 4)
    for k in range(2):
        a = data(61 + k, (100,), np.int64)
        plain = a.copy()
        assert np.array_equal(f(a, 4), int_store(plain, 4)), k
