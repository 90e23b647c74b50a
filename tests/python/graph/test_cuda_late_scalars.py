"""A while loop's test read without a stall each step (graph/backends/cuda/late_scalars.hpp, loop_op.cpp's step_ahead):
in a while loop's body, a full reduction's float result is read late (its copy out queued, a mark after it), the scalar
steps on it (``np.sqrt(err)``, ``err > tol``) run when their value is needed, and the loop runs its next step before it
reads the tests, so the device has the next step's kernels while the host waits for the test. A step the loop never
reaches is dropped: before anything the caller could see (a host step, a write into an array it holds) the tests are
read first, and its late steps never run. On the simulated device, whose ``stalls`` count the waits for all the work
queued; every case compares with plain NumPy: values, exact types, warnings, exceptions, the caller's arrays."""

import shutil
import warnings

import numpy as np
import pytest
from harness import CUDA_REAL, warned
from test_cuda_scalar_steps import data, jacobi_until

import sot

G = sot._sot.graph
pytestmark = [pytest.mark.skipif(shutil.which("c++") is None, reason="no C++ compiler for the simulated device"),
              pytest.mark.skipif(sot.config.backend != "cpu", reason="the same programs as the default run's"),
              pytest.mark.usefixtures("cuda_device")]


def counted(call):
    G.cuda_simulated_counts(reset=True)
    G.cuda_transfer_counts(reset=True)
    result = call()
    moved = G.cuda_transfer_counts(reset=True)
    return result, G.cuda_simulated_counts(), (moved["arrays_in"], moved["arrays_out"])


@pytest.mark.parametrize("most", [60, 200])
def test_a_while_loops_test_is_read_while_the_next_step_runs(most):
    f = sot.jit(jacobi_until, backend="cuda")
    f(data(0, 4096), 1e-3, most)
    for k in range(2):
        u0 = data(1 + k, 4096)
        got, counts, moved = counted(lambda: f(u0, 1e-3, most))
        plain = jacobi_until(u0, 1e-3, most)
        assert np.array_equal(got[0], plain[0]) and got[1] == plain[1] == most and got[2] == plain[2], k
        assert type(got[2]) is type(plain[2]) is np.float64 and type(got[1]) is int
        assert moved == (1, 1), moved
        if CUDA_REAL:
            continue
        # each step's error queued out (one page-locked copy, one mark) and waited for while the next step's kernels
        # are queued; the host waits for all the work only when it reads the flag word (every 32nd read) and at the
        # end. Before: a stall every step (the test's copy out waited for everything queued).
        assert counts["staged_to_host"] == counts["mark_waits"] == most, counts
        assert counts["stalls"] <= most // 32 + 3, counts
        # (the step after the last one ran ahead and was dropped: its kernels are one step's)
        assert counts["launches"] <= (most + 1) * 5 + 6, counts


def converge(x, tol):
    n = 0
    s = np.sqrt((x * x).sum())
    while s > tol:
        x = x * 0.5
        s = np.sqrt((x * x).sum())
        n += 1
    return x, n, s


@pytest.mark.parametrize("n", [100, 3000])
def test_a_loop_that_ends_on_its_late_test_ends_where_numpy_ends(n):
    f = sot.jit(converge, backend="cuda")
    for k, tol in enumerate((1e-2, 1e-6, 5.0)):
        f(data(3, n), tol)  # (a translation for each tol: its first call checks each group on the host)
        x = data(4 + k, n)
        got, counts, _ = counted(lambda: f(x, tol))
        plain = converge(x, tol)
        assert np.array_equal(got[0], plain[0]) and got[1] == plain[1] and got[2] == plain[2], (k, got[1:], plain[1:])
        assert type(got[2]) is np.float64, k
        # (before: a stall each step)
        assert CUDA_REAL or counts["stalls"] <= plain[1] // 32 + 3, (k, counts)


def shrink_in_place(x, tol):
    n = 0
    s = (x * x).sum()
    while s > tol:
        x *= 0.5
        s = (x * x).sum()
        n += 1
    return n, s


def test_a_step_run_ahead_writes_no_array_of_the_callers():
    # (the step after the last would halve the caller's array once more: its tests are read before its write)
    f = sot.jit(shrink_in_place, backend="cuda")
    f(data(5, 500), 1e-3)
    for k, n in enumerate((500, 77)):
        x = data(6 + k, n)
        y = x.copy()
        got = f(x, 1e-3)
        plain = shrink_in_place(y, 1e-3)
        assert got == plain and type(got[1]) is np.float64, k
        assert np.array_equal(x, y), k


def past_the_end(x, tol):
    n = 0
    s = np.sqrt((x * x).sum())
    while s > tol:
        x = x * 0.5
        s = np.sqrt((x * x).sum())
        n += 1
        first = x[n]  # (out of range on the step after the last: plain never runs it)
    return x, n, first


def test_a_step_run_ahead_raises_nothing_where_the_loop_ends():
    f = sot.jit(past_the_end, backend="cuda")
    for k in range(3):
        x = data(7 + k, 16) * 1e-3
        x[0] = 0.02 * 2.0 ** k  # (the loop ends before n reaches 16: 5 + k steps)
        got, plain = f(x, 1e-3), past_the_end(x, 1e-3)
        assert np.array_equal(got[0], plain[0]) and got[1:] == plain[1:], k
        assert type(got[2]) is type(plain[2]) is np.float64


def past_the_end_on_the_host(x, tol):
    n = 0
    s = (x * x).sum()
    while s > tol:
        x = x * 0.5
        s = (x * x).sum()
        n += 1
        m = np.median(x[: 6 - n])  # (no items on the step after the last: NumPy warns of an empty slice)
    return n, s, m


def test_a_step_run_ahead_reads_its_tests_before_a_host_step():
    f = sot.jit(past_the_end_on_the_host, backend="cuda")
    for k in range(3):
        x = np.full(8, 0.6) if k != 1 else np.full(8, 0.3)
        got, said = warned(lambda: f(x, 0.1))
        plain, plain_said = warned(lambda: past_the_end_on_the_host(x, 0.1))
        assert got == plain and said == plain_said == [], (k, got, plain, said)


def overflows_after(x, big):
    n = 0
    s = (x * x).sum()
    while s < big:
        x = x * 1e50
        s = (x * x).sum()
        n += 1
    return x, n, s


def test_a_step_run_ahead_that_overflows_is_not_seen():
    # (the step after the last overflows: under errstate(over="raise") the run's flags say so, and the whole run goes
    # to the host, which never runs that step)
    f = sot.jit(overflows_after, backend="cuda")
    for k in range(3):
        x = np.abs(data(8 + k, 64)) + 1.0
        with np.errstate(over="raise"):
            plain = overflows_after(x, 1e250)  # (3 steps; a fourth would square 1e200s)
            got = f(x, 1e250)
        assert np.array_equal(got[0], plain[0]) and got[1:] == plain[1:] and plain[1] == 3, k


def late_division(x, d, tol):
    n = 0
    s = (x * x).sum()
    r = s
    while s > tol:
        x = x * 0.5
        s = (x * x).sum()
        r = s / d  # (a late step that NumPy flags where d is 0.0: divide by zero)
        n += 1
    return n, s, r


@pytest.mark.parametrize("state", ["warn", "ignore", "raise"])
def test_a_late_step_warns_or_raises_as_numpy(state):
    f = sot.jit(late_division, backend="cuda")
    x = data(11, 200)
    f(x, 2.0, 1.0)
    for d in (2.0, 0.0, 0.0, 4.0):
        with np.errstate(divide=state):
            if state == "raise" and d == 0.0:
                with pytest.raises(FloatingPointError):
                    f(x, d, 1.0)
                with pytest.raises(FloatingPointError):
                    late_division(x, d, 1.0)
                continue
            got, said = warned(lambda: f(x, d, 1.0))
            plain, plain_said = warned(lambda: late_division(x, d, 1.0))
        assert got == plain and said == plain_said, (d, said, plain_said)
        assert [type(v) for v in got] == [type(v) for v in plain], d


def late_value_in_a_kernel(x, tol):
    n = 0
    s = np.sqrt((x * x).sum())
    while s > tol:
        x = x / (s + 1.0)  # (the late value as a kernel's scalar: read there)
        s = np.sqrt((x * x).sum())
        n += 1
    return x, n, s


def test_a_late_value_read_by_a_kernel_is_numpys():
    f = sot.jit(late_value_in_a_kernel, backend="cuda")
    f(data(12, 300), 1e-2)
    for k, n in enumerate((300, 41)):
        x = data(13 + k, n) * 10.0
        got, plain = f(x, 1e-2), late_value_in_a_kernel(x, 1e-2)
        assert np.array_equal(got[0], plain[0]) and got[1:] == plain[1:], k
        assert type(got[2]) is np.float64


def test_late_scalars_stay_inside_the_run():
    # (every late value comes back as NumPy's scalar, not as a LateScalar, and nothing is left unread)
    f = sot.jit(converge, backend="cuda")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for k in range(3):
            out = f(data(14, 50), 1e-3)
            assert type(out[2]) is np.float64 and type(out[1]) is int, k
