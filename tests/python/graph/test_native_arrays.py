"""Loops that make arrays of rows and slices (``S[i] = S[i - 1] + A[i]``, ``y += w[k] * x[k:k + n]``,
``(x[:n - lag] * x[lag:]).sum()``): on the cpu backend tier C computes them natively - each element by NumPy's
rule for its dtype, shapes broadcast as NumPy's, stores copied where they may overlap, sums as NumPy's pairwise
sum - or gives up to the loop op's own path. Every case runs plainly and translated - first call, from the cache,
and with other arguments of the same types - with tier C compiled before the loop's first run (``sync``): values
and exact types, arguments after the call, exceptions and warnings must agree, bit for bit.
PYTEST_DONT_REWRITE"""

import warnings

import pytest
from numpy_differential import check, native_loops, native_runs, tier_c_entries, tier_c_loops

np = pytest.importorskip("numpy")
sot = pytest.importorskip("sot")
from sot import capture as cap  # noqa: E402

cpu_only = pytest.mark.skipif(sot.config.backend != "cpu", reason="tier C is the cpu backend's")

pytestmark = pytest.mark.usefixtures("tier_c_sync")


def rng(seed):
    return np.random.default_rng(seed)


# ---- programs ---------------------------------------------------------------------------------------------------


def prefix_rows(A):
    S = np.empty_like(A)
    S[0] = A[0]
    for i in range(1, A.shape[0]):
        S[i] = S[i - 1] + A[i]
    return S


def row_sweeps(u, sweeps):
    for _ in range(sweeps):
        for i in range(1, u.shape[0]):
            u[i] = 0.5 * u[i] + 0.5 * u[i - 1]
    return u


def conv1d_taps(x, w):
    n = x.shape[0] - w.shape[0] + 1
    y = np.zeros(n)
    for k in range(w.shape[0]):
        y += w[k] * x[k:k + n]
    return y


def autocorrelation(x, max_lag):
    n = x.shape[0]
    x = x - x.mean()
    denom = (x * x).sum()
    ac = np.empty(max_lag)
    for lag in range(max_lag):
        ac[lag] = (x[:n - lag] * x[lag:]).sum() / denom
    return ac


def row_means(X):
    out = np.zeros(X.shape[0])
    for i in range(X.shape[0]):
        out[i] = X[i].mean() + np.sum(X[i, ::2])
    return out


def clipped_rows(A, lo):
    B = np.zeros_like(A)
    for i in range(A.shape[0]):
        B[i] = A[i] * (A[i] > lo)
        B[i, 1:3] = -1.0
    return B


def shifted_copies(x):
    for i in range(1, x.shape[0] - 4):
        x[i:i + 4] = x[i - 1:i + 3] * 0.5  # (overlapping source and target: NumPy reads a copy)
    return x


def broadcast_rows(A, w):
    out = np.empty_like(A)
    for i in range(A.shape[0]):
        out[i] = np.sqrt(np.abs(A[i] - w)) / (1.0 + w * w)
    return out


def int_rows(A):
    S = np.zeros_like(A)
    for i in range(1, A.shape[0]):
        S[i] = S[i - 1] * 3 + A[i] - 1
    return S


def float32_rows(A):
    S = np.zeros_like(A)
    for i in range(1, A.shape[0]):
        S[i] = S[i - 1] * 0.5 + A[i]
    return S


def mixed_in_place(y, x):
    for k in range(4):
        y += x[k:k + y.shape[0]]  # (float32 += float64: computed in float64 by NumPy, not emitted here)
    return y


def stored_compare(A, t):
    M = np.zeros(A.shape, dtype=bool)
    for i in range(A.shape[0]):
        M[i] = A[i] >= t
    return M


def ema_rows(X, a):
    m = X[0] * 1.0
    for i in range(1, X.shape[0]):
        m = a * X[i] + (1 - a) * m  # (a vector carried from step to step)
    return m


def gram_schmidt(A):
    m, n = A.shape
    Q = np.zeros((m, n))
    for j in range(n):
        v = A[:, j].copy()
        for i in range(j):
            v = v - (Q[:, i] @ A[:, j]) * Q[:, i]
        Q[:, j] = v / np.linalg.norm(v)
    return Q


def halvings(v, t):
    k = 0
    while v[0] > t:  # (no step at all where the test fails at once: the result is the argument itself)
        v = v * 0.5
        k += 1
    return v, k


def shrinking(v, n):
    for _ in range(n):
        v = v[1:] + 1.0  # (a new length on every step: the native run gives up)
    return v


def carried_in_place(v, w, n):
    for _ in range(n):
        v += w  # (the argument itself changes: not a new array, left to the loop op's own path)
    return v


def int_walk(state, steps):
    for _ in range(steps):
        state = state * 3 + 1
    return state


def jacobi_steps(u, steps):
    for _ in range(steps):  # (2-D slices: the inner rows contiguous, the columns strided)
        u[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
    return u


def column_steps(u, steps):
    for _ in range(steps):  # (columns: every array strided)
        u[1:-1, 0] = 0.5 * (u[:-2, 1] + u[2:, 1])
    return u


def lcg_walk(x, steps):
    state = np.arange(x.shape[0], dtype=np.int64)
    for _ in range(steps):
        state = (state * 1103515245 + 12345) % 2147483648
        x = x + np.where(state % 2 == 0, 1.0, -1.0)
    return x, state


def floor_rows(A, d):
    out = np.zeros_like(A)
    for i in range(A.shape[0]):
        out[i] = A[i] // d + A[i] % d - (A[i] % -d) // 3
    return out


def power_steps(A, v, iters):
    for _ in range(iters):
        w = A @ v  # (a last value nothing reads after the loop: not handed on)
        v = w / np.linalg.norm(w)
    return v


def power_both(A, v, iters):
    for _ in range(iters):
        w = A @ v
        v = w / np.linalg.norm(w)
    return v, w  # (the last w read after the loop: an array tier C does not hand on)


def power_then_print(A, v, iters):
    for _ in range(iters):
        w = A @ v
        v = 0.5 * w
    print(w.shape)  # (a graph break: the frame holds w after the loop)
    return v


def min_plus_steps(D):
    D = D.copy()
    for k in range(D.shape[0]):
        D = np.minimum(D, D[:, k:k + 1] + D[k:k + 1, :])
    return D


def flip_blend(u, steps):
    for _ in range(steps):
        u = np.maximum(0.5 * u + 0.25 * u[::-1, :], -1.0)
    return u


def life_steps(grid, steps):
    for _ in range(steps):
        n = (grid[:-2, :-2] + grid[:-2, 1:-1] + grid[:-2, 2:] + grid[1:-1, :-2] + grid[1:-1, 2:]
             + grid[2:, :-2] + grid[2:, 1:-1] + grid[2:, 2:])
        inner = grid[1:-1, 1:-1]
        grid[1:-1, 1:-1] = ((n == 3) | ((inner == 1) & (n == 2))).astype(grid.dtype)
    return grid


def bit_mixing(a, b, steps):
    for _ in range(steps):
        a = (a ^ (b & 7)) | ~(a & b)
        b = (~(a > 2)).astype(np.int64) + b
    return a, b


def casts(x, steps):
    y = np.zeros(x.shape[0], dtype=np.float32)
    for k in range(steps):
        y = (x * k).astype(np.float32) + y
    return y


def rotating(u0, steps):
    u_prev = u0.copy()
    u = u0.copy()
    u_next = np.zeros_like(u0)
    for _ in range(steps):
        u_next[1:-1] = 2 * u[1:-1] - u_prev[1:-1] + 0.25 * (u[2:] - 2 * u[1:-1] + u[:-2])
        u_prev, u, u_next = u, u_next, u_prev
    return u, u_prev, u_next


def swap_args(a, b, steps):
    for k in range(steps):
        a[k % a.shape[0]] += 1.0
        a, b = b, a
    return a, b


def swap_fresh(a, b, steps):
    for _ in range(steps):
        a, b = b, a + 1.0  # (a handed on as b, which each step makes anew: not native)
    return a, b


def mixed_rotation(x, steps):
    total = 0.0
    for _ in range(steps):
        a = x
        b = x * 0.5
        for k in range(20):
            b[:2] += 1.0  # (through b into x on odd steps: x is written)
            a, b = b, a
        total += a.sum()
    return total


def pair_forces(pos, vel, mass, steps):
    dt = 0.01
    for _ in range(steps):
        d = pos[None, :, :] - pos[:, None, :]
        r2 = (d * d).sum(axis=2) + 0.01
        acc = (d * (mass[None, :] / (r2 * np.sqrt(r2)))[:, :, None]).sum(axis=1)
        vel = vel + dt * acc
        pos = pos + dt * vel
    return pos, vel


def axis_sums(x, steps):
    total = np.zeros(x.shape[1])
    for k in range(steps):
        y = x * (k + 1.0)
        total = total + y.sum(axis=0) - y.sum(axis=-2) + y.sum(axis=1).sum()
    return total


def row_products(A, X):
    Y = np.empty((X.shape[0], A.shape[0]))
    for i in range(X.shape[0]):
        Y[i] = A @ X[i] + 1.0
    return Y


def lu_steps(A):
    A = A.copy()
    n = A.shape[0]
    for k in range(n - 1):
        A[k + 1:, k] = A[k + 1:, k] / A[k, k]
        A[k + 1:, k + 1:] -= np.outer(A[k + 1:, k], A[k, k + 1:])
    return A


def outer_sums(X, w):
    acc = np.zeros((X.shape[1], w.shape[0]), dtype=X.dtype)
    for i in range(X.shape[0]):
        acc = acc + np.outer(X[i], w)
    return acc


def column_sums_below(A):
    n = A.shape[0]
    s = np.zeros(n)
    for j in range(n):
        for i in range(j + 1, n):  # (a range of the outer loop's int: its steps known where it runs)
            s[j] += A[i, j]
    return s


def forward_sub_loops(L, b):
    n = b.shape[0]
    x = np.zeros(n)
    for i in range(n):
        s = b[i]
        for j in range(i):  # (no steps at all when i is 0: s stays b[0])
            s = s - L[i, j] * x[j]
        x[i] = s / L[i, i]
    return x


def gauss_eliminate(A, b):
    A = A.copy()
    b = b.copy()
    n = b.shape[0]
    for k in range(n - 1):
        for i in range(k + 1, n):
            f = A[i, k] / A[k, k]
            for j in range(k, n):
                A[i, j] = A[i, j] - f * A[k, j]
            b[i] = b[i] - f * b[k]
    return A, b


def inner_index_read_after(x):
    out = np.zeros(x.shape[0])
    for j in range(x.shape[0]):
        i = -1
        for i in range(j):
            out[j] += x[i]
        out[j] += i  # (the inner loop's variable read after it: not a loop op of run-time bounds)
    return out


def newton_sqrt(a):
    x = a.copy()
    while np.max(np.abs(x * x - a)) > 1e-10:  # (np.max of a vector: tier C compares its items in order)
        x = 0.5 * (x + a / x)
    return x


def extremes(x, steps):
    lo = x.min()
    hi = np.max(x)
    for _ in range(steps):
        x = x * 0.5
        lo = lo + x.min()  # (a NaN or zeros of both signs: the native run gives up, NumPy's answer)
        hi = hi + np.max(x)
    return lo, hi


# ---- cases ------------------------------------------------------------------------------------------------------


def floats(seed, *shape):
    return rng(seed).standard_normal(shape)


CASES = [
    (prefix_rows, (floats(1, 40, 16),), [((floats(2, 23, 5),), {}), ((floats(3, 9, 16),), {})]),
    (prefix_rows, (floats(4, 12, 3),), None),  # (a short loop: native too)
    (row_sweeps, (floats(5, 30, 8), 3), [((floats(6, 17, 4), 2), {})]),
    (conv1d_taps, (floats(7, 200), floats(8, 9)), [((floats(9, 57), floats(10, 5)), {})]),
    (autocorrelation, (floats(11, 300), 16), [((floats(12, 129), 20), {})]),
    (row_means, (floats(13, 30, 20),), [((floats(14, 11, 7),), {})]),
    (clipped_rows, (floats(15, 25, 6), 0.1), [((floats(16, 8, 9), -0.3), {})]),
    (shifted_copies, (floats(17, 40),), [((floats(18, 19),), {})]),
    (broadcast_rows, (floats(19, 30, 12), floats(20, 12)), [((floats(21, 6, 3), floats(22, 3)), {})]),
    (int_rows, (rng(23).integers(-9, 9, (30, 6)),), [((rng(24).integers(-9, 9, (11, 4)),), {})]),
    (float32_rows, (floats(25, 30, 6).astype(np.float32),), None),
    (mixed_in_place, (floats(26, 20).astype(np.float32), floats(27, 30)), None),
    (stored_compare, (floats(28, 20, 7), 0.25), [((floats(29, 5, 3), -1.0), {})]),
    (ema_rows, (floats(35, 40, 6), 0.3), [((floats(36, 9, 2), 0.9), {})]),
    (gram_schmidt, (floats(37, 24, 12),), [((floats(38, 9, 5),), {})]),
    (halvings, (np.abs(floats(39, 5)) + 64.0, 1.0), [((np.zeros(3), 1.0), {}), ((np.full(4, 3.0), 1.0), {})]),
    (shrinking, (floats(40, 30), 20), [((floats(41, 12), 5), {})]),
    (carried_in_place, (floats(42, 6), floats(43, 6), 30), None),
    (int_walk, (np.arange(5), 20), [((np.arange(3), 50), {})]),  # (50 steps overflow: NumPy wraps)
    (newton_sqrt, (np.abs(floats(130, 40)) + 1.0,), [((np.abs(floats(131, 3)) * 50 + 1.0,), {})]),
    (extremes, (floats(132, 30), 20), [((np.array([0.5, np.nan, 1.0]), 20), {}), ((np.array([-0.0, 0.0, -0.0]), 20), {}),
                                       ((rng(133).integers(-9, 9, 12), 20), {}), ((np.zeros(0), 20), {})]),
]

ELEMENT_LOOPS = (column_sums_below, forward_sub_loops)
NOT_NATIVE = (mixed_in_place, shrinking, carried_in_place, power_both, swap_fresh, mixed_rotation)
# (past 16,384 items an array is left to the loop op's own path: tier B's fused kernels)
CASES += [
    (jacobi_steps, (floats(45, 20, 24), 10), [((floats(46, 9, 5), 3), {}), ((floats(47, 140, 130), 2), {})]),
    (column_steps, (floats(48, 30, 4), 5), [((floats(49, 7, 3), 2), {})]),
    (lcg_walk, (np.zeros(20), 30), [((np.zeros(7), 3), {})]),
    (floor_rows, (rng(50).integers(-50, 50, (20, 6)), 7), [((rng(51).integers(-9, 9, (5, 3)), -4), {})]),
    (power_steps, (floats(54, 12, 12), np.ones(12), 20),
     [((np.asfortranarray(floats(55, 7, 7)), floats(56, 14)[::2], 5), {}), ((floats(57, 30, 30), np.ones(30), 0), {})]),
    (power_both, (floats(58, 6, 6), np.ones(6), 4), None),
    (min_plus_steps, (np.abs(floats(65, 16, 16)),), [((np.abs(floats(66, 30, 30)),), {}),
                                                     ((rng(67).integers(0, 99, (20, 20)),), {})]),
    (flip_blend, (floats(68, 6, 5), 30), [((floats(69, 3, 2, 4), 20), {}), ((floats(72, 4, 4), 0), {})]),
    (life_steps, ((rng(75).random((12, 12)) < 0.3).astype(np.int64), 20),
     [(((rng(76).random((30, 9)) < 0.5).astype(np.int64), 5), {}), ((np.ones((3, 3), dtype=np.int64), 2), {})]),
    (bit_mixing, (rng(77).integers(-50, 50, 10), rng(78).integers(0, 9, 10), 25),
     [((rng(79).integers(-9, 9, 4), rng(80).integers(-3, 3, 4), 40), {})]),
    (casts, (floats(81, 9), 30), [((floats(82, 3) * 1e3, 50), {})]),
    (rotating, (floats(83, 40), 30), [((floats(84, 7), 31), {}), ((floats(85, 5), 0), {}), ((floats(86, 9), 1), {})]),
    (swap_args, (floats(87, 5), floats(88, 5), 20), [((floats(89, 3), floats(90, 3), 21), {})]),
    (swap_fresh, (floats(91, 6), floats(92, 6), 20), None),
    (mixed_rotation, (floats(104, 5), 20), [((floats(105, 3), 17), {})]),
    (pair_forces, (floats(95, 12, 2), floats(96, 12, 2) * 0.1, np.abs(floats(97, 12)) + 0.5, 20),
     [((floats(98, 5, 3), floats(99, 5, 3), np.ones(5), 17), {})]),
    (axis_sums, (floats(100, 9, 4), 20), [((floats(101, 3, 1), 18), {}), ((floats(102, 1, 7), 25), {})]),
    (lu_steps, (floats(106, 12, 12) + 12 * np.eye(12),),
     [((floats(107, 5, 5) + 5 * np.eye(5),), {}), ((np.asfortranarray(floats(108, 30, 30)) + 30 * np.eye(30),), {})]),
    (outer_sums, (floats(109, 20, 4), floats(110, 6)),
     [((rng(111).integers(-9, 9, (7, 3)), rng(112).integers(-9, 9, 5)), {}), ((floats(113, 4, 1), floats(114, 1)), {})]),
    (column_sums_below, (floats(115, 20, 20),), [((floats(116, 5, 5),), {}), ((floats(117, 1, 1),), {}),
                                                 ((rng(118).integers(-9, 9, (7, 7)),), {})]),
    (forward_sub_loops, (np.tril(floats(119, 18, 18)) + 18 * np.eye(18), floats(120, 18)),
     [((np.eye(1) * 2, floats(121, 1)), {}), ((np.tril(floats(122, 4, 4)) + 4 * np.eye(4), floats(123, 4)), {})]),
    (gauss_eliminate, (floats(124, 8, 8) + 8 * np.eye(8), floats(125, 8)),
     [((floats(126, 3, 3) + 3 * np.eye(3), floats(127, 3)), {}), ((floats(128, 25, 25) + 25 * np.eye(25), floats(129, 25)), {})]),
    (row_products, (floats(60, 8, 5), floats(61, 20, 5)), [((floats(62, 3, 2), floats(63, 9, 2)), {})]),
    (floor_rows, (floats(52, 20, 6) * 10, 1.5), [((floats(53, 5, 3) * 100, -0.25), {}),
                                                  ((np.array([[-0.0, 0.0, np.inf, np.nan]]), 2.0), {})]),
]


@pytest.mark.parametrize("fn, args, variants", CASES, ids=[c[0].__name__ for c in CASES])
def test_native_arrays(fn, args, variants):
    """On the cpu backend a native loop op (but for those of NOT_NATIVE); elsewhere unrolled or a loop op of graph
    calls: all right."""
    # (loops of single elements alone are left to CPython where loops are not native: a break)
    records = check(fn, *args, variants=variants,
                    breaks=1 if fn in ELEMENT_LOOPS and not native_loops() else 0)
    if sot.config.backend == "cpu" and fn not in NOT_NATIVE:
        assert native_runs(records) > 0, "tier C's code never ran"


def exact(fn, *args):
    """fn translated equals fn plain bit for bit, with the same warnings; the arguments end the same."""
    plain_args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    sot_args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    with warnings.catch_warnings(record=True) as plain_w:
        warnings.simplefilter("always")
        want = fn(*plain_args)
    sot.reset()
    cap.clear(fn)
    with warnings.catch_warnings(record=True) as got_w:
        warnings.simplefilter("always")
        got = sot.jit(fn)(*sot_args)
    assert type(got) is type(want)
    assert np.array_equal(np.asarray(got), np.asarray(want), equal_nan=True), (got, want)
    assert np.asarray(got).dtype == np.asarray(want).dtype
    for a, b in zip(sot_args, plain_args):
        if isinstance(a, np.ndarray):
            assert np.array_equal(a, b, equal_nan=True)
    assert [str(w.message) for w in got_w] == [str(w.message) for w in plain_w]


def test_an_inner_loop_variable_read_after_its_loop_is_not_of_run_time_bounds():
    """Its value after a range of no steps is the one before: the outer loop unrolls instead (short here)."""
    check(inner_index_read_after, floats(130, 6), variants=[((floats(131, 2),), {}), ((floats(132, 1),), {})])


def test_a_last_value_the_frame_holds_is_handed_on():
    """A loop's last array that the frame holds after it (a graph break follows) is made and handed on."""
    records = check(power_then_print, floats(59, 5, 5), np.ones(5), 30, breaks=1,
                    variants=[((floats(64, 3, 3), np.ones(3), 12), {})])
    if sot.config.backend == "cpu":
        assert native_runs(records) == 0  # (an array last value: the loop op's own path)


def extremes(x, y, n):
    for _ in range(n):
        x = np.minimum(x, y) + np.maximum(y, x)
    return x


def vector_extremes(x, steps):
    lo = x.min()
    hi = np.max(x)
    for _ in range(steps):
        x = x * 0.5
        lo = lo + x.min()
        hi = hi + np.max(x)
    return lo, hi


NEG = -np.arange(1.0, 12.0)


@pytest.mark.parametrize("x", [
    floats(75, 11), floats(76, 64), -floats(77, 13),
    np.where(np.arange(11) == 6, np.nan, NEG),  # (a NaN in the third of four lanes)
    np.where(np.arange(11) == 10, np.nan, NEG),  # (a NaN in the tail)
    np.where(np.arange(11) == 5, 0.0, np.where(np.arange(11) == 8, -0.0, NEG)),  # (zeros of both signs, greatest)
    np.where(np.arange(11) == 7, -0.0, NEG),  # (one zero: its sign is the greatest's)
    -np.where(np.arange(11) == 2, 0.0, np.where(np.arange(11) == 9, -0.0, NEG)),  # (both signs, least)
], ids=["plain11", "plain64", "negative13", "nan_lane", "nan_tail", "zeros_max", "minus_zero", "zeros_min"])
def test_vector_greatest_and_least_are_numpys_in_every_lane(x):
    """np.max / x.min() of a vector: four lanes natively; a NaN anywhere, or a zero result where zeros of both signs
    came, gives up to NumPy (which picks the NaN and the zero)."""
    exact(vector_extremes, x, 3)
    got = sot.jit(vector_extremes)(x, 3)
    assert np.signbit(got).tolist() == np.signbit(vector_extremes(x, 3)).tolist()
    if sot.config.backend == "cpu":
        loops, _ = tier_c_loops(vector_extremes, x, 3)
        both_zeros = bool(np.any((x == 0) & np.signbit(x))) and bool(np.any((x == 0) & ~np.signbit(x)))
        gives_up = bool(np.isnan(x).any()) or both_zeros
        assert [(e["runs"] > 0, e["gave_up"] > 0) for e in loops] == [(not gives_up, gives_up)], loops


@cpu_only
def test_minimum_and_maximum_give_up_on_nans_and_signed_zeros():
    """Ordered values natively; a NaN or zeros of two signs give up to NumPy's own loops (which pick the zero and
    the NaN)."""
    plain = floats(73, 40)
    for x, y, runs in [(plain, floats(74, 40), True), (np.array([0.0, -0.0, 1.0]), np.array([-0.0, 0.0, 2.0]), False),
                       (np.array([np.nan, 1.0]), np.array([1.0, np.nan]), False)]:
        exact(extremes, x, y, 20)
        loops, _ = tier_c_loops(extremes, x, y, 20)
        assert [(e["runs"] > 0, e["gave_up"] > 0) for e in loops] == [(runs, not runs)], (x, y, loops)
        got = sot.jit(extremes)(x, y, 20)
        assert np.signbit(got).tolist() == np.signbit(extremes(x, y, 20)).tolist()


@cpu_only
def test_a_cast_that_overflows_warns_as_plain():
    """float64 past float32's range cast by astype: NumPy warns (overflow in cast) and makes inf; tier C's flag
    gives up, the own path warns."""
    exact(casts, np.full(4, 1e38), 30)
    loops, _ = tier_c_loops(casts, np.full(4, 1e38), 30)
    assert [(e["runs"], e["gave_up"]) for e in loops] == [(0, 1)], loops


@cpu_only
def test_arrays_handed_on_among_themselves_are_the_objects_plain_python_hands_on():
    for steps in (0, 1, 20, 21):
        x, y = floats(93, 4), floats(94, 4)
        loops, _ = tier_c_loops(swap_args, x, y, max(steps, 20))
        assert loops and loops[0]["runs"] == 1, loops
        sot.reset()
        cap.clear(swap_args)
        got = sot.jit(swap_args)(x, y, steps)
        assert (got[0] is x, got[1] is y) == ((True, True) if steps % 2 == 0 else (False, False))
        assert (got[0] is y, got[1] is x) == ((False, False) if steps % 2 == 0 else (True, True))


def sums_over(x, axis, k):
    out = x.sum(axis=axis)
    for _ in range(k):
        out = out + (x * 1.0).sum(axis=axis)
    return out


@cpu_only
def test_sums_over_an_axis_are_numpys():
    """Each axis of 3-d arrays of many shapes (dimensions of one item included), signed zeros and magnitudes far
    apart: bit for bit, natively."""
    r = rng(103)
    for n, m, p in [(1, 1, 1), (3, 1, 2), (5, 7, 1), (2, 30, 3), (9, 9, 9), (1, 40, 2), (17, 3, 5)]:
        x = r.standard_normal((n, m, p)) * 10.0 ** r.integers(-8, 8, (n, m, p))
        x[r.random((n, m, p)) < 0.2] = -0.0
        for axis in (0, 1, 2, -1):
            exact(sums_over, x, axis, 20)
            loops, _ = tier_c_loops(sums_over, x, axis, 20)
            assert [(e["runs"], e["gave_up"]) for e in loops] == [(1, 0)], (n, m, p, axis, loops)


def matvec_steps(A, x, k):
    out = np.zeros(A.shape[0])
    for _ in range(k):
        out = out + A @ x
    return out


@cpu_only
def test_matrix_vector_products_are_numpys():
    """NumPy's gemv where its matmul calls it (C- and F-ordered matrices and views of their rows, vectors of
    positive strides), bit for bit at sizes on both sides of the BLAS's blocks; the layouts where NumPy does not
    (a size of 1, columns apart, a reversed vector) give up to the loop op's path, which is NumPy's."""
    big = floats(70, 300, 300) * 1e3
    x = floats(71, 600)
    native = [(big[:33, :47], x[:47]), (np.asfortranarray(big[:20, :61]), x[:122:2]), (big[:2, :2], x[:2]),
              (big[:257, :129], x[:129]), (big[:5, :300].copy(), x[:300])]
    given_up = [(big[:1, :40], x[:40]), (big[:40, :1], x[:1]), (big[:5, :40:2], x[:20]), (big[:9, :9], x[8::-1])]
    for (A, v), runs in [(case, True) for case in native] + [(case, False) for case in given_up]:
        want = matvec_steps(A, v, 3)  # (the views themselves: a copy would change the layout)
        sot.reset()
        cap.clear(matvec_steps)
        translator = sot.translate.new_translator(records=True)
        with cap.capture(translator):
            got = matvec_steps(A, v, 3)
        assert np.array_equal(got, want), (A.shape, A.strides)
        loops = tier_c_entries(translator.records())
        assert [(e["runs"] > 0, e["gave_up"] > 0) for e in loops] == [(runs, not runs)], (A.shape, A.strides, loops)


@cpu_only
def test_sums_are_numpys_pairwise_sums():
    """Lengths below, at and past each of the pairwise sum's blocks (8 and 128 items), strided and reversed
    slices, and past 8192 items (given up: NumPy may sum buffered parts there)."""
    def sums(x, step):
        s = np.float64(0.0)
        for k in range(1, x.shape[0] // 7, max(1, x.shape[0] // 60)):
            s += x[:k * 7:step].sum() + x[::-1][:k].sum()
        return s

    for n in (3, 9, 17, 130, 300, 1000, 20000):
        x = rng(n).standard_normal(n) * 10.0 ** rng(n + 1).integers(-6, 6, n)
        for step in (1, 2, 3):
            exact(sums, x, step)


@cpu_only
def test_a_zero_divisor_gives_up_as_numpy_warns():
    exact(floor_rows, rng(54).integers(-50, 50, (20, 6)), 0)
    exact(floor_rows, floats(55, 20, 6), 0.0)
    A = rng(56).integers(-50, 50, (20, 6))
    A[3, 2] = np.iinfo(np.int64).min
    exact(floor_rows, A, -1)


@cpu_only
def test_int_overflow_gives_up_where_numpy_wraps():
    A = np.full((8, 3), 2**61, dtype=np.int64)
    exact(int_rows, A)


@cpu_only
def test_a_division_by_zero_warns_as_plain():
    """NumPy's flag: the native run gives up, the rows it wrote are put back, and the loop op's own path warns."""
    def divided(A, d):
        out = np.zeros_like(A)
        for i in range(A.shape[0]):
            out[i] = A[i] / d[i]
        return out

    d = floats(30, 20, 4)
    d[7, 2] = 0.0
    exact(divided, floats(31, 20, 4), d)
    loops, _ = tier_c_loops(divided, floats(31, 20, 4), d)
    assert loops and loops[0]["gave_up"] == 1, loops


@cpu_only
@pytest.mark.parametrize("view", ["rows apart", "items apart", "reversed", "contiguous"])
def test_a_strided_argument_written_in_place_is_put_back_where_the_run_gives_up(view):
    """A run that writes into a view and then gives up (a zero divisor) puts its bytes back as they were - the whole
    block, row by row or item by item - before the loop op's own path runs the steps again and warns."""
    def divided_in_place(A, d):
        for i in range(A.shape[0]):
            A[i] = A[i] / d[i] + 1.0
        return A

    def of(base):
        return {"rows apart": base[::2], "items apart": base[:, ::3], "reversed": base[::-1, ::-1],
                "contiguous": base[:10, :4]}[view]

    base = floats(34, 20, 12)
    d = floats(35, 20, 12)[:10, :4].copy() + 0.5
    d[6, 1] = 0.0
    plain_base, sot_base = base.copy(), base.copy()
    with warnings.catch_warnings(record=True) as plain_w:
        warnings.simplefilter("always")
        divided_in_place(of(plain_base)[:10, :4], d)
    sot.reset()
    cap.clear(divided_in_place)
    translator = sot.translate.new_translator(records=True)
    with warnings.catch_warnings(record=True) as got_w, cap.capture(translator):
        warnings.simplefilter("always")
        divided_in_place(of(sot_base)[:10, :4], d)
    assert np.array_equal(sot_base, plain_base, equal_nan=True)
    assert [str(w.message) for w in got_w] == [str(w.message) for w in plain_w]
    loops = tier_c_entries(translator.records())
    assert loops and loops[0]["gave_up"] == 1, loops


def test_shapes_that_do_not_broadcast_raise_as_plain():
    """The rows written before the error stay written, as plain NumPy leaves them."""
    def bad(A, w):
        for i in range(A.shape[0]):
            A[i] = A[i] + w[: i + 3]
        return A

    A = floats(32, 10, 4)
    w = floats(33, 20)
    plain = A.copy()
    with pytest.raises(ValueError) as want:
        bad(plain, w)
    got_a = A.copy()
    with pytest.raises(ValueError) as got:
        sot.jit(bad)(got_a, w)
    assert str(got.value) == str(want.value)
    assert np.array_equal(got_a, plain)


def test_slices_of_one_length_form_share_a_length():
    """x[:n - lag] and x[lag:] have one length on every step (one symbol: a native loop); x[lag + 1:] has one item
    less, and the product raises as plain NumPy's does."""
    def lagged(x, off):
        n = x.shape[0]
        out = np.zeros(12)
        for lag in range(12):
            out[lag] = (x[:n - lag] * x[lag + off:]).sum()
        return out

    x = floats(44, 50)
    exact(lagged, x, 0)
    with pytest.raises(ValueError) as want:
        lagged(x, 1)
    with pytest.raises(ValueError) as got:
        sot.jit(lagged)(x, 1)
    assert str(got.value) == str(want.value)
    if sot.config.backend == "cpu":
        assert native_runs(tier_c_loops(lagged, x, 0)[1]) > 0


def test_aliased_arguments_read_as_numpy_reads_them():
    """Two arguments that are one array: a store reads a copy of its value, as NumPy does."""
    def shift(a, b):
        for i in range(1, 6):
            a[i:] = b[:-i] + 1.0
        return a

    x = floats(34, 12)
    plain = x.copy()
    shift(plain, plain)
    got = x.copy()
    sot.jit(shift)(got, got)
    assert np.array_equal(got, plain)


def random_row_programs(count, seed):
    """Loops whose bodies compute rows and slices of rows with random elementwise expressions (random operators,
    constants, a comparison now and then) and store them into rows or slices of rows, add them in place, or sum
    them; a few slices of other lengths than the target's (NumPy raises ValueError)."""
    r = np.random.default_rng(seed)
    terms = ["A[i, {p}]", "A[i - 1, {p}]", "B[i, {p}]", "A[i, ::-1][{p}]", "w[{p}]", "2.0", "3", "A[0, {p}]",
             "np.sqrt(np.abs(B[i, {p}]))"]
    ops = [" + ", " - ", " * ", " / "]
    for k in range(count):
        part = str(r.choice([":", "1:", ":2"]))

        def term(arrays_only=False):
            other = str(r.choice([":", "1:", ":2"])) if r.random() < 0.03 else part
            return str(r.choice([t for t in terms if "{p}" in t] if arrays_only else terms)).format(p=other)

        expr = term(arrays_only=True)
        for _ in range(int(r.integers(1, 4))):
            expr = f"({expr}{r.choice(ops)}{term()})"
        if r.random() < 0.2:
            expr = f"({expr} > 0.5)"
        target = str(r.choice(["C[i, {p}]", "C[i, {p}]", "s"])).format(p=part)
        if target == "s":
            body = (f"        s += float(({expr})[0])\n" if "> 0.5" in expr else
                    f"        s += ({expr}).sum()\n")
        elif r.random() < 0.3:
            body = f"        {target} += {expr}\n"
        else:
            body = f"        {target} = {expr}\n"
        lo = int(r.integers(1, 3))
        src = (f"def rows_{k}(A, B, w):\n"
               f"    s = 0.0\n"
               f"    C = np.zeros(A.shape, dtype=A.dtype)\n"
               f"    for i in range({lo}, A.shape[0]):\n"
               f"{body}"
               f"    return s, C\n")
        scope = {"np": np}
        exec(compile(src, f"<rows_{k}>", "exec"), scope)
        yield src, scope[f"rows_{k}"]


def outcome(fn, *args):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            value = ("value", fn(*args))
        except Exception as e:  # noqa: BLE001 - the exception itself is compared
            value = ("raised", type(e), str(e))
    return value, sorted(str(x.message) for x in w)


def agree(got, want):
    (g, gw), (w, ww) = got, want
    if g[0] != w[0] or gw != ww:
        return False
    if g[0] == "raised":
        return g[1:] == w[1:]
    return all(type(a) is type(b) and np.asarray(a).dtype == np.asarray(b).dtype
               and np.array_equal(a, b, equal_nan=True) for a, b in zip(g[1], w[1]))


def test_random_row_programs_agree_with_plain():
    """Each program plainly and translated (first call, from the cache, then on arrays of another size and
    dtype), bit for bit with the same warnings; on the cpu backend most of them run natively."""
    def arrays(seed, n, m, dtype):
        r = rng(seed)
        return (r.standard_normal((n, m)).astype(dtype), r.standard_normal((n, m)).astype(dtype),
                r.standard_normal(m).astype(dtype))

    sets = [arrays(90, 20, 6, np.float64), arrays(91, 13, 4, np.float64), arrays(92, 9, 5, np.float32)]
    native = 0
    for src, fn in random_row_programs(60, 93):
        jitted = sot.jit(fn)
        for A, B, w in [sets[0], sets[0], sets[1], sets[2]]:
            want = outcome(fn, A.copy(), B.copy(), w.copy())
            got = outcome(jitted, A.copy(), B.copy(), w.copy())
            assert agree(got, want), (src, got, want)
        native += native_runs(tier_c_loops(fn, *sets[0], raises=(ValueError, IndexError))[1])
    if sot.config.backend == "cpu":
        assert native >= 20, native
