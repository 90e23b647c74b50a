"""math's functions of one number (``math.sqrt(A[j, j] - s)``, ``math.exp(-x[i])``) on NumPy scalars and Python
numbers of the graph: each an op that calls the function itself where the graph runs, its result a Python float
made there, which a store puts into a float64 array as NumPy does. On the cpu backend tier C computes them with
the C library's functions that CPython's math module calls, and gives up where CPython raises (a negative square
root, a logarithm of zero, an exponential that overflows): the loop op's own path then raises ValueError or
OverflowError as plain Python does. Every case runs plainly and translated - first call, from the cache, and
with other arguments of the same types - and the two must agree in value and exact type, in the arguments after
the call and in the exception raised.
PYTEST_DONT_REWRITE"""

import math

import pytest
from numpy_differential import check, native_loops, native_runs

np = pytest.importorskip("numpy")
sot = pytest.importorskip("sot")

pytestmark = pytest.mark.usefixtures("tier_c_sync")


def rng(seed):
    return np.random.default_rng(seed)


def spd(n, seed):
    a = rng(seed).standard_normal((n, n))
    return a @ a.T + n * np.eye(n)


# ---- programs ---------------------------------------------------------------------------------------------------


def roots(x):
    out = np.zeros_like(x)
    for i in range(x.shape[0]):
        out[i] = math.sqrt(x[i])
    return out


def each_function(x):
    out = np.zeros((x.shape[0], 10))
    for i in range(x.shape[0]):
        v = x[i]
        out[i, 0] = math.sqrt(v)
        out[i, 1] = math.exp(-v)
        out[i, 2] = math.log(v)
        out[i, 3] = math.log10(v)
        out[i, 4] = math.sin(v)
        out[i, 5] = math.cos(v)
        out[i, 6] = math.tan(v)
        out[i, 7] = math.atan(v)
        out[i, 8] = math.tanh(v)
        out[i, 9] = math.fabs(-v) + math.log2(v) + math.expm1(v * 0.1)
    return out


def cholesky_rows(A):
    n = A.shape[0]
    L = np.zeros_like(A)
    for j in range(n):
        L[j, j] = math.sqrt(A[j, j] - L[j, :j] @ L[j, :j])
        for i in range(j + 1, n):
            L[i, j] = (A[i, j] - L[i, :j] @ L[j, :j]) / L[j, j]
    return L


def float_sum(x):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + math.sqrt(float(x[i]) * 2.0)
    return s


def of_an_int(x):
    return math.sqrt(int(x.sum())), math.exp(x.max())


def log_steps(x):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = math.log(x[i])
    return out


def exp_steps(x):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = math.exp(x[i])
    return out


def int_store(x):
    out = np.zeros(x.shape[0], dtype=np.int64)
    for i in range(x.shape[0]):
        out[i] = int(x[i] * 10.0) + 1
    return out


def float_of_ints(x, base):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = float(base + 3 * i) - float(True) + x[i]  # (past 2**53: rounded to nearest even)
    return out


# ---- cases ------------------------------------------------------------------------------------------------------


def floats(seed, *shape):
    return rng(seed).standard_normal(shape)


CASES = [
    (roots, (np.abs(floats(1, 40)),), [((np.abs(floats(2, 7)),), {}), ((np.array([0.0, -0.0, np.inf, np.nan]),), {})]),
    (each_function, (np.abs(floats(3, 20)) + 0.1,), [((np.abs(floats(4, 5)) + 2.0,), {})]),
    (float_sum, (np.abs(floats(5, 50)),), [((np.abs(floats(6, 3)),), {})]),
    (int_store, (floats(7, 30),), [((floats(8, 4) * 100,), {})]),
    (float_of_ints, (floats(9, 30), 2**53 - 40), [((floats(10, 20), -(2**62) - 7), {}), ((floats(11, 9), 5), {})]),
]


@pytest.mark.parametrize("fn, args, variants", CASES, ids=[c[0].__name__ for c in CASES])
def test_math_functions_in_loops(fn, args, variants):
    """Native loop ops on the cpu backend; elsewhere loops of single elements are left to CPython (a break)."""
    native = native_loops()
    # (float_sum makes no array before its loop: no graph at all where the loop is CPython's)
    records = check(fn, *args, variants=variants, breaks=0 if native else 1,
                    graphs=1 if native or fn is not float_sum else 0)
    if native_loops():
        assert native_runs(records) > 0, "tier C's code never ran"


def test_a_cholesky_factor_of_square_roots_and_per_step_slices():
    check(cholesky_rows, spd(12, 9), variants=[((spd(5, 10),), {}), ((spd(3, 11),), {})])


def test_math_of_numbers_made_from_arrays():
    check(of_an_int, np.arange(10.0), variants=[((np.arange(3.0),), {})])


@pytest.mark.parametrize("fn, bad", [
    (roots, np.array([4.0, 1.0, -1.0, 9.0])),  # ValueError: math domain error
    (log_steps, np.array([2.0, 0.0, 1.0])),  # ValueError
    (exp_steps, np.array([1.0, 1000.0])),  # OverflowError: math range error
])
def test_math_raises_as_plain_where_cpython_raises(fn, bad):
    """A first call that raises; then calls that raise and that do not, from the cache: each as plain."""
    ok = np.abs(floats(12, 6)) + 0.5
    check(fn, bad, variants=[((ok,), {}), ((bad * 2.0,), {})])


def noted(x):
    print("before")
    return math.sqrt(x.sum())


def test_math_after_a_side_effect_breaks_before_it_could_raise():
    """A print waits to be replayed after the graph: math.sqrt, which may raise, is left to the code after it."""
    check(noted, np.arange(4.0), graphs=1, breaks=1, variants=[((-np.arange(4.0) - 1.0,), {})])


def finiteness(x, log):
    log.append(len(log))  # (a side effect waiting to be replayed: the predicates never raise, they stay in the graph)
    s = x.sum()
    return math.isfinite(s), math.isnan(x.max()), math.isinf(float(x.min())), math.isfinite(x.argmax())


def test_math_predicates_of_numbers_made_from_arrays():
    """math.isfinite, isnan and isinf of a NumPy scalar or a Python float of the graph: Python bools made where the
    graph runs, none of them raising (issue 36)."""
    bad = np.array([1.0, np.inf, np.nan])
    check(finiteness, np.arange(4.0), [], graphs=1, breaks=0,
          variants=[((bad, [1]), {}), ((np.array([-np.inf, 2.0]), []), {}), ((np.ones(3, np.float32), []), {})])
