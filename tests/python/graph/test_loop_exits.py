"""Exits from `for` loop ops (loop_exits.cpp): an `if` in the body whose one way leaves the loop - a `break`, with
work before it or not, or a `return` of a local or a constant where the code after the loop returns one too - is the
loop op's exit test, and the rest of the step a cond op. Every case runs plainly and translated (first call, from the
cache, other arguments: the exit taken on the first step, on a later one, never). Where loops are native (the cpu
backend, tier C on) the function is one graph without breaks; elsewhere the `if` breaks the graph as before. Exits
that cannot be captured (the iterator a local, a print before the break, more work after a return's loop) still
agree with plain Python."""

import math

import pytest
from numpy_differential import check, native_loops, native_runs

np = pytest.importorskip("numpy")
sot = pytest.importorskip("sot")

pytestmark = pytest.mark.usefixtures("tier_c_sync")


def rng(seed):
    return np.random.default_rng(seed)


def relax(u, f, tol):
    for it in range(200):
        new = 0.5 * (u[:-2] + u[2:]) - f[1:-1]
        err = np.abs(new - u[1:-1]).max()
        u[1:-1] = new
        if err < tol:
            break
    return u, it


def relax_steps(u, f, tol):
    for it in range(200):
        new = 0.5 * (u[:-2] + u[2:]) - f[1:-1]
        err = np.abs(new - u[1:-1]).max()
        u[1:-1] = new
        if err < tol:
            return it
    return -1


def relax_counted(u, f, tol):
    steps = 0
    for it in range(200):
        new = 0.5 * (u[:-2] + u[2:]) - f[1:-1]
        err = np.abs(new - u[1:-1]).max()
        if err < tol:
            break
        u[1:-1] = new
        steps += 1
    return u, steps


def first_above(x, t):
    k = -1
    for i in range(x.shape[0]):
        if x[i] > t:
            k = i
            break
    return k


def last_below(x, t):
    for i in range(x.shape[0]):
        if x[i] >= t:
            return i
    return x.shape[0]


def newton(a):
    x = a
    for i in range(60):
        x_new = 0.5 * (x + a / x)
        if np.abs(x_new - x) < 1e-12:
            break
        x = x_new
    return x, i


def newton_returns(a):
    x = a
    for _ in range(60):
        x_new = 0.5 * (x + a / x)
        if np.abs(x_new - x) < 1e-12:
            return x_new
        x = x_new
    return x


def babylonian(x, tol):
    for i in range(50):
        x_new = 0.5 * (x + 2.0 / x)
        if np.abs(x_new - x).max() < tol:
            break
        x = x_new
    return x, i


def cos_fixed_point(x):
    for _ in range(100):
        x_new = np.cos(x)
        if np.max(np.abs(x_new - x)) < 1e-12:
            return x_new
        x = x_new
    return x


def rows_until(A, limit):
    total = np.zeros(A.shape[1])
    for i in range(A.shape[0]):
        total = total + A[i]
        if total.sum() > limit:
            break
    return total, i


def grids(n, seed):
    r = rng(seed)
    return r.random(n), r.random(n) * 1e-3


# (the Jacobi sweeps' arguments: their tolerance reached on step 77, never, on step 94, at once, on step 76)
SWEEPS = [(*grids(20, 5), 0.05), (*grids(33, 6), 1e-3), (*grids(10, 7), 1e-3), (*grids(20, 8), 1.0),
          (*grids(12, 9), 0.01)]

CASES = [
    *[(fn, SWEEPS[0], [(a, {}) for a in SWEEPS[1:]]) for fn in (relax, relax_steps, relax_counted)],
    (first_above, (np.arange(50.0), 20.5), [((np.arange(30.0), 100.0), {}), ((np.arange(64.0), -1.0), {}),
                                            ((rng(12).random(40), 0.9), {})]),
    (newton, (np.float64(2.0),), [((np.float64(1e6),), {}), ((np.float64(1.0),), {})]),
    (newton_returns, (np.float64(2.0),), [((np.float64(1e6),), {}), ((np.float64(1.0),), {})]),
    # (tolerances met on a later step, never, at once; a strided argument handed back as it is)
    (babylonian, (np.array([1.0, 3.0, 9.0]), 1e-9), [((np.array([1.0, 3.0]), -1.0), {}),
                                                    ((np.arange(1.0, 13.0)[::3], 10.0), {}),
                                                    ((np.arange(1.0, 13.0)[::2], 1e-3), {})]),
    (cos_fixed_point, (np.linspace(0.0, 1.0, 8),), [((np.linspace(0.0, 1.0, 30),), {}),
                                                    ((np.full(5, 0.7390851332151607),), {})]),
    (rows_until, (rng(13).random((40, 3)), 10.0), [((rng(14).random((40, 3)), 1e9), {}),
                                                   ((rng(15).random((25, 3)), -1.0), {})]),
]


ELEMENT_LOOPS = (first_above, newton, newton_returns)  # (elsewhere left to CPython: the function runs as is)


@pytest.mark.parametrize("fn, args, variants", CASES, ids=[c[0].__name__ for c in CASES])
def test_loops_that_may_leave_early(fn, args, variants):
    if native_loops():
        records = check(fn, *args, variants=variants)
        # (np.cos natively is NumPy 2's strided loop: under NumPy 1.x the loop op runs its own path)
        if fn is not cos_fixed_point or np.lib.NumpyVersion(np.__version__) >= "2.0.0":
            assert native_runs(records) > 0, "tier C's code never ran"
    elif fn in ELEMENT_LOOPS:
        check(fn, *args, variants=variants, graphs=0, breaks=1, fallbacks=1)
    else:
        check(fn, *args, variants=variants, breaks=1)


def iterator_kept(x, t):
    it = iter(range(x.shape[0]))
    for i in it:
        if x[i] > t:
            break
    return i, list(it)


def printed_before_break(x, t):
    for i in range(x.shape[0]):
        if x[i] > t:
            print("found", i)
            break
    return i


def more_after_return(x, t):
    for i in range(x.shape[0]):
        if x[i] > t:
            return i
    y = x * 2.0
    return int(y.argmax())


def in_inner_loop(A, t):
    found = 0
    for r in range(A.shape[0]):
        for c in range(A.shape[1]):
            if A[r, c] > t:
                found += 1
                break
    return found


@pytest.mark.parametrize("fn", [iterator_kept, printed_before_break, more_after_return, in_inner_loop, last_below])
def test_exits_not_captured_or_nested_agree_with_plain(fn, capsys):
    # (last_below's code after the loop computes: its return is not captured)
    x = rng(16).random(40)
    A = rng(17).random((20, 30))
    for t in (0.5, 0.99, 2.0):
        args = (A, t) if fn is in_inner_loop else (x.copy(), t)
        want = fn(*args)
        plain_out = capsys.readouterr().out
        sot.reset()
        for _ in range(2):
            got = sot.jit(fn)(*args)
            assert got == want and type(got) is type(want)
            assert capsys.readouterr().out == plain_out


# Exits past the first, and inside another `if` of the body (a `break` each): the loop's tests are the cond ops'
# outputs, the ways without the exit handing on one that goes on.


def either_side(x, t):
    k = -1
    for i in range(x.shape[0]):
        if x[i] > t:
            k = i
            break
        if x[i] < -t:
            k = i + 1000
            break
    return k


def inside_band(x, t):
    s = np.float64(0.0)
    for i in range(x.shape[0]):
        if x[i] > t:
            break
        if x[i] < -t:
            break
        s += x[i]
    return s, i


def skip_then_stop(x, t):
    s = np.float64(0.0)
    for i in range(x.shape[0]):
        if x[i] < 0:
            continue
        if x[i] > t:
            break
        s += x[i]
    return s


def stop_under_if(x, t, u):
    k = -1
    n = 0
    for i in range(x.shape[0]):
        if x[i] > u:
            n += 1
            if x[i] > t:
                k = i
                break
    return k, n


def stop_under_if_then_work(x, t, u):
    s = np.float64(0.0)
    for i in range(x.shape[0]):
        if x[i] > u:
            if x[i] * 2.0 > t:
                break
            s += x[i]
        s += 1.0
    return s


def stop_in_else(x, t):
    total = np.zeros(2)
    for i in range(x.shape[0]):
        if x[i] < 0:
            total[0] += x[i]
        else:
            if total[1] + x[i] > t:
                break
            total[1] += x[i]
    return total


def three_ways_out(A, t):
    found = 0
    for r in range(A.shape[0]):
        row = A[r]
        if row.max() > t:
            found = 1
            break
        if row.min() < -t:
            found = 2
            break
        if row.sum() > 2.0 * t:
            found = 3
            break
    return found, r


def ramp(n, first, later):
    # (n values; position `first` over the threshold 1.5, position `later` under -1.5, -1: none)
    x = np.linspace(-1.0, 1.0, n)
    if first >= 0:
        x[first] = 2.0
    if later >= 0:
        x[later] = -2.0
    return x


MORE_EXITS = [
    (either_side, (ramp(50, 30, 40), 1.5), [((ramp(40, -1, 10), 1.5), {}), ((ramp(64, -1, -1), 1.5), {}),
                                           ((ramp(20, 0, 5), 1.5), {}), ((ramp(33, -1, 0), 1.5), {})]),
    (inside_band, (ramp(50, 30, 40), 1.5), [((ramp(40, -1, 10), 1.5), {}), ((ramp(64, -1, -1), 1.5), {}),
                                           ((ramp(20, 0, 5), 1.5), {})]),
    (skip_then_stop, (ramp(50, 30, -1), 1.5), [((ramp(40, -1, 10), 1.5), {}), ((ramp(21, 20, -1), 1.5), {}),
                                              ((rng(20).standard_normal(45), 1.0), {})]),
    (stop_under_if, (rng(21).standard_normal(60), 1.5, 0.5), [((rng(22).standard_normal(30), 9.0, 0.5), {}),
                                                             ((rng(23).standard_normal(30), -9.0, -9.0), {}),
                                                             ((rng(24).standard_normal(70), 1.0, 2.0), {})]),
    (stop_under_if_then_work, (rng(25).standard_normal(60), 3.0, 0.5),
     [((rng(26).standard_normal(30), 99.0, 0.5), {}), ((rng(27).standard_normal(30), -9.0, -9.0), {})]),
    (stop_in_else, (rng(28).standard_normal(60), 5.0), [((rng(29).standard_normal(30), 1e9), {}),
                                                       ((rng(30).standard_normal(40), -1.0), {})]),
    (three_ways_out, (rng(31).standard_normal((30, 4)), 2.5),
     [((rng(32).standard_normal((30, 4)), 9.0), {}), ((rng(33).random((30, 4)), 1.2), {}),
      ((-rng(34).random((30, 4)), 0.9), {}), ((rng(35).standard_normal((25, 4)), 0.1), {})]),
]


# The loop variable, and ints made from it, as values an `if`'s ways hand on (no exit).


def last_positive(x):
    k = -1
    for i in range(x.shape[0]):
        if x[i] > 0:
            k = i
    return k


def mirrored_last_positive(x):
    k = 0
    for i in range(x.shape[0]):
        j = -i
        if x[i] > 0:
            k = j
        elif x[i] < -1.0:
            k = ~i
    return k


def negated_first_above(x, t):
    k = 1
    for i in range(x.shape[0]):
        if x[i] > t:
            k = -i
            break
    return k


MORE_EXITS += [
    (last_positive, (rng(36).standard_normal(50),), [((-rng(37).random(20),), {}), ((rng(38).random(9),), {})]),
    (mirrored_last_positive, (rng(39).standard_normal(50),), [((-rng(40).random(20) * 3,), {}),
                                                              ((rng(41).random(9),), {})]),
    (negated_first_above, (ramp(50, 30, -1), 1.5), [((ramp(40, -1, -1), 1.5), {}), ((ramp(20, 0, -1), 1.5), {})]),
]


@pytest.mark.parametrize("fn, args, variants", MORE_EXITS, ids=[c[0].__name__ for c in MORE_EXITS])
def test_second_exits_and_exits_inside_ifs(fn, args, variants):
    if native_loops():
        records = check(fn, *args, variants=variants)
        assert native_runs(records) > 0, "tier C's code never ran"
    elif fn in (stop_in_else, three_ways_out):  # (array work: a graph, broken at the `if`)
        check(fn, *args, variants=variants, breaks=1)
    else:
        check(fn, *args, variants=variants, graphs=0, breaks=1, fallbacks=1)


# Exits on a test of floats (np.isnan, np.isfinite, math.isfinite: tier C's own forms, stop 64) and temporaries the
# rest of the step binds after the test (`grad` below: bound before the loop nowhere, read nowhere after it).
def descend_until_not_finite(X, y, lr):
    w = np.zeros(X.shape[1])
    for epoch in range(40):
        resid = X @ w - y
        loss = 0.5 * np.mean(resid ** 2)
        if not math.isfinite(loss):
            break
        grad = X.T @ resid / len(y)
        w = w - lr * grad
    return w, epoch


def grow_until_nan(x, r):
    for step in range(30):
        x = x * r - 1.0
        if np.isnan(x.sum()):
            break
        t = np.sqrt(np.abs(x))
        x = x + t * 0.0
    return x, step


def grow_while_finite(x, r):
    total = 0.0
    for step in range(30):
        x = x * r
        s = x.max()
        if not np.isfinite(s):
            break
        total += float(s)
    return x, total, step


def temporary_read_in_step(x, n):
    # (bound in one way of an `if` and read later in the same step: not a loop op; plain Python raises
    # UnboundLocalError where the first test is false)
    out = x.copy()
    for i in range(n):
        if out[0] > 0:
            tmp = out * 0.5
        out = tmp + 1.0
    return out


_X = rng(51).standard_normal((20, 3))
_Y = rng(52).standard_normal(20)
FLOAT_TESTS = [
    # (lr 1.5 diverges to inf and then nan on a later step; 0.01 never leaves; nan data leaves at once)
    (descend_until_not_finite, (_X, _Y, 0.01), [((_X, _Y, 1.5), {}), ((_X, np.full(20, np.nan), 0.01), {}),
                                               ((_X[:, :2], _Y * 1e200, 3.0), {})]),
    (grow_until_nan, (np.ones(4), 1.0), [((np.full(3, 1e300), 1e10), {}), ((np.array([np.nan, 1.0]), 1.0), {}),
                                         ((np.full(2, np.inf), 1.0), {})]),
    (grow_while_finite, (np.ones(4), 2.0), [((np.full(3, 1e300), 1e10), {}), ((np.ones(2), 1e30), {}),
                                            ((np.array([np.inf, 1.0]), 1.0), {})]),
]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("fn, args, variants", FLOAT_TESTS, ids=[c[0].__name__ for c in FLOAT_TESTS])
def test_exits_on_float_tests_and_temporaries(fn, args, variants):
    if native_loops():
        records = check(fn, *args, variants=variants)
        assert native_runs(records) > 0, "tier C's code never ran"
    else:
        check(fn, *args, variants=variants, breaks=1)


def test_temporary_read_later_in_the_step_is_no_loop_op():
    check(temporary_read_in_step, np.ones(3), 20, variants=[((-np.ones(3), 20), {}), ((np.ones(2), 5), {})],
          breaks=1)


# A Python float that a step makes a float64 NumPy scalar (`total += x.sum()`, `b -= lr * err.mean()`) in a loop
# with an exit: the first step cannot be unrolled (its `if` would break the graph), so the float is np.float64 from
# the loop's entry, where every op reading it is NumPy's add, subtract or multiply with a float64 value (stop 64).
# An exit before the float's new value would hand the Python float on: no loop op there.
def total_until(x, n, limit):
    total = 0.0
    for i in range(n):
        x = x * 1.1
        total += x.sum()
        if total > limit:
            break
    return x, total, i


def bias_until_fit(X, y, n, tol):
    w = np.zeros(X.shape[1])
    b = 0.0
    for i in range(n):
        err = X @ w + b - y
        w = w - 0.1 * X.T @ err / len(y)
        b -= 0.1 * err.mean()
        if np.abs(err).max() < tol:
            break
    return w, b, i


def total_after_the_exit(x, n, limit):
    total = 0.0
    for i in range(n):
        x = x * 1.1
        if x.sum() > limit:
            break
        total += x.sum()
    return x, total, i


PROMOTED = [
    (total_until, (np.ones(3), 40, 50.0), [((np.ones(3), 40, 1.0), {}), ((np.ones(2), 30, 1e300), {})]),
    (bias_until_fit, (_X, _Y, 40, 0.5), [((_X, _Y, 40, 1e9), {}), ((_X[:, :2], _Y, 25, -1.0), {})]),
]


@pytest.mark.parametrize("fn, args, variants", PROMOTED, ids=[c[0].__name__ for c in PROMOTED])
def test_python_floats_made_numpy_scalars_in_loops_with_exits(fn, args, variants):
    if native_loops():
        records = check(fn, *args, variants=variants)
        # (X.T @ err, a matrix by a vector: the loop op's own path, where tier C gives up on it)
        assert fn is bias_until_fit or native_runs(records) > 0, "tier C's code never ran"
    else:
        check(fn, *args, variants=variants, breaks=1)


def test_a_python_float_handed_on_by_an_exit_is_not_made_numpy():
    check(total_after_the_exit, np.ones(3), 40, 50.0, variants=[((np.ones(3), 40, 1.0), {})], breaks=1)
