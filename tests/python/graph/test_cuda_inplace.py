"""In-place arithmetic on device arrays (graph/backends/cuda/device_inplace.hpp), on the simulated device: ``x += y``,
``-=``, ``*=`` and ``/=`` where x is a float64 or float32 device array or view and y a device array of its dtype
(broadcast, or x itself) or a Python number run as one kernel on the device, as NumPy computes them (values bit for
bit, the caller's arrays changed as plain changes them). Before, each such step copied its array out and back in: the
corpus' ``heat_2d`` (``u[1:-1, 1:-1] += alpha * lap``) moved 51 arrays in and 101 out per call of 50 steps, and a
leapfrog of ``v += dt * a; x += dt * v`` 80 each way. Floating-point errors warn or raise as NumPy's (a flagged run
reruns on the host; after the run left optimism the kernel writes a new block first, so the host takes the step on
an unchanged array); overlapping operands, other dtypes and read-only arrays run on the host, as before."""

import shutil

import numpy as np
import pytest
from harness import CUDA_REAL, warned

import sot

G = sot._sot.graph
pytestmark = [pytest.mark.skipif(shutil.which("c++") is None and not CUDA_REAL,
                                 reason="no C++ compiler for the simulated device"),
              pytest.mark.skipif(sot.config.backend != "cpu", reason="the same programs as the default run's"),
              pytest.mark.usefixtures("cuda_device")]


def data(seed, shape, dtype=np.float64):
    return (np.random.default_rng(seed).standard_normal(shape) * 10).astype(dtype)


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
    if isinstance(plain, np.ndarray):
        assert got.dtype == plain.dtype and got.shape == plain.shape and got.strides == plain.strides
        assert np.array_equal(got, plain, equal_nan=True)
        return
    assert got == plain or (got != got and plain != plain)


def heat_2d(u0, alpha, steps):
    u = u0.copy()
    for _ in range(steps):
        lap = u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:] + u[1:-1, :-2] - 4.0 * u[1:-1, 1:-1]
        u[1:-1, 1:-1] += alpha * lap
    return u, u.mean()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("steps", [20, 21])
def test_a_slice_updated_in_place_each_step_moves_its_array_once_each_way(dtype, steps):
    f = sot.jit(heat_2d, backend="cuda")
    f(data(0, (40, 30), dtype), 0.1, steps)
    for k in range(2):
        u = data(1 + k, (40, 30), dtype)
        moved()
        same(f(u, 0.1, steps), heat_2d(u, 0.1, steps))
        assert moved() == (1, 1), k


def leapfrog(x, v, dt, steps):
    for _ in range(steps):
        v += dt * (x - x * x * x / 6.0)  # (arithmetic: bit for bit on any device; float32 sin is not)
        x += dt * v
        x *= 0.999
        v /= 1.0001
        v -= x * 1e-3
    return x, v


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("shape", [(1000,), (30, 17), (4, 5, 6)])
def test_whole_arrays_changed_in_place_are_numpys_and_the_callers(dtype, shape):
    f = sot.jit(leapfrog, backend="cuda")
    f(data(0, shape, dtype), data(1, shape, dtype), 0.01, 30)
    for k in range(2):
        x, v = data(2 + k, shape, dtype), data(4 + k, shape, dtype)
        px, pv = x.copy(), v.copy()
        moved()
        same(f(x, v, 0.01, 30), leapfrog(px, pv, 0.01, 30))
        assert np.array_equal(x, px) and np.array_equal(v, pv), k  # (the caller's arrays changed as plain)
        assert moved() == (2, 2), k


def views_in_place(a, row, c):
    t = a * 1.0
    t.T[1:, ::2] += row[: (t.shape[0] + 1) // 2]  # a transposed, strided view; a row broadcast down it
    t[::-1] -= t  # (a reversed view of t minus t: overlapping, the host's)
    s = t * 2.0
    s += s  # the very same array on both sides
    s[2:5] /= c  # a Python number
    s[0] *= 3  # an int
    return t, s


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_views_broadcasts_and_numbers_in_place(dtype):
    f = sot.jit(views_in_place, backend="cuda")
    for k in range(3):
        a, row = data(10 + k, (12, 9), dtype), data(20 + k, (11,), dtype)
        same(f(a, row, 2.5), views_in_place(a, row, 2.5))


def others_on_host(a, b, i, ro):
    t = a * 1.0
    t += b  # float32 into float64: NumPy casts; the host's
    j = i * 2
    j += 3  # an int array: the host's
    r = ro * 1.0
    r[1:] += r[:-1]  # overlapping operands
    u = a * 1.0
    u += 2**60  # an int a double does not hold
    return t, j, r, u


def test_other_dtypes_and_overlaps_run_on_the_host_as_numpy():
    f = sot.jit(others_on_host, backend="cuda")
    for k in range(3):
        a, b = data(30 + k, (50,)), data(31 + k, (50,), np.float32)
        i, ro = np.arange(50 + k)[:50], data(32 + k, (50,))
        same(f(a, b, i, ro), others_on_host(a, b, i, ro))


def divide_in_place(x, y):
    t = x * 1.0
    t /= y
    t += 1.0
    return t


def after_a_host_step(x, y):
    t = x * 1.0
    first = np.sort(x * 2.0)[0]  # (a host step on a device value: the run is no longer optimistic)
    t /= y  # (t only on the device: a flagged kernel must leave it unchanged for the host's step)
    return t, first


@pytest.mark.parametrize("fn", [divide_in_place, after_a_host_step])
def test_floating_point_errors_in_place_warn_and_raise_as_numpy(fn):
    f = sot.jit(fn, backend="cuda")
    x, y = data(40, (64,)), data(41, (64,))
    f(x, y)
    for k in range(2):
        x, y = data(42 + k, (64,)), data(44 + k, (64,))
        y[5 + k] = 0.0
        plain, plain_w = warned(lambda: fn(x, y))
        got, got_w = warned(lambda: f(x, y))
        assert got_w == plain_w and plain_w, k
        same(got, plain)
        with np.errstate(divide="raise"):
            with pytest.raises(FloatingPointError):
                fn(x, y)
            with pytest.raises(FloatingPointError):
                f(x, y)
    y = data(46, (64,))
    assert warned(lambda: f(x, y))[1] == []


def test_a_read_only_array_raises_as_numpy():
    def bump(a):
        a += 1.0
        return a

    f = sot.jit(bump, backend="cuda")
    for k in range(2):
        a = data(50 + k, (20,))
        a.setflags(write=False)
        with pytest.raises(ValueError) as plain:
            bump(a)
        with pytest.raises(ValueError) as got:
            f(a)
        assert str(got.value) == str(plain.value)
        assert np.array_equal(a, data(50 + k, (20,)))


def sgd(params, grads, lr):
    for name, p in params.items():  # (unrolled: each parameter updated once)
        p -= lr * grads[name]
    return sorted(params)


def test_a_callers_array_updated_once_outside_a_loop_stays_on_the_host():
    """Copying p in and out again would move two arrays where copying ``lr * g`` out moves one."""
    f = sot.jit(sgd, backend="cuda")
    shapes = {"w1": (8, 16), "b1": (16,), "w2": (16, 4)}
    for k in range(3):
        params = {n: data(60 + k, s) for n, s in shapes.items()}
        grads = {n: data(70 + k, s) for n, s in shapes.items()}
        plain = {n: p.copy() for n, p in params.items()}
        moved()
        assert f(params, grads, 0.1) == sgd(plain, grads, 0.1)
        assert all(np.array_equal(params[n], plain[n]) for n in shapes), k
        if k >= 1:
            assert moved() == (3, 3), k  # (each gradient in, each product out)


def pivot_columns(A):
    A = A.copy()
    n = A.shape[0]
    for k in range(n - 1):
        A[k + 1:, k] /= A[k, k]  # (a NumPy float64 scalar, read from the device)
        A[k + 1:, k + 1:] -= A[k + 1:, k:k + 1] * A[k, k + 1:]
    return A


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_numpy_scalars_scale_float64_columns_on_the_device(dtype):
    # x /= s with s a NumPy float64 scalar computes in float64 as with a Python float, so a float64 array's update
    # runs on the device; a float32 array meets a float64 scalar in float64 under NumPy 2 (in float32 under 1.x):
    # that update stays on the host
    f = sot.jit(pivot_columns, backend="cuda")
    A = (data(70, (12, 12)) + np.eye(12) * 100).astype(dtype)
    f(A)
    for k in range(2):
        A = (data(71 + k, (12, 12)) + np.eye(12) * 100).astype(dtype)
        moved()
        same(f(A), pivot_columns(A))
        if dtype == np.float64:
            assert moved() == (1, 1), k  # (before: the array out and in at every column)
