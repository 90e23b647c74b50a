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


def late_division(x, ds, tol):
    n = 0
    s = (x * x).sum()
    r = s
    while s > tol:
        x = x * 0.5
        s = (x * x).sum()
        r = s / ds[0]  # (a late step that NumPy flags where ds[0] is 0.0: divide by zero)
        n += 1
    return n, s, r


@pytest.mark.parametrize("state", ["warn", "ignore", "raise"])
def test_a_late_step_warns_or_raises_as_numpy(state):
    # (ds an array, and the error state set for the first call: one translation, its first call the host's)
    f = sot.jit(late_division, backend="cuda")
    x = data(11, 200)
    with np.errstate(divide=state):
        f(x, np.array([2.0]), 1.0)
        for d in (2.0, 0.0, 0.0, 4.0):
            ds = np.array([d])
            if state == "raise" and d == 0.0:
                with pytest.raises(FloatingPointError):
                    f(x, ds, 1.0)
                with pytest.raises(FloatingPointError):
                    late_division(x, ds, 1.0)
                continue
            got, said = warned(lambda: f(x, ds, 1.0))
            plain, plain_said = warned(lambda: late_division(x, ds, 1.0))
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


def write_then_divide(x, out, ks, tol):
    n = 0
    s = (x * x).sum()
    r = s
    while s > tol:
        r = s / (ks[0] - n)  # (a late step NumPy flags where n reaches ks[0]: divide by zero)
        out[0:2] = x[0:2]  # (the caller's array, written on the device after it, as NumPy writes it)
        x = x * 0.5
        s = (x * x).sum()
        n += 1
    return x, r


@pytest.mark.parametrize("state", ["warn", "raise", "error"])
def test_a_late_step_runs_before_a_write_the_caller_sees(state):
    # (ks an array: one translation for every value, its first call the host's; "error": NumPy warns, the warnings
    # filter raises, so the warning's place among the writes is seen)
    f = sot.jit(write_then_divide, backend="cuda")
    x = np.full(100, 1.0)
    with np.errstate(divide="raise" if state == "raise" else "warn"):  # (the error state is guarded)
        f(x, np.zeros(3), np.array([20.0]), 1e-3)
        for k in (20.0, 6.0):
            ks = np.array([k])
            out, plain_out = np.zeros(3), np.zeros(3)
            if state != "warn" and k == 6.0:
                expected = FloatingPointError if state == "raise" else RuntimeWarning
                with warnings.catch_warnings():
                    warnings.simplefilter("error")
                    with pytest.raises(expected):
                        f(x, out, ks, 1e-3)
                    with pytest.raises(expected):
                        write_then_divide(x, plain_out, ks, 1e-3)
            else:
                got, said = warned(lambda: f(x, out, ks, 1e-3))
                plain, plain_said = warned(lambda: write_then_divide(x, plain_out, ks, 1e-3))
                assert np.array_equal(got[0], plain[0]) and got[1] == plain[1] and said == plain_said, k
            assert np.array_equal(out, plain_out), (k, out, plain_out)


def divide_then_index(x, ks):
    n = 0
    s = (x * x).sum()
    r = s
    first = x[0]
    while s > ks[1]:
        x = x * 0.5
        s = (x * x).sum()
        r = s / (ks[0] - n)  # (flagged at n == ks[0])
        n += 1
        first = x[n * 10]  # (out of range at the same step: NumPy warns or raises for the division first)
    return n, r, first


@pytest.mark.parametrize("state", ["warn", "raise"])
def test_a_late_step_before_an_error_says_its_warning_or_error_first(state):
    # (ks an array: one translation for every value, its first call the host's)
    f = sot.jit(divide_then_index, backend="cuda")
    x = np.full(35, 1.0)  # (x[40] on the fourth step, where n was 3)
    ks = np.array([3.0, 1e-3])
    with np.errstate(divide=state):  # (the error state is guarded: a translation for each)
        f(x, np.array([50.0, 1.0]))  # (three steps)
        expected = FloatingPointError if state == "raise" else IndexError
        with warnings.catch_warnings(record=True) as plain_said:
            warnings.simplefilter("always")
            with pytest.raises(expected):
                divide_then_index(x, ks)
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            with pytest.raises(expected):
                f(x, ks)
    assert [str(w.message) for w in said] == [str(w.message) for w in plain_said]


def unread_divisions(x, d, most):
    n = 0
    s = (x * x).sum()
    r = s
    while n < most:  # (a test that is no late value: the divisions wait, a batch at a time)
        x = x * 0.999
        s = (x * x).sum()
        r = s / d
        n += 1
    return x, r


def test_late_steps_nothing_reads_still_run_and_warn_in_order():
    f = sot.jit(unread_divisions, backend="cuda")
    f(data(15, 64), 2.0, 150)
    for d in (2.0, 0.0):
        x = data(16, 64)
        with np.errstate(divide="warn"):
            got, said = warned(lambda: f(x, d, 150))
            plain, plain_said = warned(lambda: unread_divisions(x, d, 150))
        assert np.array_equal(got[0], plain[0]) and got[1] == plain[1], d
        assert said == plain_said and len(said) == (150 if d == 0.0 else 0), (d, len(said))


def overflowing_test(x, most):
    n = 0
    s = np.sqrt((x * x).sum())
    while s * 1e300 > 1.0 and n < most:  # (the test's step overflows: NumPy warns, inf > 1.0)
        x = x * (1.0 - 1e-3 / s)  # (a late value the next step's kernel reads)
        s = np.sqrt((x * x).sum())
        n += 1
    return x, n


def test_a_flagged_test_step_read_in_the_middle_of_a_step_run_ahead():
    f = sot.jit(overflowing_test, backend="cuda")
    f(np.full(4, 1e-100), 5)
    for k in range(2):
        x = np.full(4, 1e100) * (1.0 + k)
        with np.errstate(over="warn"):
            got, said = warned(lambda: f(x, 5))
            plain, plain_said = warned(lambda: overflowing_test(x, 5))
        assert np.array_equal(got[0], plain[0]) and got[1] == plain[1] and said == plain_said, (k, said, plain_said)
