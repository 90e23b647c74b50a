"""Tier C's whole graphs with the ops it computes through NumPy's own loops (exp, log1p, sin, power, clip: the
loop eager NumPy runs for the dtype, called on C-ordered operands), np.arange, and copies of matrices. Every case
runs plainly and translated - first call, from the cache, and with other arguments of the same types - with tier
C compiled before the first run (``sync``); the two must agree in value and exact type, in the arguments after
the call and in the warnings. Where NumPy gives no loop access (NumPy 1.x) those graphs are not emitted and their
groups run them; the plans say which.
PYTEST_DONT_REWRITE"""


import pytest
from numpy_differential import check, same
from test_native_loops import run_plainly  # (one call's result, arguments after it and warnings)

np = pytest.importorskip("numpy")
sot = pytest.importorskip("sot")
from sot import capture as cap  # noqa: E402

pytestmark = [pytest.mark.skipif(sot.config.backend != "cpu", reason="tier C is the cpu backend's"),
              pytest.mark.usefixtures("tier_c_sync")]

# NumPy's loop access (ufunc._get_strided_loop) with the loops its ufunc calls run: NumPy 2.
LOOPS = int(np.__version__.split(".")[0]) >= 2


# ---- programs ---------------------------------------------------------------------------------------------------


def sigmoid_steps(x, n):
    for _ in range(n):
        x = 1.0 / (1.0 + np.exp(-x)) + np.log1p(x * x)
    return x


def clipped_cubes(x, lo, hi, steps):
    for _ in range(steps):
        x = np.clip(x ** 3 - x, lo, hi) + 0.5 * np.sin(x)
    return x


def softplus_sum(x):
    t = 0.0
    for v in x:
        t += np.log1p(np.exp(v))
    return t


def ramp_walk(n, k):
    state = np.arange(n, dtype=np.int64)
    x = np.zeros(n)
    for _ in range(k):
        state = (state * 1103515245 + 12345) % 2147483648
        x = x + np.where(state % 2 == 0, 1.0, -1.0)
    return x, np.arange(2, n + 3, 2), np.arange(n, 0, -3, dtype=np.float64)


def lu_of_a_copy(A):
    A = A.copy()
    n = A.shape[0]
    for k in range(n - 1):
        A[k + 1:, k] = A[k + 1:, k] / A[k, k]
        A[k + 1:, k + 1:] -= np.outer(A[k + 1:, k], A[k, k + 1:])
    return A


def doubled_first_column(A):
    B = np.copy(A)
    for i in range(B.shape[0]):
        B[i, 0] = B[i, 0] * 2.0
    return B


def escape_counts(cr, ci, maxiter):
    zr = np.zeros_like(cr)
    zi = np.zeros_like(ci)
    count = np.zeros(cr.shape, dtype=np.int64)
    for _ in range(maxiter):
        inside = zr * zr + zi * zi <= 4.0
        zr, zi = np.where(inside, zr * zr - zi * zi + cr, zr), np.where(inside, 2 * zr * zi + ci, zi)
        count += inside  # (in place, a bool mask into int64: computed in int64)
    return count


def narrow_accumulate(x, n):
    acc = np.zeros(x.shape[0], dtype=np.float32)
    for _ in range(n):
        acc += x * 0.5  # (float32 += float64: NumPy computes in float64, then casts)
    return acc


def logistic_fit(X, y, iters):
    w = np.zeros(X.shape[1])
    for _ in range(iters):
        p = 1.0 / (1.0 + np.exp(-(X @ w)))
        w = w - 0.1 * (X.T @ (p - y)) / y.shape[0]  # (X.T: a view; its gemv as NumPy calls it)
    return w


def leapfrog_waves(u0, steps):
    u_prev = u0.copy()
    u = u0.copy()
    u_next = np.zeros_like(u0)
    for _ in range(steps):
        u_next[1:-1] = 2 * u[1:-1] - u_prev[1:-1] + 0.25 * (u[2:] - 2 * u[1:-1] + u[:-2])
        u_prev, u, u_next = u, u_next, u_prev  # (three vectors handed on among themselves)
    return u, u_prev


def doubles_then_overflows(a, k):
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            a[i, j] = a[i, j] * 2
    s = 0
    for i in range(a.shape[0]):
        s += int(a[i, 0]) * k  # (past 2**63 for k = 2**62: the code gives up, its writes put back)
    return s


def shortest_paths(D):
    D = D.copy()
    for k in range(D.shape[0]):
        D = np.minimum(D, D[:, k:k + 1] + D[k:k + 1, :])  # (C-ordered operands: NumPy makes it C-ordered)
    return D


def mixed_layouts(A, steps):
    D = np.zeros(A.shape)
    for _ in range(steps):
        D = np.minimum(D, A) + 1.0  # (A's layout is the argument's: NumPy's result follows it)
    return D


def every_other(A, steps):
    B = np.ones((A.shape[0] * 2, A.shape[1] + 1))
    for _ in range(steps):
        B[::2, 1:] = B[::2, 1:] * 0.5 + A
    return B[::2, 1:] * 2.0


def spd(n, seed):
    a = np.random.default_rng(seed).standard_normal((n, n))
    return a @ a.T + n * np.eye(n)


X = np.random.default_rng(7).standard_normal(40)
GRID = np.arange(24).reshape(4, 6) + 1
XY = np.random.default_rng(8).standard_normal((30, 4))
Y = (XY @ np.array([1.0, -2.0, 0.5, 0.0]) > 0).astype(np.float64)

CASES = [
    (sigmoid_steps, (X, 5), [((X[:3], 2), {}), ((X.astype(np.float32), 4), {}), ((X[::-2], 1), {}),
                             ((np.full(6, -800.0), 1), {})]),  # (exp overflows: NumPy warns)
    (clipped_cubes, (X, -0.5, 0.75, 6), [((X[:5], -2, 2, 3), {}), ((X[::3], 0.0, 0.0, 2), {}),
                                         ((np.append(X[:4], np.nan), -1.0, 1.0, 2), {})]),
    # (NumPy 1.x: a loop of elements with no native form is left to CPython, a break where it starts)
    (softplus_sum, (X,), [((X[:1],), {}), ((X[::-1],), {}), ((np.full(3, 800.0),), {})], 0 if LOOPS else 1),
    (escape_counts, (X, X[::-1] * 0.5, 12), [((X[:3], X[:3], 2), {}), ((X.astype(np.float32), X.astype(np.float32), 5), {})]),
    (narrow_accumulate, (X, 6), [((X[:2], 3), {}), ((X * 1e30, 4), {})]),
    (logistic_fit, (XY, Y, 9), [((XY[:5], Y[:5], 3), {}), ((np.asfortranarray(XY), Y, 4), {}),
                                ((XY[::2], Y[::2], 2), {})]),
    (leapfrog_waves, (X, 9), [((X[:3], 4), {}), ((X[::-1], 2), {}), ((X[:2], 5), {})]),
    (doubles_then_overflows, (GRID[:, ::2], 3), [((GRID[:, :3], 2**62), {}), ((GRID[:, ::2], 2**62), {}),
                                                 ((np.asfortranarray(GRID), 2**62), {}), ((GRID, -(2**61)), {})]),
    (shortest_paths, (np.abs(spd(9, 2)),), [((np.abs(spd(3, 3)),), {}), ((np.asfortranarray(spd(6, 4)),), {}),
                                            ((np.abs(spd(12, 5))[::2, ::3],), {})]),
    (mixed_layouts, (spd(6, 6), 9), [((np.asfortranarray(spd(6, 7)), 9), {}), ((spd(8, 8)[::2], 3), {}),
                                     ((spd(8, 8)[:, ::-2], 4), {})]),
    (every_other, (spd(4, 9), 8), [((np.asfortranarray(spd(5, 1)), 3), {}), ((spd(6, 2)[::2], 2), {})]),
    (ramp_walk, (40, 7), [((0, 3), {}), ((1, 1), {}), ((17, 0), {})]),
    (lu_of_a_copy, (spd(9, 1),), [((spd(3, 2),), {}), ((np.asfortranarray(spd(6, 3)),), {}),
                                  ((spd(12, 4)[::2, ::2],), {})]),
    (doubled_first_column, (spd(6, 5),), [((spd(2, 6),), {}), ((np.asfortranarray(spd(5, 7)),), {}),
                                          ((spd(8, 8)[:, ::2],), {})]),
]


def layouts(value):
    """The C and F flags of each array in ``value`` (a result: an array or a tuple of them)."""
    items = value if isinstance(value, tuple) else (value,)
    return [(v.flags.c_contiguous, v.flags.f_contiguous) for v in items if isinstance(v, np.ndarray)]


@pytest.mark.parametrize("fn,args,variants,breaks", [c if len(c) == 4 else c + (0,) for c in CASES],
                         ids=[c[0].__name__ for c in CASES])
def test_whole_graphs_with_numpy_loops(fn, args, variants, breaks):
    check(fn, *args, breaks=breaks, variants=variants)
    jitted = sot.jit(fn)
    for call_args in [args] + [v[0] for v in variants]:
        for _ in range(2):
            want = run_plainly(fn, call_args)
            got = run_plainly(jitted, call_args)
            assert same(got[0], want[0]) and got[1] == want[1], (got[:2], want[:2])
            assert same(tuple(got[2]), tuple(want[2])), "the arguments after the call differ"
            assert got[3] == want[3], f"warnings {got[3]} != {want[3]}"
            assert layouts(got[0]) == layouts(want[0]), "a result's layout differs from NumPy's"


def whole_of(fn, *args, calls=2):
    """The plan's ``whole`` entry of fn's one graph after ``calls`` translated calls (None: the graph has no loop
    op), and the results."""
    sot.reset()
    cap.clear(fn)
    translator = sot.translate.new_translator(records=True)
    with cap.capture(translator):
        results = [fn(*args) for _ in range(calls)]
    graph = [g for r in translator.records() for g in r["graphs"]][0]
    return graph["compiled"].plan().get("whole"), results


@pytest.mark.parametrize("fn,args", [(sigmoid_steps, (X, 3)), (clipped_cubes, (X, -0.5, 0.75, 2)),
                                     (softplus_sum, (X,)), (logistic_fit, (XY, Y, 20))],
                         ids=["exp_log1p", "power_clip_sin", "scalars", "transpose_gemv_exp"])
def test_numpy_loops_run_natively(fn, args):
    """NumPy 2: the whole graph is one native function that calls NumPy's loops (every call native). NumPy 1.x:
    no whole graph (the loop unrolled, or left to CPython: a graph with no loop op is not native until hot)."""
    whole, results = whole_of(fn, *args)
    assert all(same(r, fn(*args)) for r in results)
    if LOOPS:
        assert whole["status"].startswith("ready") and whole["runs"] == 2, whole
    else:
        assert whole is None or whole["status"].startswith(("not emitted", "waiting")), whole


def test_a_loop_that_warns_gives_up():
    """exp overflowing: NumPy's loop raises the overflow flag; the code gives up and the groups' path warns."""
    if not LOOPS:
        pytest.skip("no NumPy loops in tier C under NumPy 1.x")
    whole, _ = whole_of(sigmoid_steps, np.full(4, -800.0), 3)
    assert whole["gave_up"] == 2 and whole["runs"] == 0 and "floating-point flag" in whole["status"], whole


@pytest.mark.parametrize("layout", ["strided", "rows", "fortran"])
def test_a_give_up_puts_back_what_it_wrote(layout):
    """Arguments written into and then a give-up: their bytes as they were before the run (saved by runs of
    adjacent items: each item, each row, the whole block), then the groups' path computes as plain Python."""
    def grid():
        g = GRID.copy()
        return {"strided": g[:, ::2], "rows": g[:, :3], "fortran": np.asfortranarray(g)}[layout]

    a, b = grid(), grid()
    assert not b.flags.c_contiguous and b.flags.f_contiguous == (layout == "fortran")
    want = doubles_then_overflows(a, 2**62)
    whole, results = whole_of(doubles_then_overflows, b, 2**62, calls=1)
    assert whole["gave_up"] == 1 and whole["runs"] == 0, whole
    assert results[0] == want and np.array_equal(a, b), (results, a, b)


def test_matrices_whose_layout_numpy_keeps_c_ordered():
    """A carried matrix that starts C-ordered and whose steps combine C-ordered operands (slices with positive
    steps included) is C-ordered in NumPy after any number of steps: the whole graph returns it. Where a step
    combines it with an F-ordered argument NumPy still makes it C-ordered (its operands disagree), and the code
    checks that at run time."""
    whole, results = whole_of(shortest_paths, np.asfortranarray(spd(7, 1)))
    assert whole["status"].startswith("ready") and whole["runs"] == 2, whole
    assert results[0].flags.c_contiguous
    whole, results = whole_of(every_other, spd(4, 2), 8)
    assert whole["status"].startswith("ready") and whole["runs"] == 2, whole
    fortran = np.asfortranarray(spd(6, 3))
    whole, results = whole_of(mixed_layouts, fortran, 9)
    # (a C-ordered and an F-ordered operand: NumPy keeps C order - sot_c_result - so the code runs)
    assert whole["status"].startswith("ready") and whole["runs"] == 2, whole
    assert layouts(results[0]) == layouts(mixed_layouts(fortran, 9))


def test_arange_masks_and_matrix_copies_run_natively():
    """count += mask of an int64 count, vectors handed on among themselves and returned, np.arange of Python ints and x.copy() of a matrix (C-ordered whatever x's layout): native on every NumPy.
    np.copy keeps an F-ordered argument's layout: the code gives up, and the result is NumPy's F-ordered one."""
    whole, _ = whole_of(escape_counts, X, X * 0.5, 20)
    assert whole["status"].startswith("ready") and whole["runs"] == 2, whole
    whole, results = whole_of(leapfrog_waves, X, 12)
    assert whole["status"].startswith("ready") and whole["runs"] == 2, whole
    assert same(results[1], leapfrog_waves(X, 12)) and results[1][0] is not results[1][1]
    whole, results = whole_of(ramp_walk, 30, 4)
    assert whole["status"].startswith("ready") and whole["runs"] == 2, whole
    assert same(results[1], ramp_walk(30, 4))
    fortran = np.asfortranarray(spd(7, 9))
    whole, results = whole_of(lu_of_a_copy, fortran)
    assert whole["status"].startswith("ready") and whole["runs"] == 2, whole
    assert results[0].flags.c_contiguous and same(results[0], lu_of_a_copy(fortran))
    whole, results = whole_of(doubled_first_column, spd(5, 1))
    assert whole["runs"] == 2 and results[0].flags.c_contiguous, whole
    whole, results = whole_of(doubled_first_column, fortran)
    assert whole["gave_up"] == 2 and whole["runs"] == 0, whole
    assert results[0].flags.f_contiguous and same(results[0], doubled_first_column(fortran))
