"""``while`` loops captured as loop ops: a loop whose test jumps on a value of the graph (``while err > tol``) is
one ``loop`` op whose trip count is known only where the graph runs, its tests at the top or bottom, with
``and``, with Python ints and floats the body counts with; so is a loop on Python numbers alone once its test has
gone on 16 times; a ``break`` inside the step is one of the loop's exits where loops are native (below); loops that
cannot be (a print, a value that changes type, a list appended to) break at the test as before. Every case is compared with
plain NumPy on the first call, from the cache and with other arguments.
PYTEST_DONT_REWRITE"""

import pytest

from numpy_differential import case, check, isolated_check, native_loops, native_runs, run_cases

np = pytest.importorskip("numpy")
sot = pytest.importorskip("sot")

rng = np.random.default_rng(11)
U = rng.random((12, 12))
V = rng.standard_normal(32)


def jacobi(u0, tol, max_iter):
    u = u0.copy()
    err = tol + 1.0
    it = 0
    while err > tol and it < max_iter:
        new = u.copy()
        new[1:-1, 1:-1] = 0.25 * (u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:] + u[1:-1, :-2])
        err = np.abs(new - u).max()
        u = new
        it += 1
    return u, it, err


def halve_until_small(x, tol):
    # the test at the top, on a value made before the loop: it may run no step at all
    err = np.abs(x).max()
    n = 0
    while err > tol:
        x = x * 0.5
        err = np.abs(x).max()
        n += 1
    return x, n


def time_stepping(x, t_end, dt):
    # a test on the data, and a Python float counted in the body
    t = 0.0
    while x.max() < 50.0 and t < t_end:
        x = x + dt * x
        t += dt
    return x, t


def call_after_first_test_breaks(x, t_end, dt):
    # x.max() is work after the first test (t < t_end), which a step cannot do where plain Python would not
    t = 0.0
    while t < t_end and x.max() < 50.0:
        x = x + dt * x
        t += dt
    return x, t


def newton_sqrt(a, tol):
    x = a.copy()
    dx = np.ones_like(a)
    while np.abs(dx).max() > tol:
        dx = (x * x - a) / (2 * x)
        x = x - dx
    return x


def not_converged(x, tol):
    done = False
    steps = 0
    while not done:
        y = 0.5 * (x + 1.0 / x)
        done = np.abs(y - x).max() < tol
        x = y
        steps += 1
    return x, steps


def in_place_until(u, limit):
    total = u.sum()
    while total < limit:
        u *= 1.5
        u += 0.1
        total = u.sum()
    return u, total


def while_in_for(x):
    out = np.zeros(4)
    for k in range(4):
        y = x * (k + 1)
        while np.abs(y).max() > 1.0:
            y = y * 0.5
        out[k] = y.sum()
    return out


def float32_residual(x, tol):
    r = x.max()
    while r > tol:
        x = x * np.float32(0.75)
        r = x.max()
    return x, r


def counter_in_graph_escapes(x, tol):
    # the count is a Python int made in the graph: returned, and it must be an int
    count = 0
    err = x.std()
    while err > tol:
        x = x - x.mean() * 0.5
        x = x * 0.9
        err = x.std()
        count += 2
    return count, x


def break_inside(x, tol):
    while x.max() > tol:
        x = x * 0.5
        if x.min() < -tol:
            break
    return x


def print_inside_breaks(x, tol):
    while x.max() > tol:
        x = x * 0.5
        print("step")
    return x


def type_changes_breaks(x, tol):
    # the first step makes an int array a float one: the loop op needs the same kinds on every step
    while x.max() > tol:
        x = x / 2
    return x


def list_appended_breaks(x, tol):
    seen = []
    while x.max() > tol:
        x = x * 0.5
        seen.append(1)
    return x, len(seen)


def while_true_break_at_end(x, tol):
    while True:
        x = x * 0.5
        if np.abs(x).max() < tol:
            break
    return x


def count_to(x, n):
    # a test on Python ints alone: unrolled up to 16 steps, then tried as a loop op (i a value of the graph)
    i = 0
    while i < n:
        x = x * 0.99 + i
        i += 1
    return x, i


def time_loop(x, t_end, dt):
    t = 0.0
    while t < t_end:
        x = x + dt * (1.0 - x)
        t += dt
    return x, t


def counted_list_unrolls(x, n):
    # the list appended to: no loop op, the loop unrolls as before
    seen = []
    i = 0
    while i < n:
        x = x * 0.5
        seen.append(i)
        i += 1
    return x, seen


CASES = [
    case(count_to, V[:5], 40),
    case(count_to, V[:5].astype(np.float32), 5),
    case(time_loop, V[:4], 2.0, 0.05),
    case(counted_list_unrolls, V[:3], 20),
    case(jacobi, U, 1e-3, 500),
    case(jacobi, U, 1e-3, 3),
    case(jacobi, U.astype(np.float32), 1e-2, 100),
    case(halve_until_small, V, 1e-3),
    case(halve_until_small, V * 1e-6, 1e-3),  # no step at all
    case(time_stepping, np.abs(V[:8]), 1.0, 0.05),
    case(time_stepping, np.abs(V[:8]) * 40, 1.0, 0.05),
    case(call_after_first_test_breaks, np.abs(V[:8]), 1.0, 0.05, graphs=2, breaks=2),
    # (other tolerances, lengths and positive values: Newton's iteration on a negative number never ends)
    case(newton_sqrt, np.abs(V) + 0.5, 1e-10,
         variants=[((np.abs(V[:7]) + 3.0, 1e-6), {}), ((np.abs(V[:40]).astype(np.float32) + 1, 1e-3), {})]),
    case(not_converged, np.abs(V) + 0.5, 1e-12),
    case(in_place_until, np.abs(V[:6]).copy(), 200.0),
    case(while_in_for, V[:5]),
    case(float32_residual, np.abs(V[:8]).astype(np.float32) + 1, np.float32(0.25)),
    case(counter_in_graph_escapes, V[:10], 1e-2),
    case(print_inside_breaks, np.abs(V[:4]), 0.5, graphs=2, breaks=2),
    case(type_changes_breaks, np.arange(1, 9), 0.1, graphs=2, breaks=1),
    case(list_appended_breaks, np.abs(V[:4]), 1e-2, graphs=2, breaks=2),
]


@run_cases(CASES)
def test_while_loops(fn, args, kwargs, graphs, breaks, fallbacks):
    isolated_check(fn, args, kwargs, graphs, breaks, fallbacks)


def _graph_texts(fn, *args):
    records = check(fn, *args, variants=False)
    return [g["text"] for r in records if r["transformed"] is not None for g in r["graphs"]]


@pytest.mark.parametrize("fn,args", [
    (jacobi, (U, 1e-3, 500)),
    (halve_until_small, (V, 1e-3)),
    (time_stepping, (np.abs(V[:8]), 1.0, 0.05)),
    (newton_sqrt, (np.abs(V) + 0.5, 1e-10)),
    (not_converged, (np.abs(V) + 0.5, 1e-12)),
    (in_place_until, (np.abs(V[:6]).copy(), 200.0)),
    (counter_in_graph_escapes, (V[:10], 1e-2)),
    (count_to, (V[:5], 40)),
    (time_loop, (V[:4], 2.0, 0.05)),
])
def test_captured_as_one_loop_op(fn, args):
    (text,) = _graph_texts(fn, *args)
    assert text.count("= loop(") == 1, text


def test_graph_does_not_depend_on_the_trip_count():
    # 3 steps or several hundred: one graph, the same ops, taken from the cache
    sot.reset()
    f = sot.jit(jacobi)
    first = f(U, 1e-1, 1000)
    again = f(U, 1e-1, 1000)  # (a hit)
    assert first[1] == again[1]
    stats = sot.capture.stats(jacobi)
    assert stats["translations"] == 1 and stats["hits"] >= 1, stats
    slow = rng.random((12, 12)) * 10
    got = f(slow, 1e-1, 1000)
    want = jacobi(slow, 1e-1, 1000)
    assert got[1] == want[1] and got[1] != first[1] and np.array_equal(got[0], want[0])
    assert sot.capture.stats(jacobi)["translations"] == 1  # (other data, other trip count, same graph)


def test_while_true_with_a_break_at_the_end():
    # `if done: break` as the body's last statement: the compiler makes it the loop's only jump out
    (text,) = _graph_texts(while_true_break_at_end, V[:6], 1e-3)
    assert text.count("= loop(") == 1, text


# Temporaries and `break`s inside the step: a local unbound before the loop that nothing outside it reads (`x_new`)
# is left unbound after the loop op; an `if` whose way breaks, with more of the step after it, is one of the loop's
# exits (loop_exits.cpp): its test one of the loop's tests, the rest of the step (and the loop's own tests at its
# end) a cond op. Where loops are native (the cpu backend's tier C) each is one graph, run natively; elsewhere the
# `if` breaks the graph as before.


def newton_temporaries(x, tol):
    dx = np.abs(x).max()
    it = 0
    while dx > tol:
        x_new = 0.5 * (x + 2.0 / x)
        dx = np.abs(x_new - x).max()
        x = x_new
        it += 1
    return x, it


def temporary_read_after(x, tol):
    # (x_new read after the loop: unbound there after no step, so the loop is no loop op)
    x_new = None
    while np.abs(x).max() > tol:
        x_new = x * 0.5
        x = x_new - 0.01
    return x, x_new


def newton_guarded(x, tol):
    dx = np.abs(x).max()
    it = 0
    while dx > tol:
        x_new = 0.5 * (x + 2.0 / x)
        if np.abs(x_new).max() > 1e6:
            break
        dx = np.abs(x_new - x).max()
        x = x_new
        it += 1
    return x, it


def bisect_sine(lo, hi, tol):
    n = 0
    f_lo = np.sin(lo)
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        v = np.sin(mid)
        if v == 0.0:
            lo = mid
            break
        if (v > 0) == (f_lo > 0):
            lo = mid
        else:
            hi = mid
        n += 1
    return lo, hi, n


def damped_until(x, tol, limit):
    steps = 0
    last = np.float64(-1.0)
    while np.abs(x).max() > tol:
        x = x * 0.9
        if x.sum() < limit:
            last = x.sum()
            break
        if x.max() > 1e3:
            break
        steps += 1
    return x, steps, last


WHILE_EXITS = [
    # (the guard taken on the first step, never; a root found exactly, bracketed; each break taken, none)
    (newton_guarded, (np.array([1.0, 3.0, 9.0]), 1e-12), [((np.array([1e-9, 3.0]), 1e-12), {}),
                                                          ((np.array([2.0]), 1.0), {}),
                                                          ((np.array([4.0, 2.0], dtype=np.float32), 1e-3), {})]),
    (bisect_sine, (np.float64(2.0), np.float64(4.0), 1e-10), [((np.float64(3.0), np.float64(3.5), 1e-6), {}),
                                                              ((np.float64(0.0), np.float64(1.0), 1e-3), {})]),
    (damped_until, (np.linspace(1.0, 2.0, 8), 1e-3, 3.0), [((np.linspace(1.0, 2.0, 8), 1e-3, -1.0), {}),
                                                           ((np.linspace(1.0, 2.0, 8) * 1e4, 1e-3, -1.0), {}),
                                                           ((np.full(3, 1e-4), 1e-3, 3.0), {})]),
]


@pytest.mark.usefixtures("tier_c_sync")
@pytest.mark.parametrize("fn, args, variants", WHILE_EXITS, ids=[c[0].__name__ for c in WHILE_EXITS])
def test_breaks_inside_the_step(fn, args, variants):
    # (np.sin natively is NumPy 2's strided loop: under NumPy 1.x bisect_sine's loop of elements is left to CPython)
    numpy2 = np.lib.NumpyVersion(np.__version__) >= "2.0.0"
    if native_loops() and (numpy2 or fn is not bisect_sine):
        records = check(fn, *args, variants=variants)
        assert native_runs(records) > 0, "tier C's code never ran"
    else:
        graphs, breaks, fallbacks = NOT_NATIVE[fn.__name__]
        check(fn, *args, variants=variants, graphs=graphs, breaks=breaks, fallbacks=fallbacks)


# (graphs, breaks, fallbacks: a loop of single elements alone is left to CPython where loops are not native)
NOT_NATIVE = {"newton_guarded": (2, 2, 0), "bisect_sine": (1, 2, 1), "damped_until": (2, 2, 0)}


def test_break_as_the_last_statement_with_a_test_at_the_top():
    args, variants = (V[:6], 1e-2), [((np.abs(V[:9]), 1e-2), {}), ((-np.abs(V[:4]), 1e-2), {})]
    if native_loops():
        check(break_inside, *args, variants=variants)
    else:
        check(break_inside, *args, variants=variants, graphs=2, breaks=2)


def test_temporaries_nothing_reads_after_the_loop():
    (text,) = _graph_texts(newton_temporaries, np.array([1.0, 3.0, 9.0]), 1e-12)
    assert text.count("= loop(") == 1, text
    check(newton_temporaries, np.array([1.0, 3.0]), 1e-12,
          variants=[((np.array([1.0, 3.0]), 10.0), {}), ((np.array([5.0], dtype=np.float32), 1e-3), {})])
    check(temporary_read_after, np.array([1.0, 3.0]), 0.1, graphs=2, breaks=1,
          variants=[((np.array([0.01]), 0.1), {})])


def _breaks_over_calls(fn, calls):
    """Each call of ``fn`` translated (one translator, so a float argument seen with a second value is made an input
    of the graph) compared with its plain run; the graph breaks of every translation made."""
    sot.reset()
    translator = sot.translate.new_translator(records=True)
    for args in calls:
        want = fn(*args)
        with sot.capture.capture(translator):
            got = fn(*args)
        for g, w in zip(got, want):
            assert type(g) is type(w)
            assert np.array_equal(g, w), (args, g, w)
    return [b.reason for r in translator.records() for b in r.breaks]


def test_a_tolerance_seen_with_several_values_keeps_the_loop_in_the_graph():
    # `err > tol` with tol a float argument that varies: NumPy compares a float64 value with a Python float in
    # float64 whatever the float, so the comparison stays in the graph (it broke there, and the loop then ran
    # in Python: on the cuda backend, on the host)
    x = np.abs(V) + 1.0
    breaks = _breaks_over_calls(halve_until_small, [(x, tol) for tol in (1e-3, 1e-4, 0.5, 1e-6, 50.0)])
    assert breaks == [], breaks


def test_a_tolerance_against_float32_values_still_breaks():
    # (float32 against a Python float: the dtype NumPy compares in may depend on the float's value under NumPy 1.x)
    x = np.abs(V[:8]).astype(np.float32) + 1
    breaks = _breaks_over_calls(float32_residual, [(x, tol) for tol in (0.25, 0.5, 0.125)])
    assert any("the other side float64" in b for b in breaks), breaks


def halve_below_its_count(x):
    n = int(x.min()) + 2  # (a Python int made in the graph)
    while x.max() > n:
        x = x * 0.5
    return x, n


def test_an_int_made_in_the_graph_compared_with_floats_still_breaks():
    # (past 64 bits NumPy 1.x compares exactly, NumPy 2 in float64)
    x = np.abs(V) * 100 + 1
    breaks = _breaks_over_calls(halve_below_its_count, [(x,), (x * 3,)])
    assert any("the other side float64" in b for b in breaks), breaks
