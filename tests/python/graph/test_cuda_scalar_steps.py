"""Steps on NumPy scalars do not stop the device (graph/exec/program.cpp, run_step): a ufunc or an operator of Python
numbers and NumPy floating scalars (``sqrt(err)``, ``err > tol``, err a full reduction's result read from the device) runs
under ``errstate(all="raise")``; where NumPy flags nothing it changed nothing and warned of nothing, so the run keeps
its optimism (one flag word for the run, no wait per group). Where NumPy flags an error, the step runs again as a
host step with the caller's error state: its warning once, or its exception, as plain NumPy. On the simulated
device; every case compares with plain NumPy."""

import shutil

import numpy as np
import pytest
from harness import CUDA_REAL, warned

import sot

G = sot._sot.graph
pytestmark = [pytest.mark.skipif(shutil.which("c++") is None, reason="no C++ compiler for the simulated device"),
              pytest.mark.skipif(sot.config.backend != "cpu", reason="the same programs as the default run's"),
              pytest.mark.usefixtures("cuda_device")]


def data(seed, n):
    return np.random.default_rng(seed).standard_normal(n)


def jacobi_until(u0, tol, most):
    u = u0.copy()
    err = tol + 1.0
    it = 0
    while err > tol and it < most:
        new = u.copy()
        new[1:-1] = 0.5 * (u[2:] + u[:-2])
        err = np.sqrt(((new - u) ** 2).sum())
        u = new
        it += 1
    return u, it, err


@pytest.mark.parametrize("most", [60, 200])
def test_a_while_loop_reads_its_test_late_and_its_flags_in_batches(most):
    f = sot.jit(jacobi_until, backend="cuda")
    f(data(0, 4096), 1e-3, most)  # (the first call checks each group's dtypes on the host)
    for k in range(2):
        u0 = data(1 + k, 4096)
        G.cuda_simulated_counts(reset=True)
        G.cuda_transfer_counts(reset=True)
        got = f(u0, 1e-3, most)
        counts = G.cuda_simulated_counts()
        moved = G.cuda_transfer_counts(reset=True)
        # its array in once and out once (the copy a step on the device: test_cuda_creation.py)
        assert (moved["arrays_in"], moved["arrays_out"]) == (1, 1), moved
        plain = jacobi_until(u0, 1e-3, most)
        assert np.array_equal(got[0], plain[0]) and got[1] == plain[1] == most and got[2] == plain[2], k
        assert type(got[2]) is type(plain[2]) is np.float64
        # the test's sum queued out each step (read late, the next step run ahead: test_cuda_late_scalars.py), the
        # flag word read at every 32nd such read and at the end: before stop 57, two waits and three reads a step,
        # each group then reading a flag word of its own; before stop 60, a plain copy out of the sum each step
        assert CUDA_REAL or counts["synchronizations"] == most // 32 + 1, counts
        assert CUDA_REAL or counts["staged_to_host"] == most, counts
        # (the flag word; the first step's sum, read at once: that step runs before the loop op; the result)
        assert CUDA_REAL or counts["to_host"] == most // 32 + 3, counts
        assert CUDA_REAL or counts["zeroed"] == 1, counts  # (the run's one flag word; before, one a group a step)


def scaled(x, d):
    s = (x * 2.0).sum()
    r = s / d  # a NumPy scalar divided by zero where d is 0.0: NumPy warns (or raises)
    return x * r + 1.0, r > 0


@pytest.mark.parametrize("state", [None, "ignore", "raise"])
def test_a_scalar_step_that_flags_an_error_warns_or_raises_as_numpy(state):
    f = sot.jit(scaled, backend="cuda")
    x = np.abs(data(3, 300)) + 0.5
    f(x, 2.0)
    f(x, 2.0)
    for d in (4.0, 0.0, 0.0):
        with np.errstate(divide=state or "warn"):
            if state == "raise" and d == 0.0:
                with pytest.raises(FloatingPointError):
                    f(x, d)
                with pytest.raises(FloatingPointError):
                    scaled(x, d)
                continue
            got, got_w = warned(lambda: f(x, d))
            plain, plain_w = warned(lambda: scaled(x, d))
        assert got_w == plain_w, (d, got_w, plain_w)
        assert (d == 0.0 and state is None) == (plain_w != [])
        assert np.array_equal(got[0], plain[0]) and got[1] == plain[1] and type(got[1]) is type(plain[1])


def until_divided(u0, w, most):
    u = u0.copy()
    err = 1.0
    it = 0
    while err > 1e-300 and it < most:
        new = u / w  # (w holds a zero from the start where the test asks: every step divides by it)
        err = np.abs(new - u).sum()
        u = new * 0.5
        it += 1
    return u, it


@pytest.mark.parametrize("state", ["warn", "raise"])
def test_an_error_seen_only_at_a_batched_flag_read_runs_the_call_again_on_the_host(state):
    """The flags of a while loop's steps are read every 32 steps: a division by zero at the first step is seen later,
    and the call runs again on the host from the caller's untouched arrays: NumPy's warning once, or its exception."""
    f = sot.jit(until_divided, backend="cuda")
    u0, w = data(7, 500), np.abs(data(8, 500)) + 1.0
    f(u0, w, 80)
    f(u0, w, 80)
    w0 = w.copy()
    w0[123] = 0.0
    for k in range(2):
        with np.errstate(divide=state, invalid="ignore"):
            if state == "raise":
                with pytest.raises(FloatingPointError) as got:
                    f(u0, w0, 80)
                with pytest.raises(FloatingPointError) as plain:
                    until_divided(u0, w0, 80)
                assert str(got.value) == str(plain.value), k
                continue
            got, got_w = warned(lambda: f(u0, w0, 80))
            plain, plain_w = warned(lambda: until_divided(u0, w0, 80))
        assert got_w == plain_w != [], k
        assert got[1] == plain[1] and np.array_equal(got[0], plain[0], equal_nan=True), k


# One element of an array only the device holds (DeviceArray.__getitem__ with a full integer index): its bytes are
# copied out as NumPy's scalar, not the array. Before, `u[0] = u[-2]` each step copied the whole array out twice.
def burgers(u0, nu, steps):
    u = u0.copy()
    for _ in range(steps):
        un = u.copy()
        u[1:-1] = un[1:-1] - 0.01 * un[1:-1] * (un[1:-1] - un[:-2]) + nu * (un[2:] - 2 * un[1:-1] + un[:-2])
        u[0] = u[-2]  # (periodic ends: an element of the device's array into another)
        u[-1] = u[1]
    return u


@pytest.mark.parametrize("steps", [30, 31])
def test_elements_read_in_a_loop_copy_no_array_out(steps):
    f = sot.jit(burgers, backend="cuda")
    f(data(1, 300), 0.01, steps)
    for k in range(2):
        u = data(2 + k, 300)
        G.cuda_transfer_counts(reset=True)
        G.cuda_simulated_counts(reset=True)
        got = f(u, 0.01, steps)
        want = burgers(u, 0.01, steps)
        assert np.isfinite(want).all() and np.array_equal(got, want), k
        c = G.cuda_transfer_counts()
        assert (c["arrays_in"], c["arrays_out"]) == (1, 1), k
        if not CUDA_REAL:  # (two elements a step, 8 bytes each; the array once at the end)
            assert G.cuda_simulated_counts()["to_host_bytes"] <= 2 * steps * 8 + 300 * 8 + 64 * 4, k


def elements(a, b, i):
    x = a * 2  # (device values: a kernel's results)
    y = b + 1
    z = x > 0
    return x[i], x[-1], y[1, -2], y[i % 3, 0], z[i], x[i] + y[0, 0], int(y[2, 3]), float(x[0])


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.int64])
def test_elements_are_numpys_scalars(dtype):
    f = sot.jit(elements, backend="cuda")
    for k in range(3):
        a = (data(10 + k, 40) * 100).astype(dtype)
        b = (data(20 + k, 12) * 100).astype(dtype).reshape(3, 4)
        got, plain = f(a, b, 5 + k), elements(a, b, 5 + k)
        assert [type(g) for g in got] == [type(p) for p in plain], k
        assert got == plain, k


def out_of_range(a, i):
    x = a * 2.0
    return x[i]


def test_an_index_out_of_range_raises_as_numpy():
    f = sot.jit(out_of_range, backend="cuda")
    a = data(30, 10)
    assert f(a, 3) == out_of_range(a, 3)
    for i in (10, -11):
        with pytest.raises(IndexError) as plain:
            out_of_range(a, i)
        with pytest.raises(IndexError) as got:
            f(a, i)
        assert str(got.value) == str(plain.value)
