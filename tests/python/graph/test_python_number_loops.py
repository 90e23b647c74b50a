"""Loops of Python numbers alone (no array in the body), and loops over single elements (NumPy scalars, x[i],
out[i] = v; the second part of this file). A `for` loop of at most 256 steps of Python numbers on constants
unrolls and folds. Any other is a loop op only where the backend runs the whole loop as native code (the cpu
backend's tier C: ``native_loops()``); elsewhere a loop op would run each step as a graph call from Python
objects, several times slower than CPython, so the loop breaks the graph where it starts with the reason "a loop
over Python numbers only" and CPython runs it. (A frame with no array at all is simulated as before: a loop within
the step limit folds, a longer one fails and runs as is.) Loops with array work stay loop ops. Every case runs
plainly and translated (first call, cached, other arguments) and must agree; with tier C compiled before the
first run (``SOT_CPU_TIER_C=sync``) its native code must have run.
PYTEST_DONT_REWRITE"""

import pytest

from numpy_differential import case, check, native_loops, native_runs, run_cases

np = pytest.importorskip("numpy")
sot = pytest.importorskip("sot")

REASON = "a loop over Python numbers only"


def counter(n):
    s = 0
    for i in range(n):
        s += i * i
    return s


def short_constant_loop():
    total = 0
    for i in range(40):
        total += i * i
    return total


def counter_after_arrays(x, n):
    y = x * 2.0 + 1.0  # a graph before the loop: kept
    s = 0
    for i in range(n):
        s += i
    return y, s


def from_an_array(x):
    a = float(x[0])  # a Python number made from an array: no folding
    s = 0.0
    for i in range(40):
        s = s * 0.5 + a * i
    return s


def while_counter(n):
    k = 0
    s = 0.0
    while k < n:
        s += k * 0.5
        k += 1
    return s


def while_after_arrays(x, n):
    y = x * 2.0
    k = 0
    s = 0.0
    while k < n:
        s += k * 0.5
        k += 1
    return y, s


def array_loop_stays(x, n):
    for i in range(n):
        x = x * 0.5 + i
    return x


def negated_counter(n):
    s = 0
    for i in range(n):
        s += -i + (~i) * 2 + (+i) * 3
    return s, -s, ~s


def negated_floats(x, n):
    a = float(x[0])
    s = 0.0
    for _ in range(n):
        s = -s * 0.5 + a
    return s, -a, +s


def negated_past_int64(x, n):
    m = int(x.min())  # -2**63 from an int64 array: -m is past int64
    s = 0
    for i in range(n):
        s = -m + i
    return s


INT64_MIN = np.iinfo(np.int64).min

CASES = [
    case(negated_counter, 1000, graphs=0, breaks=1, variants=[((2000,), {}), ((0,), {})]),
    case(negated_floats, np.arange(3.0) - 1.5, 300, breaks=1, variants=[((np.arange(4.0) + 1, 301), {})]),
    case(negated_past_int64, np.array([-7, 5]), 300, breaks=1,
         variants=[((np.array([INT64_MIN, 5]), 300), {}), ((np.array([INT64_MIN + 1, 5]), 300), {})]),
    case(counter, 1000, graphs=0, breaks=1, variants=[((2000,), {}), ((300,), {})]),
    case(short_constant_loop, graphs=0),
    case(counter_after_arrays, np.ones(4), 1000, breaks=1, variants=[((np.ones(5), 400), {})]),
    case(from_an_array, np.arange(3.0), breaks=1, variants=[((np.arange(4.0) + 1,), {})]),
    # (no array in the frame: the while is simulated to its end and folds, within the step limit)
    case(while_counter, 1000, graphs=0, variants=[((20,), {})]),
    case(while_after_arrays, np.ones(3), 1000, breaks=1, variants=[((np.ones(2), 30), {}), ((np.ones(2), 3000), {})]),
    case(array_loop_stays, np.ones(3), 100, variants=[((np.ones(4), 50), {})]),
]


def expected_counts(graphs, breaks):
    """A loop left to CPython (a break) is one native loop op instead where the backend compiles it."""
    if native_loops() and breaks:
        return 1, breaks - 1
    return graphs, breaks


def assert_native_ran(records):
    if native_loops() and sot._sot.graph.tier_c() == "sync":
        assert native_runs(records) > 0, "tier C's code never ran"


@run_cases(CASES)
def test_python_number_loops(fn, args, kwargs, graphs, breaks, fallbacks):
    native = native_loops() and breaks > 0
    graphs, breaks = expected_counts(graphs, breaks)
    records = check(fn, *args, graphs=graphs, breaks=breaks, fallbacks=fallbacks, **kwargs)
    reasons = [b["reason"] for r in records for b in r["breaks"]]
    assert all(REASON in why for why in reasons) == (breaks > 0 or not reasons), reasons
    texts = [g["text"] for r in records if r["transformed"] is not None for g in r["graphs"]]
    assert any("= loop(" in t for t in texts) == (fn is array_loop_stays or native), texts
    if native:
        assert_native_ran(records)


# ---- loops over single elements: NumPy scalars, x[i], out[i] = v ------------------------------------------------

ELEMENTS = "a loop over single elements only, NumPy scalars and Python numbers"


def sum_of_floats(x):
    s = 0.0
    for v in x:
        s += float(v)
    return s


def sum_of_scalars(x):
    s = 0.0
    for v in x:
        s = s + v
    return s


def moving_average(x, alpha):
    out = np.empty_like(x)
    m = x[0]
    for i in range(len(x)):
        m = alpha * x[i] + (1 - alpha) * m
        out[i] = m
    return out


def goertzel_power(x, k):
    coeff = 2.0 * np.cos(2.0 * np.pi * k / len(x))
    s_prev = s_prev2 = 0.0
    for sample in x:
        s = sample + coeff * s_prev - s_prev2
        s_prev2, s_prev = s_prev, s
    return s_prev2 ** 2 + s_prev ** 2 - coeff * s_prev * s_prev2


def reads_a_whole_array(x, steps):
    s = x.sum()
    for _ in range(steps):
        s = s * 0.5 + x.max()  # a reduction of the array on each step: array work
    return s


def writes_rows(a):
    out = np.zeros_like(a)
    for i in range(a.shape[0]):
        out[i] = a[i, 0] * 2.0  # a whole row written on each step: array work
    return out


def writes_a_2d_element(a):
    s = 0.0
    for i in range(a.shape[0]):
        s = s + a[i, 1]
    return s


X = np.random.default_rng(5).standard_normal(300)
M = np.random.default_rng(6).standard_normal((50, 3))

ELEMENT_CASES = [
    case(sum_of_floats, X, graphs=0, breaks=1, variants=[((X[:7],), {}), ((X.astype(np.float32),), {})]),
    case(sum_of_scalars, X, breaks=1, variants=[((X[:3] * 2,), {}), ((np.arange(10),), {})]),
    case(moving_average, X, 0.1, breaks=1, variants=[((X[:20], 0.5), {}), ((X.astype(np.float32), 0.3), {})]),
    case(goertzel_power, X, 5, breaks=1, variants=[((X[:64], 3), {})]),
    case(writes_a_2d_element, M, breaks=1, variants=[((M[:4] + 1.0,), {})]),
    case(reads_a_whole_array, X, 40, variants=[((X[:10], 7), {})]),
    case(writes_rows, M, variants=[((M[:9] - 1.0,), {})]),
]


@run_cases(ELEMENT_CASES)
def test_single_element_loops_are_left_to_cpython(fn, args, kwargs, graphs, breaks, fallbacks):
    """A loop whose steps compute single elements alone is a native loop op, or breaks the graph where it starts
    where the backend has no native loops (a loop op ran 180 ns a step against CPython's 50 on `s += float(v)`); a
    step reading or writing more than one element of an array keeps the loop op."""
    native = native_loops() and breaks > 0
    graphs, breaks = expected_counts(graphs, breaks)
    records = check(fn, *args, graphs=graphs, breaks=breaks, fallbacks=fallbacks, **kwargs)
    if native:
        assert_native_ran(records)
    reasons = [b["reason"] for r in records for b in r["breaks"]]
    assert all(ELEMENTS in why for why in reasons) and len(reasons) == breaks, reasons
    texts = [g["text"] for r in records if r["transformed"] is not None for g in r["graphs"]]
    assert any("= loop(" in t for t in texts) == (breaks == 0), texts
