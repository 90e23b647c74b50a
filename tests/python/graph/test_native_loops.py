"""Tier C: loop ops of Python numbers, NumPy scalars and single elements run as one native function (the cpu
backend, graph/backends/cpu/whole/). Every case runs plainly and translated - first call, from the cache, and
with other arguments of the same types - with tier C compiled before the loop's first run (``sync``), and the
two must agree in value and exact type, in the arguments after the call, in the exception raised and in the
warnings. Where native code cannot match plain Python (an int past 64 bits, a division by zero, an index out of
range, a floating-point flag NumPy warns of), it gives up: the arrays it wrote are put back and the loop op's own
path computes or raises as plain Python does; the cases below reach each of those.
PYTEST_DONT_REWRITE"""

import math
import warnings

import pytest
from numpy_differential import check, native_runs, same, tier_c_loops
from test_math_numbers import cholesky_rows  # (programs of the other tier C suites, run here as whole graphs)
from test_native_arrays import prefix_rows
from test_native_slices import forward_substitution

np = pytest.importorskip("numpy")
sot = pytest.importorskip("sot")
from sot import capture as cap  # noqa: E402

pytestmark = [pytest.mark.skipif(sot.config.backend != "cpu", reason="tier C is the cpu backend's"),
              pytest.mark.usefixtures("tier_c_sync")]


# ---- programs ---------------------------------------------------------------------------------------------------


def counter(n):
    s = 0
    for i in range(n):
        s += i * i
    return s


def float_steps(n, x0):
    x = x0
    t = 0.0
    for i in range(n):
        x = x * 0.999 + 0.5 / (i + 1)
        t += 0.25
    return x, t


def floor_and_mod(n, m):
    a = 0
    b = 0.0
    for i in range(-n, n):
        a += i // m + i % m
        b += (i * 0.7) // (m * 0.3) + (i * 0.7) % (m * 0.3)
    return a, b


def while_mixed(x, big, limit):
    y = x * 2.0  # (arrays in the frame: the while loop is not simulated to its end)
    k = 0
    s = 0.0
    while k + big < limit:  # an int past 2**53 meeting a float: compared exactly by Python (give up)
        s += 0.5
        k += 1
    return y, k, s


def running_mean(x):
    out = np.empty_like(x)
    acc = 0.0
    for i in range(x.shape[0]):
        acc += x[i]
        out[i] = acc / (i + 1)
    return out


def ema(x, alpha):
    out = np.empty_like(x)
    m = x[0]
    for i in range(x.shape[0]):
        m = alpha * x[i] + (1 - alpha) * m
        out[i] = m
    return out


def sor(u, f, omega, sweeps):
    for _ in range(sweeps):
        for i in range(1, u.shape[0] - 1):
            u[i] = (1 - omega) * u[i] + omega * 0.5 * (u[i - 1] + u[i + 1] - f[i])
    return u


def gauss_seidel(u, f, sweeps):
    n = u.shape[0]
    for _ in range(sweeps):
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                u[i, j] = 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1] - f[i, j])
    return u


def trapezoid(x, y):
    total = 0.0
    for i in range(1, x.shape[0]):
        total += 0.5 * (x[i] - x[i - 1]) * (y[i] + y[i - 1])
    return total


def int_elements(a, scale):
    total = 0
    for i in range(a.shape[0]):
        total += int(a[i]) * scale
        a[i] = a[i] + 1
    return total, a


def divide_by(x, d):
    s = 0.0
    for i in range(x.shape[0]):
        s += float(x[i]) / d
    return s


def shifted(x, k):
    s = 0.0
    for i in range(20):
        s += x[i - k]
    return s


def grows(u, factor):
    for i in range(1, u.shape[0]):
        u[i] = u[i - 1] * factor  # overflows to inf past some step: NumPy warns there
    return u


def int_of(x):
    total = 0
    for i in range(x.shape[0]):
        total += int(x[i])
    return total


def float32_steps(x):
    out = np.empty_like(x)
    m = x[0]
    for i in range(x.shape[0]):
        m = m * np.float32(0.5) + x[i]
        out[i] = m
    return out


def writes_then_overflows(big, n, scale):
    total = 0
    for i in range(n):
        big[i] = big[i] + 1
        total += int(big[i]) * scale  # (past 2**63 after a few steps with a large scale: give up)
    return total


RNG = np.random.default_rng(11)
BIG = np.zeros(3_000_000, dtype=np.int64)  # 24 MB: written elements logged, not the array copied
X = RNG.standard_normal(200)
U2 = RNG.standard_normal((12, 12))

def counts_above(x, lo, width, bins):
    h = np.zeros(bins, dtype=np.int64)
    for v in x:
        k = int((v - lo) / width)
        if k >= 0:  # (an if whose way only changes an array in place: a cond op of no outputs)
            h[k] += 1
    return h


def excess(x, t):
    out = np.zeros(x.shape[0])
    for i in range(x.shape[0]):
        if x[i] > t:
            out[i] = x[i] - t
    return out


def counts_within(x, lo, width, bins):
    h = np.zeros(bins, dtype=np.int64)
    for v in x:
        k = int((v - lo) / width)
        if k >= 0 and k < bins:  # (the second test a cond op inside the first's way)
            h[k] += 1
    return h


def both_or_neither(x, y, t):
    out = np.zeros(x.shape[0])
    for i in range(x.shape[0]):
        if x[i] > t and y[i] > t:  # (and with an else: both tests' jumps go to the else block)
            out[i] = x[i] + y[i]
        else:
            out[i] = -1.0
    return out


def in_band(x, lo, hi):
    c = 0
    s = 0.0
    for v in x:
        if v > lo and v < hi:
            c += 1
        else:
            s += 1.0
    return c, s


def counts_chained(x, lo, width, bins):
    h = np.zeros(bins, dtype=np.int64)
    for v in x:
        k = int((v - lo) / width)
        if 0 <= k < bins:  # (a chained comparison: one way takes the copied k, the other pops it)
            h[k] += 1
    return h


def skips_then_sums(x, t):
    s = 0.0
    n = 0
    for v in x:
        if v < t:  # (the ways meet back at the loop's head)
            n += 1
            continue
        s += float(v)
    return s, n


def insertion_sort(a):
    a = a.copy()
    for i in range(1, a.shape[0]):
        key = a[i]
        j = i - 1
        while j >= 0 and a[j] > key:  # (a[j] read only where j >= 0 held, as plain)
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = key
    return a


def leading_positives(x):
    n = x.shape[1]
    out = np.zeros(x.shape[0], dtype=np.int64)
    for r in range(x.shape[0]):
        i = 0
        while i < n and x[r, i] > 0.0:  # (x[r, n] would raise IndexError: read only where i < n held)
            i += 1
        out[r] = i
    return out


def first_outside(x, lo, hi):
    out = np.zeros(x.shape[0], dtype=np.int64)
    for r in range(x.shape[0]):
        i = 0
        while i < x.shape[1] and x[r, i] > lo and x[r, i] < hi:  # (three tests, work before two)
            i += 1
        out[r] = i
    return out


def edit_distance(a, b):
    n, m = a.shape[0], b.shape[0]
    d = np.zeros((n + 1, m + 1))
    d[:, 0] = np.arange(n + 1)
    d[0, :] = np.arange(m + 1)
    for i in range(1, n + 1):
        for j in range(1, m + 1):  # (after it j is m on every outer step: a constant the outer op leaves)
            cost = 0.0 if a[i - 1] == b[j - 1] else 1.0
            d[i, j] = min(d[i - 1, j] + 1.0, d[i, j - 1] + 1.0, d[i - 1, j - 1] + cost)
    return d[n, m], j, cost


CASES = [
    (counter, (1000,), [((50,), {}), ((5_000_000,), {})]),  # (the second passes 2**63: give up, Python's ints)
    (float_steps, (300, 1.0), [((20, -3.5), {})]),
    # (the second variant's k passes the bins: IndexError, from the loop op's own path as plain)
    (counts_above, (X, -3.0, 0.25, 24), [((X[:9] * 0.1, -1.0, 0.5, 5), {}), ((X, -3.0, 0.1, 24), {})]),
    (excess, (X, 0.1), [((X[:5], -0.5), {}), ((X.astype(np.float32), 0.0), {})]),
    (both_or_neither, (X, X[::-1].copy(), 0.1), [((X[:5], X[5:10], -0.5), {}), ((X[:1], X[:1], 9.0), {})]),
    (in_band, (X, -0.5, 0.5), [((X[:3], 0.0, 0.1), {}), ((X.astype(np.float32), -1.0, 1.0), {})]),
    (counts_within, (X, -3.0, 0.25, 24), [((X[:9] * 0.1, -1.0, 0.5, 5), {}), ((X, 0.0, 0.01, 3), {})]),
    (counts_chained, (X, -3.0, 0.25, 24), [((X[:9] * 0.1, -1.0, 0.5, 5), {}), ((X, 0.0, 0.01, 3), {})]),
    (skips_then_sums, (X, 0.2), [((X[:4], -9.0), {}), ((X.astype(np.float32), 0.0), {})]),
    (insertion_sort, (X[:40],), [((X[:3],), {}), ((X[:30].astype(np.float32),), {}), ((np.arange(20) % 7,), {})]),
    (leading_positives, (np.abs(U2) + 0.1,), [((np.abs(U2[:3]),), {}), ((U2,), {}), ((U2[:, :1],), {})]),
    (first_outside, (U2 * 0.5, -0.9, 0.9), [((U2[:2] * 0.01, -1.0, 1.0), {}), ((U2.astype(np.float32), 0.0, 0.5), {})]),
    (edit_distance, (np.arange(12) % 4, np.arange(9) % 3), [((np.arange(3) % 2, np.arange(40) % 5), {}), ((np.arange(20) % 4, np.arange(2)), {})]),
    (floor_and_mod, (200, 7), [((200, -7), {}), ((300, 0), {})]),  # (m = 0: ZeroDivisionError, as plain)
    (while_mixed, (np.ones(3), 3, 300.5), [((np.ones(2), 2**60, 2.0**60 + 100), {})]),
    (running_mean, (X,), [((X[:17],), {}), ((X.astype(np.float32),), {})]),
    (ema, (X, 0.1), [((X[:40], 0.7), {}), ((np.full(30, 1e308), 3.0), {})]),  # (overflow: a warning)
    (sor, (np.zeros(40), X[:40] * 0.01, 1.5, 6), [((np.ones(9), X[:9], 1.2, 2), {})]),
    (gauss_seidel, (np.zeros((12, 12)), U2 * 0.01, 3), [((np.ones((5, 5)), U2[:5, :5], 2), {})]),
    (trapezoid, (np.linspace(0.0, 1.0, 64), X[:64]), [((np.linspace(0.0, 2.0, 9), X[:9]), {})]),
    (int_elements, (np.arange(30), 3), [((np.arange(9) - 4, 2**61), {})]),  # (a product past 2**63)
    (divide_by, (X, 2.0), [((X, 0.0), {})]),  # (ZeroDivisionError on the first step)
    (shifted, (np.arange(40.0), 0), [((np.arange(40.0), 25), {})]),  # (x[-25 ...] then IndexError)
    (grows, (np.ones(40), 2.0), [((np.ones(40), 1e200), {})]),  # (inf and the overflow warning)
    (int_of, (X * 10,), [((np.array([1.0, np.nan, 2.0]),), {})]),  # (int(nan): ValueError)
    (float32_steps, (X.astype(np.float32),), [((X[:9].astype(np.float32),), {})]),
    (writes_then_overflows, (BIG, 40, 3), [((BIG, 40, 2**62), {}), ((np.zeros(50, dtype=np.int64), 30, 2**62), {})]),
]


def run_plainly(fn, args):
    """The result (or the exception), the arguments after the call and the warnings of one call."""
    args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value = fn(*args)
            error = None
        except Exception as exc:  # noqa: BLE001 - every exception is compared
            value, error = None, (type(exc), str(exc))
    return value, error, args, [(w.category, str(w.message)) for w in caught]


@pytest.mark.parametrize("fn,args,variants", CASES, ids=[c[0].__name__ for c in CASES])
def test_native_loops(fn, args, variants):
    records = check(fn, *args, variants=variants)
    assert native_runs(records) > 0, "tier C's code never ran"
    # every call again with the warnings compared too (the check above compares the rest)
    jitted = sot.jit(fn)
    for call_args in [args] + [v[0] for v in variants]:
        for _ in range(3):
            want = run_plainly(fn, call_args)
            got = run_plainly(jitted, call_args)
            assert same(got[0], want[0]) and got[1] == want[1], (got[:2], want[:2])
            assert same(tuple(got[2]), tuple(want[2])), "the arguments after the call differ"
            assert got[3] == want[3], f"warnings {got[3]} != {want[3]}"


def loops_of(fn, *args):
    """The tier C entries (status, runs, gave_up) of the loop ops of fn's graphs after one translated call."""
    return tier_c_loops(fn, *args)[0]


def test_gives_up_then_runs_its_own_path():
    """An int past 64 bits: the native code gives up (counted, the op named), the loop op's own path makes the big
    int; the written arrays of a give-up are put back first (grows: the overflow is seen after the loop)."""
    loops = loops_of(counter, 5_000_000)
    assert len(loops) == 1 and loops[0]["gave_up"] == 1 and loops[0]["runs"] == 0, loops
    assert "gave up 1 time (last: at add" in loops[0]["status"], loops
    loops = loops_of(grows, np.ones(40), 1e200)
    assert loops[0]["gave_up"] == 1 and "floating-point flag" in loops[0]["status"], loops
    # (24 MB written into: its elements logged and put back, not the array copied; the arguments after the
    # call are compared with plain ones by test_native_loops[writes_then_overflows])
    loops = loops_of(writes_then_overflows, BIG, 40, 2**62)
    assert loops[0]["gave_up"] == 1 and "gave up 1 time (last: at add" in loops[0]["status"], loops
    loops = loops_of(counter, 1000)
    assert loops[0]["runs"] == 1 and loops[0]["gave_up"] == 0 and loops[0]["status"].startswith("ready"), loops


def test_not_run_again_after_the_limit():
    jitted = sot.jit(counter)
    sot.reset()
    cap.clear(counter)
    for _ in range(6):
        assert jitted(5_000_000) == counter(5_000_000)
    assert jitted(10) == 285


def test_unemitted_loops_say_why():
    """A loop op tier C has no form for keeps its own path and says why (an array handed on after the loop that
    is not carried from step to step)."""

    def last_array(x, n):
        for _ in range(n):
            y = x * 0.5 + 1.0
            x = x - 0.5
        return x, y

    loops = loops_of(last_array, np.ones((3, 2)), 40)
    assert len(loops) == 1 and loops[0]["status"].startswith("not emitted: a loop whose result is an array"), loops
    assert loops[0]["runs"] == 0


def test_mode_setting():
    assert sot._sot.graph.tier_c() == "sync"
    with pytest.raises(ValueError, match="'on', 'off' or 'sync'"):
        sot._sot.graph.tier_c("fast")
    sot.config.cpu_tier_c = "off"
    try:
        assert sot._sot.graph.tier_c() == "off"
        assert counter(300) == sot.jit(counter)(300)
    finally:
        sot.config.cpu_tier_c = "sync"
    with pytest.raises(ValueError, match="expected 'on', 'off' or 'sync'"):
        sot.config.cpu_tier_c = "fast"


def test_python_semantics_of_numbers():
    """Floor division and remainder of negative ints and floats, int/float comparisons past 2**53, min/max with
    NaN: as CPython, native or given up on."""

    def numbers(n, m, w):
        a = 0
        b = 0.0
        c = 0
        for i in range(-n, n):
            a += (i * 7) // m - (i * 5) % m
            b += (i * 0.3) // w + (i * 0.3) % w + abs(i * 0.5)
            c += max(i, -i) + min(i, 3) + abs(i)
        return a, b, c

    jitted = sot.jit(numbers)
    for args in [(30, 4, 0.7), (30, -4, -0.7), (25, 3, 2.5), (10, 1, 1e-300)]:
        want = numbers(*args)
        got = jitted(*args)
        assert same(got, want), (args, got, want)
        assert all(math.copysign(1.0, x) == math.copysign(1.0, y) for x, y in [(got[1], want[1])])


# ---- a whole graph as one native function -------------------------------------------------------------------


def sum_then_int(x, k):
    t = 0.0
    for v in x:
        t += v * 2.0
    return t, int(x[0] * k)  # (past 64 bits for x[0] * k >= 2**63: the whole graph's code gives up there)


def whole_plan(fn, *args, calls=1):
    """The plan of fn's one graph after ``calls`` translated calls (the first translates, the rest run it)."""
    sot.reset()
    cap.clear(fn)
    translator = sot.translate.new_translator(records=True)
    with cap.capture(translator):
        results = [fn(*args) for _ in range(calls)]
    (graph,) = [g for r in translator.records() for g in r["graphs"]]
    return graph["compiled"].plan(), results


def test_a_graph_with_a_loop_is_one_native_function():
    """The ops the loop's first step leaves outside it and the loop op itself: one function, no group run."""
    x = np.linspace(0.0, 3.0, 40)
    check(trapezoid, x, np.sin(x), variants=[((x[:7], np.cos(x[:7])), {}), ((x[:2], x[:2]), {})])
    plan, results = whole_plan(trapezoid, x, np.sin(x), calls=3)
    assert plan["whole"]["status"].startswith("ready") and plan["whole"]["runs"] == 3, plan["whole"]
    assert all(same(r, trapezoid(x, np.sin(x))) for r in results), results
    assert all("loops" not in g or not g["loops"] for g in plan["groups"]), "the loop compiled on its own too"


def test_a_whole_graph_that_gives_up_runs_its_groups_then_retires():
    """An int past 64 bits after the loop: the whole graph's code gives up (nothing changed) and the graph's
    groups compute the big int; after kGiveUpLimit give-ups it is not run again and the loop op gets native code
    of its own."""
    x = np.arange(50.0)
    big = x + 1e20
    check(sum_then_int, x, 3.0, variants=[((big, 1.0), {}), ((x[::-1], -2.5), {})])
    plan, results = whole_plan(sum_then_int, big, 1.0, calls=6)
    assert all(same(r, sum_then_int(big, 1.0)) for r in results), results
    assert plan["whole"]["gave_up"] == 4 and "not run again" in plan["whole"]["status"], plan["whole"]
    loops = [entry for g in plan["groups"] for entry in g.get("loops", [])]
    assert len(loops) == 1 and loops[0]["status"].startswith("ready") and loops[0]["runs"] == 3, loops  # (the fourth call on)


def counted(x, bins):
    h = np.zeros(bins, dtype=np.int64)
    g = np.ones(bins)
    for v in x:
        k = int(v * bins) % bins
        h[k] += 1
        g[k] *= 1.5
    return h, g


def scaled_in_place(x, k):
    for i in range(x.shape[0]):
        x[i] = x[i] * k + i
    return x


def twice(x):
    y = np.zeros(x.shape[0])
    for i in range(x.shape[0]):
        y[i] = x[i] + 1.0
    return y, y


def tail_of(x):
    y = np.zeros(x.shape[0])
    for i in range(x.shape[0]):
        y[i] = x[i] * 2.0
    return y[1:]


def lower(n, seed):
    a = np.random.default_rng(seed).standard_normal((n, n))
    return np.tril(a) + n * np.eye(n)


def test_a_whole_graph_returns_the_arrays_it_made():
    """Vectors the graph made (np.zeros, np.ones, with a dtype) come out as new arrays of NumPy's layout, each
    made for the call; an argument the graph wrote into comes out as itself."""
    b = np.arange(1.0, 13.0)
    check(forward_substitution, lower(12, 1), b,
          variants=[((lower(5, 2), b[:5]), {}), ((lower(1, 3), b[:1]), {})])
    plan, results = whole_plan(forward_substitution, lower(12, 1), b, calls=3)
    assert plan["whole"]["status"].startswith("ready") and plan["whole"]["runs"] == 3, plan["whole"]
    x = results[0]
    assert x.flags.c_contiguous and x.flags.owndata and x.flags.writeable and x.base is None
    assert results[0] is not results[1] and not np.shares_memory(results[0], results[1])
    values = np.random.default_rng(4).uniform(0.0, 1.0, 60)
    check(counted, values, 7, variants=[((values[:3], 7), {}), ((values[::-2], 7), {})])
    plan, results = whole_plan(counted, values, 7, calls=2)
    assert plan["whole"]["runs"] == 2 and results[0][0].dtype == np.int64, plan["whole"]
    x = np.arange(30.0)
    check(scaled_in_place, x, 3.0, variants=[((x[:4].copy(), -1.5), {}), ((x[::3].copy(), 2.0), {})])
    arg = np.arange(30.0)
    plan, results = whole_plan(scaled_in_place, arg, 3.0, calls=2)
    assert plan["whole"]["runs"] == 2 and all(r is arg for r in results), plan["whole"]


def test_a_whole_graph_keeps_what_its_results_are():
    """One array returned twice is one object twice (the graph's one output); a view of an array the graph made
    is not emitted (a new array would not be a view): the groups' path returns it."""
    x = np.arange(20.0)
    check(twice, x, variants=[((x[:3],), {})])
    plan, results = whole_plan(twice, x)
    assert plan["whole"]["runs"] == 1 and results[0][0] is results[0][1], plan["whole"]
    check(tail_of, x, variants=[((x[:3],), {})])
    plan, results = whole_plan(tail_of, x)
    assert plan["whole"]["status"].startswith("not emitted: a graph whose result is a view"), plan["whole"]
    assert results[0].base is not None


def test_a_whole_graph_returns_matrices_made_as_numpy_makes_them():
    """np.zeros_like / np.empty_like of a C-ordered matrix: C-ordered there and here. Of an F-ordered one NumPy
    keeps the argument's layout: the code gives up and the groups' path makes it."""
    A = np.arange(24.0).reshape(6, 4)
    check(prefix_rows, A, variants=[((A[:2].copy(),), {}), ((A[::2].copy(),), {})])
    plan, results = whole_plan(prefix_rows, A, calls=2)
    assert plan["whole"]["runs"] == 2 and results[0].flags.c_contiguous, plan["whole"]
    spd = lower(7, 5) @ lower(7, 5).T
    check(cholesky_rows, spd, variants=[((spd[:3, :3].copy(),), {})])
    fortran = np.asfortranarray(A)
    plan, results = whole_plan(prefix_rows, fortran, calls=2)
    assert plan["whole"]["gave_up"] == 2 and plan["whole"]["runs"] == 0, plan["whole"]
    assert results[0].flags.f_contiguous == prefix_rows(fortran).flags.f_contiguous
    assert np.array_equal(results[0], prefix_rows(fortran))
