"""NumPy calls that real programs make and graphs broke on (issue 36): np.repeat and ndarray.repeat, np.tile,
np.hstack and np.vstack, np.diff, np.average (weighted or not), np.conjugate of real arrays, the np.ndarray(shape,
dtype) constructor, np.array of a list of numbers written in the function, np.median, np.percentile, np.quantile, the
NaN-skipping reductions, np.convolve, np.correlate, np.interp, np.append, np.pad, np.kron, np.asarray (of an array:
that array), np.column_stack, np.searchsorted, np.digitize and np.isclose; abs() of arrays and NumPy scalars (their
__abs__: np.absolute), np.where of one argument (np.nonzero: its lengths known only when the graph runs) and
np.count_nonzero (over all axes NumPy 1.x's Python int, made where the graph runs, or NumPy 2's intp scalar). Each compared with plain NumPy on
the first call, from the cache and with varied arguments (other values, dimensions one longer, another dtype of the
same kind); graph and break counts pinned. What NumPy refuses (a bad axis, shapes that do not join) breaks the graph
and raises as in plain NumPy.
PYTEST_DONT_REWRITE"""

import pytest

from numpy_differential import case, isolated_check, run_cases

np = pytest.importorskip("numpy")

rng = np.random.default_rng(36)
A = rng.standard_normal((3, 4))
V5 = rng.standard_normal(5)
BATCH = rng.standard_normal((2, 3, 4))
I32 = rng.integers(-9, 9, (3, 4)).astype(np.int32)
U8 = rng.integers(0, 255, (3, 4)).astype(np.uint8)
BOOL = A > 0
F32 = A.astype(np.float32)
W3 = np.array([1.0, 2.0, 0.5])


def repeats(a):
    return np.repeat(a, 2), np.repeat(a, 3, axis=0), a.repeat(2, axis=-1) * 2.0


def repeats_of_ints(a):
    return np.repeat(a, 2, axis=1) + 1, a.repeat(0)


def tiles(a):
    return np.tile(a, 2), np.tile(a, (2, 1)), np.tile(a, (2, 1, 3)) - 1.0, np.tile(a[0], (3, 1))


def stacks(a, v):
    return (np.hstack([a, a * 2.0]), np.hstack((v, v[:2])), np.vstack([v, v * 3.0]), np.vstack((a, a[:1])),
            np.hstack([a.astype(np.float32), a]))


def vstack_rows(v):
    rows = []
    for k in range(3):
        rows.append(v * k)
    return np.vstack(rows).sum(axis=0)


def diffs(a):
    return np.diff(a), np.diff(a, axis=0), np.diff(a, n=2), np.diff(a > 0), np.diff(a, n=1, axis=-1) * 0.5


def gradients(v):  # a finite difference, as a derivative is written
    dv = np.diff(v) / 0.1
    return dv, np.abs(np.diff(dv)).max()


def averages(a, w):
    return np.average(a), np.average(a, axis=1), np.average(a, axis=0, weights=w), np.average(a, weights=a * a + 1.0)


def averages_of_ints(a):
    return np.average(a), np.average(a, axis=0)


def conjugates(a):
    return np.conjugate(a) * 2, np.conj(a + 1)


def new_arrays(n):
    a = np.ndarray((n, 2), dtype=np.float64)
    a[:] = 1.5
    b = np.ndarray(n, np.int32)
    b[:] = 7
    return a, b, np.ndarray((0, n))


def literal_arrays(x):
    w = np.array([0.25, 0.5, 0.25])
    k = np.array([[1, 0], [0, 1]], dtype=np.float32)
    w[0] = x[0]  # (a new array each call: the change stays in this call)
    return x[:3] * w, k * 2, np.array((1, 2, 3))


def literal_array_changed_twice(x):
    w = np.array([1.0, 2.0])
    w += x[:2]
    return w


def statistics(a):
    return (np.median(a), np.median(a, axis=0), np.percentile(a, 90), np.percentile(a, [10, 50], axis=1),
            np.quantile(a, 0.25, axis=-1, keepdims=True), np.nanmedian(a, axis=1))


def nan_statistics(a):
    b = a.copy()
    b[0, 1] = np.nan
    return (np.nansum(b), np.nanmean(b, axis=0), np.nanmax(b, axis=1), np.nanmin(b), np.nanstd(b, axis=0),
            np.nanvar(b, ddof=1))


def nan_sums_of_ints(a):
    return np.nansum(a), np.nanmax(a, axis=0), np.median(a)


def smoothing(v, k):
    return np.convolve(v, k), np.convolve(v, k, mode="same"), np.convolve(v, k, mode="valid"), np.correlate(v, k)


def resample(xs, x, y):
    return np.interp(xs, x, y), np.interp(xs * 2.0, x, y, left=0.0, right=-1.0), np.interp(0.5, x, y)


def appends(a, v):
    return np.append(v, 1.5), np.append(a, a * 2.0, axis=0), np.append(a, [[1.0, 2.0, 3.0, 4.0]], axis=0), np.append(a, v)


def paddings(a):
    return (np.pad(a, 1), np.pad(a, (1, 2), mode="edge"), np.pad(a, ((0, 1), (2, 0)), constant_values=-1.0),
            np.pad(a, 2, mode="reflect"), np.pad(a, 1, mode="wrap"))


def kronecker(a, b):
    return np.kron(a, b), np.kron(a[0], b[0])


def as_arrays(a, v):
    a = np.asarray(a)
    w = np.asarray([1.0, 2.0, 3.0, 4.0])
    same = np.asarray(v) is v
    return a * w, same, np.asarray((1, 2)) + 1


def columns(v, a):
    return np.column_stack([v, v * 2.0]), np.column_stack((a, v[:3])), np.column_stack([v.astype(np.float32), v])


def searches(edges, x):
    return (np.searchsorted(edges, x), np.searchsorted(edges, 0.5, side="right"), edges.searchsorted(x * 2.0),
            np.digitize(x, edges), np.digitize(x, edges, right=True))


def closeness(a, b):
    return np.isclose(a, b), np.isclose(a, a + 1e-9), np.isclose(a, 0.0, atol=0.5), np.isclose(1.0, 1.0 + 1e-10)


def absolutes(a):
    d = a - a.mean()
    # (a Python float and a Python int made in the graph stay Python numbers)
    return abs(d), abs(d[0, 0] - d[1, 1]), abs(a > 0), abs(d).max(), abs(float(d.sum()) - 1.0), abs(int(a.max()) - 9)


def absolutes_of_inputs(a, v):
    return abs(a), abs(v) + 1


def where_indices(v):
    idx = np.where(v > 0)[0]
    rows, cols = np.where(np.outer(v, v) < 0)
    return idx, v[idx].sum(), rows, cols


def counts(a):
    inside = int(np.count_nonzero(a > 0))
    per_row = np.count_nonzero(a > 0, axis=1)
    return inside, 4.0 * inside / a.size, per_row, np.count_nonzero(a, axis=0, keepdims=True), np.count_nonzero(a)


XS = np.linspace(-0.5, 1.5, 9)
XP = np.linspace(0.0, 1.0, 6)
K3 = np.array([0.25, 0.5, 0.25])

CASES = [
    case(statistics, A),
    case(statistics, I32),
    case(nan_statistics, A, variants=[((A * 3.0,), {}), ((F32,), {})]),
    case(nan_sums_of_ints, I32),
    case(smoothing, V5, K3),
    case(resample, XS, XP, XP ** 2),
    case(appends, A, V5[:4]),
    case(paddings, A),
    case(paddings, I32),
    case(kronecker, A[:2, :2], np.eye(2)),
    case(as_arrays, A, V5),
    case(columns, V5[:3], A[:, :2]),
    case(searches, XP, XS),
    case(closeness, A, A * (1.0 + 1e-7)),
    case(absolutes, A),
    case(absolutes, I32),
    case(absolutes_of_inputs, I32, V5),
    case(where_indices, V5),
    case(counts, A),
    case(counts, BOOL),
    case(repeats, A),
    case(repeats, V5),
    case(repeats_of_ints, I32),
    case(repeats_of_ints, BOOL),
    case(tiles, A),
    case(tiles, U8),
    case(stacks, A, V5),
    case(vstack_rows, V5),
    case(diffs, A),
    case(diffs, I32),
    case(diffs, U8),
    case(gradients, V5),
    case(averages, A, W3, variants=[((A * 2.0, W3 + 1.0), {}), ((F32, W3), {})]),
    case(averages_of_ints, I32),
    case(conjugates, A),
    case(conjugates, I32),
    case(new_arrays, 3),
    case(literal_arrays, V5),
    case(literal_array_changed_twice, V5),
]


@run_cases(CASES)
def test_program_calls(fn, args, kwargs, graphs, breaks, fallbacks):
    isolated_check(fn, args, kwargs, graphs, breaks, fallbacks)


def bad_repeat_axis(a):
    return np.repeat(a * 2.0, 2, axis=2)


def bad_hstack(a, v):
    return np.hstack([a * 1.0, v])


def bad_diff_order(a):
    return np.diff(a * 1.0, n=-1)


def zero_weights(a):
    return np.average(a * 1.0, axis=0, weights=np.zeros(3))


ERRORS = [
    case(bad_repeat_axis, A, breaks=1),
    case(bad_hstack, A, V5, breaks=1),
    case(bad_diff_order, A, breaks=1),
    case(zero_weights, A),
]


@run_cases(ERRORS)
def test_what_numpy_refuses_raises_as_numpy(fn, args, kwargs, graphs, breaks, fallbacks):
    isolated_check(fn, args, kwargs, graphs, breaks, fallbacks)
