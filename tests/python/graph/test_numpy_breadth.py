"""NumPy breadth (issue 20, item 5): outer products, ufunc methods (outer, reduce, accumulate), flips, rolls,
triangles, sorts (functions and ndarray methods, ``x.sort()`` in place), take_along_axis, linspace with dtype and
endpoint; unpacking and iterating arrays (rows as getitem ops), tuples built at run time as indices; boolean masks
(a size known only when the graph runs) and integer arrays as indices, and stores through them; np.linalg (solve,
inv, det, cholesky, qr, svd, eigh, norm, lstsq), cov, histogram, np.insert and np.fft.rfft/rfftfreq as library ops
(several results as one op and its items); diag, trace, vander, polyval, hanning, indices, np.array of computed
items and nonzero (its length known only when the graph runs, as a mask's count). Each compared with plain NumPy on
the first call, from the cache and with varied arguments (other values, dimensions one longer, another dtype); graph
and break counts pinned. Errors (a bad axis, a singular matrix) reach the caller as in plain NumPy; a call that may
raise on its data (LinAlgError, IndexError) is not captured while side effects wait to be replayed after the graph.
PYTEST_DONT_REWRITE"""

import os
import subprocess
import sys

import pytest

from numpy_differential import case, check_varied, isolated_check, run_cases

np = pytest.importorskip("numpy")

# NumPy 2's qr, svd and eigh return named tuples (their generated __new__ is skipped, not translated).
NT = int(not np.__version__.startswith("1."))
# NumPy 1.24 in its experimental "weak" promotion state: np.histogram raises OverflowError inside (plainly too).
WEAK1 = int(np.__version__.startswith("1.") and hasattr(np, "_get_promotion_state")
            and np._get_promotion_state() == "weak")

# NumPy 1.x's legacy (value-based) promotion, not its "weak" state.
LEGACY = int(np.__version__.startswith("1.") and not WEAK1)

rng = np.random.default_rng(20)
A = rng.standard_normal((3, 4))
SQ = rng.standard_normal((4, 4))
SPD = SQ @ SQ.T + 4.0 * np.eye(4)
V4 = rng.standard_normal(4)
V3 = rng.standard_normal(3)
BATCH = rng.standard_normal((2, 3, 4))
F32 = A.astype(np.float32)
SPD32 = SPD.astype(np.float32)
I64 = rng.integers(-5, 5, (3, 4))
I32 = I64.astype(np.int32)
I8 = I64.astype(np.int8)
U8 = np.abs(I64).astype(np.uint8)
BOOL = A > 0
C128 = A + 1j * A[::-1]
SINGULAR = np.ones((3, 3))
IDX = np.argsort(A, axis=1)

g_count = 0


# --- outer products and ufunc methods -----------------------------------------------------------------------------

def outer_vectors(u, v):
    return np.outer(u, v), np.outer(v, u) * 2.0


def outer_of_matrices(a, u):
    return np.outer(a, u) + 1


def outer_mixed_dtypes(i, f):
    return np.outer(i, f), np.outer(i, i), np.outer(f, 3)


def ufunc_outer(u, v):
    return np.add.outer(u, v), np.multiply.outer(v, u), np.subtract.outer(u, u), np.maximum.outer(u, v)


def ufunc_outer_nd(a, u):
    return np.multiply.outer(a, u).sum(axis=-1), np.greater.outer(u, a)


def ufunc_outer_ints(i, u):
    return np.add.outer(i, u), np.bitwise_and.outer(i, i)


def ufunc_outer_divide(u, v):
    return np.true_divide.outer(u, v + 10.0), np.floor_divide.outer(u, v + 10.0)


def ufunc_reduce_axes(a):
    return (np.add.reduce(a), np.add.reduce(a, axis=1), np.multiply.reduce(a, axis=None),
            np.maximum.reduce(a, 1, keepdims=True), np.minimum.reduce(a, axis=(0, 1)))


def ufunc_reduce_small_ints(i):
    return np.add.reduce(i), np.multiply.reduce(i, axis=1), np.maximum.reduce(i, axis=0)


def ufunc_reduce_dtype_initial(i):
    return np.add.reduce(i, axis=0, dtype=np.float32), np.add.reduce(i, 1, None, None, False, 10)


def ufunc_reduce_bools(b):
    return np.logical_and.reduce(b, axis=0), np.logical_or.reduce(b, axis=1), np.add.reduce(b)


def ufunc_accumulate(a):
    return np.add.accumulate(a), np.multiply.accumulate(a, axis=1), np.maximum.accumulate(a, 1)


def ufunc_accumulate_ints(i):
    return np.add.accumulate(i, axis=1), np.subtract.accumulate(i)


def ufunc_method_kept(a):
    red = np.add.reduce
    return red(a, axis=0) * 2.0


def ufunc_reduce_bad_axis(a):
    return np.add.reduce(a, axis=2)


def ufunc_reduce_not_reorderable(a):
    return np.subtract.reduce(a, axis=(0, 1))


def ufunc_reduce_empty_no_identity(e):
    return np.maximum.reduce(e, axis=0)


def ufunc_power_outer_ints_breaks(i):
    return np.power.outer(i[0], i[1])


def ufunc_outer_of_scalar_breaks(u):
    return np.add.outer(u, np.float64(2.0))


# --- flips, rolls, triangles --------------------------------------------------------------------------------------

def flips(a):
    return np.flip(a), np.flip(a, 0), np.flip(a, axis=(0, 1)), np.fliplr(a), np.flipud(a)


def flip_views_see_changes(a):
    f = np.flip(a, 1)
    a[0, 0] = 99.0
    return f


def flip_batch(b):
    return np.flip(b, -1) * 2, np.flipud(b)


def flip_bad_axis(a):
    return np.flip(a, axis=3)


def fliplr_of_vector(v):
    return np.fliplr(v)


def rolls(a):
    return np.roll(a, 1), np.roll(a, -2, axis=1), np.roll(a, 3, 0), np.roll(a, (1, 2), axis=(0, 1))


def roll_ints(i):
    return np.roll(i, 5) + np.roll(i, shift=1, axis=-1)


def roll_bad_axis(a):
    return np.roll(a, 1, axis=-3)


def triangles(a):
    return np.tril(a), np.triu(a), np.tril(a, -1), np.triu(a, k=2), np.tril(a, k=1) - np.triu(a, -1)


def triangles_of_ints_and_bools(i, b):
    return np.tril(i, 1), np.triu(b), np.tril(b, -1)


def triangle_of_batch(b):
    return np.tril(b).sum(axis=0)


def triangle_of_vector_breaks(v):
    return np.tril(v)


# --- sorts ----------------------------------------------------------------------------------------------------------

def sorts(a):
    return np.sort(a), np.sort(a, axis=0), np.sort(a, axis=None), np.argsort(a), np.argsort(a, axis=0)


def sort_kinds(a):
    return np.sort(a, kind="stable"), np.argsort(a, kind="stable"), np.sort(a, kind="mergesort", axis=0)


def sort_ints_and_bools(i, b):
    return np.sort(i), np.argsort(i, kind="stable"), np.sort(b, axis=0)


def sort_methods(a):
    return a.argsort(), a.argsort(axis=0, kind="stable") * 2


def sort_in_place(a):
    a.sort()
    return a.sum(axis=1)


def sort_in_place_axis(a):
    b = a * 2
    b.sort(axis=0)
    b.sort(0, "stable")
    return b


def sort_in_place_view(a):
    a[1:].sort(axis=1)
    return a


def sort_in_place_returns_none(a):
    return a.sort(), a


def sort_nan(a):
    b = a.copy()
    b[0, 0] = np.nan
    return np.sort(b), np.argsort(b, axis=None)


def sort_bad_axis(a):
    return np.sort(a, axis=2)


def argsort_then_take(a):
    order = np.argsort(a, axis=1)
    return np.take_along_axis(a, order, axis=1), np.take_along_axis(a, order[:, :1], axis=1)


def take_along_axis_forms(a, idx):
    return (np.take_along_axis(a, idx, axis=1), np.take_along_axis(a, idx[:1], 1),
            np.take_along_axis(a.ravel(), idx.ravel(), axis=None))


def take_along_axis_out_of_bounds(a, idx):
    return np.take_along_axis(a, idx + 10, axis=1)


def take_along_axis_after_effect(a, idx):
    global g_count
    g_count = a.shape[1]
    return np.take_along_axis(a, idx + 10, axis=1)


def take_along_axis_no_axis_breaks(a, idx):
    return np.take_along_axis(a, idx[0])


# --- linspace -------------------------------------------------------------------------------------------------------

def linspace_dtypes(n):
    return (np.linspace(0, 1, n), np.linspace(0, 10, n, endpoint=False), np.linspace(-1.0, 1.0, 7, dtype=np.float32),
            np.linspace(0, 10, n, dtype=np.int64), np.linspace(2, 3, num=4, endpoint=False, dtype="float32"))


def linspace_in_math(x):
    return x * np.linspace(0.0, 1.0, 4, dtype=x.dtype)


def linspace_retstep_breaks():
    return np.linspace(0, 1, 5, retstep=True)


# --- np.linalg ------------------------------------------------------------------------------------------------------

def linalg_inv_det(s):
    return np.linalg.inv(s), np.linalg.det(s), np.linalg.inv(s) @ s


def linalg_batch(b):
    sq = b @ np.swapaxes(b, -1, -2) + 3.0 * np.eye(3)
    return np.linalg.inv(sq), np.linalg.det(sq), np.linalg.cholesky(sq)


def linalg_solve(s, v):
    return np.linalg.solve(s, v), np.linalg.solve(s, np.stack([v, v * 2.0], axis=1))


def linalg_cholesky(s):
    lo = np.linalg.cholesky(s)
    return lo, lo @ lo.T


def linalg_ints(i):
    m = i.T @ i + 20 * np.eye(4, dtype=i.dtype)
    return np.linalg.inv(m), np.linalg.det(m), np.linalg.norm(m)


def linalg_qr(a):
    q, r = np.linalg.qr(a)
    qc, rc = np.linalg.qr(a, mode="complete")
    return q @ r, q, r, qc.shape, rc


def linalg_qr_wide(a):
    q, r = np.linalg.qr(a.T)
    return q, r


def linalg_svd(a):
    u, s, vt = np.linalg.svd(a)
    u2, s2, vt2 = np.linalg.svd(a, full_matrices=False)
    return u, s, vt, (u2 * s2) @ vt2, np.linalg.svd(a, compute_uv=False)


def linalg_eigh(s):
    w, v = np.linalg.eigh(s)
    wu, vu = np.linalg.eigh(s, UPLO="U")
    return w, v, (v * w) @ v.T, wu


def linalg_qr_kept_breaks(a):
    res = np.linalg.qr(a)
    return res[0]


def linalg_norms(a):
    return (np.linalg.norm(a), np.linalg.norm(a, 2), np.linalg.norm(a, 1), np.linalg.norm(a, np.inf),
            np.linalg.norm(a, "fro"), np.linalg.norm(a, axis=1), np.linalg.norm(a, 1, axis=0),
            np.linalg.norm(a, np.inf, axis=1, keepdims=True), np.linalg.norm(a, keepdims=True),
            np.linalg.norm(a, ord=-np.inf, axis=0), np.linalg.norm(a[0]), np.linalg.norm(a[0], 3))


def linalg_norm_batch(b):
    return np.linalg.norm(b, axis=(1, 2)), np.linalg.norm(b, "fro", axis=(0, 2), keepdims=True), np.linalg.norm(b)


def linalg_norm_complex(c):
    return np.linalg.norm(c), np.linalg.norm(c, axis=0), np.linalg.norm(c, 2)


def linalg_norm_fro_vector_raises(v):
    return np.linalg.norm(v, "fro")


def linalg_norm_improper(b):
    return np.linalg.norm(b, 2)


def linalg_singular(s):
    return np.linalg.inv(s)


def linalg_singular_solve(s, v):
    return np.linalg.solve(s, v)


def linalg_not_positive(s):
    return np.linalg.cholesky(s)


def linalg_singular_after_effect(s):
    global g_count
    g_count = 1
    return np.linalg.inv(s)


def linalg_not_square(a):
    return np.linalg.inv(a)


def linalg_singular_caught(s):
    try:
        return np.linalg.inv(s)
    except np.linalg.LinAlgError as e:
        return "caught: " + str(e)


def linalg_float16_breaks(a):
    return np.linalg.inv(a.astype(np.float16)[:3, :3])


# --- cov and histogram ----------------------------------------------------------------------------------------------

def covariances(a):
    return np.cov(a), np.cov(a, rowvar=False), np.cov(a, bias=True), np.cov(a, ddof=0), np.cov(a[0]), np.cov(a[:1])


def cov_dtype(f):
    return np.cov(f), np.cov(f, dtype=np.float32), np.cov(f, rowvar=False, ddof=2)


def histograms(a):
    h, e = np.histogram(a, bins=5, range=(-2.0, 2.0))
    d = np.histogram(a, 3, (-1, 1), density=True)
    return h, e, d, np.histogram(a, range=(0, 1))


def histogram_ints(i):
    return np.histogram(i, bins=4, range=(-5, 5))


def histogram_kept(a):
    res = np.histogram(a, bins=2, range=(0.0, 1.0))
    return res[0] * 2, res


def histogram_no_range_breaks(a):
    return np.histogram(a, bins=4)


# --- unpacking and iterating arrays; tuples built at run time as indices ------------------------------------------

def unpack_rows(a):
    r0, r1, r2 = a
    return r0 + r1 * r2, r1


def unpack_transposed(pos):
    x, y, z = pos.T
    return np.sqrt(x * x + y * y + z * z)


def unpack_vector(v):
    a, b, c = v
    return a * b - c, type(a)


def unpack_computed(a):
    lo, hi = a[:, :2].T * 2.0
    return hi - lo


def unpack_wrong_count(a):
    r0, r1 = a
    return r0 + r1


def unpack_scalar_raises(a):
    x, y = a.sum()
    return x


def iterate_rows(a):
    total = np.zeros(a.shape[1])
    for row in a:
        total = total + row * row
    return total


def iterate_vector_sees_changes(v):
    out = []
    for x in v:
        v[-1] += x
        out.append(x)
    return out, v


def iterate_enumerate_zip(a, b):
    acc = 0.0
    for i, (r, s) in enumerate(zip(a, b)):
        acc = acc + (r * s).sum() * i
    return acc


def iterate_list_and_tuple(a):
    rows = list(a)
    cols = tuple(a.T)
    return rows[0] + rows[-1], len(cols), cols[1]


def iterate_computed_views(a):
    outs = []
    for row in a * 2.0:
        outs.append(row.max())
    return outs


def iterate_with_print(a):
    for row in a:
        print(row.sum())
    return a


def iterate_graph_value_with_print(a):
    b = a + 1.0
    for i, row in enumerate(b):
        print(i, row.round(6))
    return b


def iterate_many_rows(m):
    total = 0.0
    for row in m:
        total = total + row[0]
    return total


def iterate_scalar_raises(a):
    for x in a.sum():
        return x
    return None


def iterate_zero_d_raises(a):
    return [x for x in a.reshape(-1)[:1].reshape(())]


def tuple_index_built(a, j):
    idx = (slice(1, None), j)
    return a[idx], a[tuple([slice(None), j])]


def tuple_index_from_list(a):
    key = []
    for _ in range(a.ndim):
        key.append(slice(None, None, -1))
    key[0] = 0
    return a[tuple(key)]


# --- boolean masks and integer arrays as indices ---------------------------------------------------------------

def mask_reductions(v):
    pos = v[v > 0]
    return pos.sum(), pos.mean(), (pos * 2.0).sum(), v[v > 0.5].max() if (v > 0.5).any() else None


def mask_reductions_captured(v):
    pos = v[v > -10.0]
    return pos.sum(), pos.max(), pos.argmin(), np.sqrt(pos * pos).sum()


def mask_two_arrays(x, y):
    m = x > 0
    return x[m] + y[m], x[m] * y[m] - 1.0, np.where(x[m] > 1.0, x[m], 0.0)


def mask_two_dimensional(a):
    return a[a > 0], a[a[:, 0] > 0], a[:, a[0] > 0] * 2.0, a[a[:, 0] > 0].sum(axis=0)


def mask_empty(v):
    e = v[v > 100.0]
    return e, e.sum(), e * 2.0


def mask_max_of_empty_raises(v):
    return v[v > 100.0].max()


def mask_max_of_empty_after_effect(v):
    global g_count
    g_count = v.ndim
    return v[v > 100.0].max()


def mask_matmul_rows(a):
    rows = a[a[:, 0] > -10.0]
    return rows.T @ rows, rows @ np.ones(a.shape[1])


def mask_len(v):
    pos = v[v > 0]
    return pos.sum() / max(len(pos), 1)


def mask_shape(a):
    rows = a[a[:, 0] > 0]
    return rows.shape, rows * 2


def mask_reshape_breaks(v):
    return v[v > 0].reshape(-1, 1)


def mask_squeeze_breaks(a):
    return a[a[:, 0] > 0][:, :1].squeeze()


def mask_iteration_breaks(v):
    return list(v[v > 0])


def mask_wrong_length_raises(v, w):
    return v[w > 0]


def mask_stores(x, y):
    z = x.copy()
    z[z < 0] = 0.0
    m = y > 0
    z[m] = y[m]
    z[m] *= 2.0
    return z


def mask_store_into_input(x):
    x[x < 0] = -1.0
    return x.sum()


def mask_store_rows(a):
    b = a.copy()
    b[b[:, 0] > 0] = np.arange(a.shape[1], dtype=a.dtype)
    b[:, b[0] < 0] = 0.0
    return b


def mask_store_wrong_size_breaks(v):
    w = v.copy()
    w[w > 0] = np.ones(3)
    return w


def mask_store_float_into_ints_breaks(i):
    j = i.copy()
    j[j < 0] = 1.5
    return j


def take_rows_and_columns(a, idx):
    return a[idx], a[:, idx], a[idx[::-1]] * 2.0, a[[0, 2]], a[:, [1, -1]]


def take_by_argsort(v):
    order = np.argsort(v)
    return v[order], v[order[::-1]][:2]


def take_by_numpy_integer(a):
    i = a.argmax()
    return a.reshape(-1)[i], a[a[:, 0].argmin()]


def take_small_ints(a, u):
    return a[:, u % 4], a[u[:2] % 3]


def take_out_of_bounds_raises(v, idx):
    return v[idx + 10]


def take_out_of_bounds_list_raises(v):
    return v[[0, 99]]


def take_float_index_raises(v):
    return v[v]


def take_after_effect_breaks(v, idx):
    global g_count
    g_count = 2
    return v[idx]


def take_stores(v, idx):
    w = v.copy()
    w[[0, 2]] = -1.0
    w[idx] = np.arange(len(idx), dtype=v.dtype)
    w[idx[:2]] += 5.0
    return w


def take_unused_raises(v, idx):
    v[idx + 10]
    return v.sum()


def take_list_of_bools_breaks(v):
    return v[[True, False, True]]


# --- diag, trace, vander, polyval, lstsq, insert, windows and spectra, indices, arrays of computed items, nonzero --

def diag_forms(s, v):
    return np.diag(s), np.diag(s, 1), np.diag(s, k=-2), np.diag(s, 9), np.diag(v), np.diag(v, -1) * 2.0


def diag_of_diag(a):
    return np.diag(np.diag(a)) + 1.0, np.diag(a.T, -1)


def diag_of_ints_and_bools(i, b):
    return np.diag(i), np.diag(i[0], 2), np.diag(b)


def diag_view_sees_changes(a):
    b = a.copy()
    d = np.diag(b)
    b[0, 0] = 100.0
    return d * 1.0


def diag_of_batch_raises(b):
    return np.diag(b)


def diag_float_k_breaks(a):
    return np.diag(a, 1.0)


def traces(s, b):
    return np.trace(s), np.trace(s, 1), np.trace(s, offset=-1), np.trace(b, axis1=1, axis2=2), np.trace(b, 0, 0, 2)


def trace_dtypes(i, b, f):
    return np.trace(i), np.trace(b), np.trace(f), np.trace(f, dtype=np.float64)


def trace_of_vector_raises(v):
    return np.trace(v)


def trace_same_axes_raises(b):
    return np.trace(b, axis1=1, axis2=1)


def vanders(v):
    return np.vander(v), np.vander(v, 3), np.vander(v, N=5, increasing=True), np.vander(v, 0)


def vander_dtypes(i, b, f):
    return np.vander(i[0], 3), np.vander(b[0]), np.vander(f[0], 2)


def vander_of_matrix_raises(a):
    return np.vander(a)


def polyvals(p, x, a):
    return np.polyval(p, x), np.polyval(p, a) * 2.0, np.polyval(p[:0], x), np.polyval(p[:1], a)


def polyval_ints(i):
    return np.polyval(i[0], i[1]), np.polyval(i[0, :2], i)


def polyval_mixed(p, f):
    # (NumPy 1.x's value-based casting of the coefficients: the dtype depends on their values there - float64 for
    # a coefficient of 2**62 with a float32 x, float32 for small ones)
    return np.polyval(p, f)


def polynomial_fit(x, y):
    v = np.vander(x, 4)
    coef = np.linalg.lstsq(v, y, rcond=None)[0]
    return coef, np.polyval(coef, x)


def lstsq_results(a, b):
    x, residuals, rank, s = np.linalg.lstsq(a, b, rcond=None)
    return x, residuals, rank, s, residuals * 2.0


def lstsq_matrix_rhs(a, b):
    x, residuals, rank, s = np.linalg.lstsq(a, b, rcond=1e-10)
    return x, residuals.sum(), rank, s


def lstsq_rank_deficient(a, b):
    # (a's columns repeated: no residuals)
    return np.linalg.lstsq(np.concatenate([a, a], axis=1), b, rcond=None)


def lstsq_incompatible_raises(a, v):
    return np.linalg.lstsq(a, v, rcond=None)


def inserts(v, a):
    return (np.insert(v, 0, 0.0), np.insert(v, 2, -1), np.insert(v, -1, v[:2]), np.insert(v, len(v), 7.5),
            np.insert(a, 1, 5.0, axis=1), np.insert(a, 0, 3.0, axis=-2), np.insert(a, 3, 9.0))


def insert_ints(i, f):
    return np.insert(i[0], 1, 2.5), np.insert(i[0], 0, f[0]), np.insert(f[0], 1, True)


def moving_average(x, w):
    c = np.cumsum(np.insert(x, 0, 0.0))
    return (c[w:] - c[:-w]) / w


def insert_out_of_bounds_raises(v):
    return np.insert(v, 10, 1.0)


def insert_bad_value_raises(v):
    return np.insert(v, 0, "x")


def spectrum(x):
    n = len(x)
    X = np.fft.rfft(x * np.hanning(n))
    p = np.abs(X) ** 2 / n
    return np.fft.rfftfreq(n, 0.5)[p.argmax()], p, np.fft.rfftfreq(n)


def rfft_forms(x, a):
    return (np.fft.rfft(x, 7), np.fft.rfft(x, n=16, norm="ortho"), np.fft.rfft(a, axis=0),
            np.fft.rfft(a, norm="forward"), np.hanning(1), np.hanning(0), np.hanning(6) * x[0])


def rfft_dtypes(f, i):
    return np.fft.rfft(f), np.fft.rfft(i[0])


def rfft_zero_points_raises(x):
    return np.fft.rfft(x, 0)


def rfft_bad_axis_raises(x):
    return np.fft.rfft(x, axis=2)


def rfftfreq_zero_d_raises(x):
    return x.sum() * np.fft.rfftfreq(4, 0)


def index_grids(a):
    ii, jj = np.indices(a.shape)
    return ii + jj, (ii + jj) % 2 == 0, np.indices((2, 3), dtype=np.float32), np.indices(a.shape)[1] * a


def arrays_of_scalars(v):
    out = []
    for k in range(3):
        out.append((v * k).max())
    return np.array(out), np.array([v.sum(), v.min()]), np.array((v[0], v[1]), dtype=np.float32)


def arrays_of_rows(a):
    rows = [a[0] * 2.0, a[1], a[2] + 1.0]
    return np.array(rows), np.array([a.sum(axis=0), a.max(axis=0)]).T


def array_of_comprehension(a):
    return np.array([a[k].mean() for k in range(3)])


def arrays_of_mixed_dtypes(i, f):
    return np.array([i[0, 0], f[0, 0]]), np.array([i.sum(), i.max()]), np.array([f[0], f[1]])


def array_of_different_shapes_raises(a):
    return np.array([a[0], a[1, :2]])


def nonzeros(v, a):
    (k,) = np.nonzero(v > 0)
    rows, cols = np.nonzero(a > 0)
    return k, v[k], k + 1, rows, cols, a[rows], (a > 0).nonzero()[1] * 2


def peak_detect(x, min_height):
    is_peak = (x[1:-1] > x[:-2]) & (x[1:-1] >= x[2:]) & (x[1:-1] > min_height)
    idx = np.nonzero(is_peak)[0] + 1
    return idx, x[idx]


def nonzero_with_mask(v):
    m = v > 0
    return v[m] * v[np.nonzero(m)[0]], np.nonzero(v)[0]


def nonzero_len(v):
    return len(np.nonzero(v > 0)[0])


def nonzero_of_scalar_breaks(v):
    return np.nonzero(v.sum())


CASES = [
    case(outer_vectors, V4, V3),
    case(outer_of_matrices, A, V3),
    case(outer_mixed_dtypes, I8[0], F32[1]),
    case(ufunc_outer, V4, V3),
    case(ufunc_outer_nd, A, V3),
    case(ufunc_outer_ints, I8[0], U8[1]),
    case(ufunc_outer_divide, V4, V3),
    case(ufunc_reduce_axes, A),
    case(ufunc_reduce_small_ints, I8),
    case(ufunc_reduce_dtype_initial, I32),
    case(ufunc_reduce_bools, BOOL),
    case(ufunc_accumulate, A),
    case(ufunc_accumulate_ints, I8),
    case(ufunc_method_kept, A),
    case(ufunc_reduce_bad_axis, A, graphs=0, breaks=1),
    case(ufunc_reduce_not_reorderable, A, graphs=0, breaks=1),
    case(ufunc_reduce_empty_no_identity, np.zeros((0, 3)), graphs=0, breaks=1),
    case(ufunc_power_outer_ints_breaks, I64, graphs=1, breaks=1),
    case(ufunc_outer_of_scalar_breaks, V4, graphs=1, breaks=1),  # (np.float64(2.0) captured)
    case(flips, A),
    case(flip_views_see_changes, A),
    case(flip_batch, BATCH),
    case(flip_bad_axis, A, graphs=0, breaks=1),
    case(fliplr_of_vector, V4, graphs=0, breaks=1),
    case(rolls, A),
    case(roll_ints, I64),
    case(roll_bad_axis, A, graphs=0, breaks=1),
    case(triangles, SQ),
    case(triangles_of_ints_and_bools, I64, BOOL),
    case(triangle_of_batch, BATCH),
    case(triangle_of_vector_breaks, V4, graphs=0, breaks=1),
    case(sorts, A),
    case(sort_kinds, A),
    case(sort_ints_and_bools, I64, BOOL),
    case(sort_methods, A),
    case(sort_in_place, A),
    case(sort_in_place_axis, A),
    case(sort_in_place_view, A),
    case(sort_in_place_returns_none, A),
    case(sort_nan, A),
    case(sort_bad_axis, A, graphs=0, breaks=1),
    case(argsort_then_take, A),
    case(take_along_axis_forms, A, IDX),
    case(take_along_axis_out_of_bounds, A, IDX),
    case(take_along_axis_after_effect, A, IDX, graphs=1, breaks=1),
    case(take_along_axis_no_axis_breaks, A, IDX, graphs=1, breaks=1),
    case(linspace_dtypes, 5),
    case(linspace_in_math, F32[0]),
    case(linspace_retstep_breaks, graphs=0, breaks=1),
    case(linalg_inv_det, SPD),
    case(linalg_batch, BATCH),
    case(linalg_solve, SPD, V4),
    case(linalg_cholesky, SPD),
    case(linalg_ints, I64),
    case(linalg_qr, A, graphs=1),
    case(linalg_qr_wide, A, graphs=1),
    case(linalg_svd, A, graphs=1),
    case(linalg_eigh, SPD, graphs=1),
    case(linalg_qr_kept_breaks, A, graphs=1 - NT, breaks=2 * NT),  # (NumPy 1.x: a plain tuple)
    case(linalg_norms, A),
    case(linalg_norm_batch, BATCH),
    case(linalg_norm_complex, C128),
    case(linalg_norm_fro_vector_raises, V4, graphs=0, breaks=1),
    case(linalg_norm_improper, BATCH, graphs=0, breaks=1),
    case(linalg_singular, SINGULAR),
    case(linalg_singular_solve, SINGULAR, V3),
    case(linalg_not_positive, -SPD),
    case(linalg_singular_after_effect, SINGULAR, graphs=0, breaks=1),
    case(linalg_not_square, A, graphs=0, breaks=1),
    case(linalg_singular_caught, SINGULAR, graphs=0, breaks=1),  # (an op in a try block)
    case(linalg_float16_breaks, SPD, graphs=1, breaks=1),
    case(linalg_inv_det, SPD32),
    case(linalg_svd, F32, graphs=1),
    case(covariances, A),
    case(cov_dtype, F32),
    case(histograms, A, graphs=1, breaks=WEAK1),
    case(histogram_ints, I64, graphs=1 - WEAK1, breaks=WEAK1),
    case(histogram_kept, A),
    case(histogram_no_range_breaks, A, graphs=0, breaks=1),
    case(unpack_rows, A),
    case(unpack_transposed, rng.standard_normal((5, 3))),
    case(unpack_vector, V3),
    case(unpack_computed, A),
    case(unpack_wrong_count, A, graphs=0, breaks=1),
    case(unpack_scalar_raises, A, graphs=1, breaks=1),
    case(iterate_rows, A),
    case(iterate_vector_sees_changes, V4),
    case(iterate_enumerate_zip, A, A[::-1].copy()),
    case(iterate_list_and_tuple, A),
    case(iterate_computed_views, A),
    case(iterate_with_print, A, graphs=1, breaks=1),  # (the rest of the frame continues in place)
    case(iterate_graph_value_with_print, A, graphs=1, breaks=1),
    case(iterate_many_rows, rng.standard_normal((40, 2))),  # (a loop op: test_numpy_loops.py)
    case(iterate_scalar_raises, A, graphs=1, breaks=1),
    case(iterate_zero_d_raises, A, graphs=1, breaks=1),
    case(tuple_index_built, A, 2),
    case(tuple_index_from_list, BATCH),
    case(mask_reductions, V4, graphs=1, breaks=1),  # (the truth of an any())
    case(mask_reductions_captured, V4),
    case(mask_two_arrays, V4, V4[::-1].copy()),
    case(mask_two_dimensional, A),
    case(mask_empty, V4),
    case(mask_max_of_empty_raises, V4),
    case(mask_max_of_empty_after_effect, V4, graphs=1, breaks=1),
    case(mask_matmul_rows, A),
    case(mask_len, V4),
    case(mask_shape, A),
    case(mask_reshape_breaks, V4, graphs=1, breaks=1),
    case(mask_squeeze_breaks, A, graphs=1, breaks=1),
    case(mask_iteration_breaks, V4, graphs=1, breaks=1),
    case(mask_wrong_length_raises, V4, V3, graphs=1, breaks=1),
    case(mask_stores, V4, V4[::-1].copy()),
    case(mask_store_into_input, V4),
    case(mask_store_rows, A),
    case(mask_store_wrong_size_breaks, np.array([1.0, -1.0, 2.0, 3.0]), graphs=1, breaks=1),
    case(mask_store_float_into_ints_breaks, I64, graphs=1, breaks=1),
    case(take_rows_and_columns, A, np.array([2, 0, 1])),
    case(take_by_argsort, V4),
    case(take_by_numpy_integer, A),
    case(take_small_ints, A, U8[0]),
    case(take_out_of_bounds_raises, V4, np.array([0, 1])),
    case(take_out_of_bounds_list_raises, V4, graphs=0, breaks=1),
    case(take_float_index_raises, V4, graphs=0, breaks=1),
    case(take_after_effect_breaks, V4, np.array([1, 0]), graphs=0, breaks=1),
    case(take_stores, V4, np.array([3, 1])),
    case(take_unused_raises, V4, np.array([0, 1])),
    case(take_list_of_bools_breaks, V3, graphs=0, breaks=1),
    case(diag_forms, SQ, V3),
    case(diag_of_diag, A),
    case(diag_of_ints_and_bools, I64, BOOL),
    case(diag_view_sees_changes, SQ),
    case(diag_of_batch_raises, BATCH, graphs=0, breaks=1),
    case(diag_float_k_breaks, SQ, graphs=0, breaks=1),
    case(traces, SQ, BATCH),
    case(trace_dtypes, I8, BOOL, F32),
    case(trace_of_vector_raises, V4, graphs=0, breaks=1),
    case(trace_same_axes_raises, BATCH, graphs=0, breaks=1),
    case(vanders, V4),
    case(vander_dtypes, I8, BOOL, F32),
    case(vander_of_matrix_raises, A, graphs=0, breaks=1),
    case(polyvals, V3, V4, A),
    case(polyval_ints, I64),
    case(polyval_mixed, V3, F32, graphs=1 - LEGACY, breaks=LEGACY),
    case(polyval_mixed, I64[0], F32, graphs=1 - LEGACY, breaks=LEGACY),
    case(polynomial_fit, np.linspace(-1.0, 1.0, 9), np.sin(np.linspace(0.0, 3.0, 9))),
    case(lstsq_results, rng.standard_normal((6, 3)), rng.standard_normal(6)),
    case(lstsq_results, A, V3),  # (more columns than rows: no residuals)
    case(lstsq_matrix_rhs, rng.standard_normal((6, 3)), rng.standard_normal((6, 2))),
    case(lstsq_rank_deficient, rng.standard_normal((6, 2)), rng.standard_normal(6)),
    case(lstsq_results, F32.T.copy(), F32[0]),
    case(lstsq_incompatible_raises, SQ, V3, graphs=0, breaks=1),
    case(inserts, V4, A),
    case(insert_ints, I64, F32),
    case(moving_average, np.cumsum(V4), 2),
    case(insert_out_of_bounds_raises, V4, graphs=0, breaks=1),
    case(insert_bad_value_raises, V4, graphs=0, breaks=1),
    case(spectrum, rng.standard_normal(16)),
    case(rfft_forms, rng.standard_normal(10), A),
    case(rfft_dtypes, F32, I64),
    case(rfft_zero_points_raises, V4, graphs=0, breaks=1),
    case(rfft_bad_axis_raises, V4, graphs=0, breaks=1),
    case(rfftfreq_zero_d_raises, V4, graphs=1, breaks=1),
    case(index_grids, A),
    case(arrays_of_scalars, V4),
    case(arrays_of_rows, A),
    case(array_of_comprehension, A),
    case(arrays_of_mixed_dtypes, I64, F32),
    case(array_of_different_shapes_raises, A, graphs=1, breaks=1),
    case(nonzeros, V4, A),
    case(peak_detect, np.sin(np.linspace(0.0, 20.0, 50)), 0.5),
    case(nonzero_with_mask, V4),
    case(nonzero_len, V4),
    case(nonzero_of_scalar_breaks, V4, graphs=1, breaks=1),
]


@run_cases(CASES)
def test_breadth(fn, args, kwargs, graphs, breaks, fallbacks):
    isolated_check(fn, args, kwargs, graphs, breaks, fallbacks)


def masked_layer(x, w):
    keep = x[:, 0] > 0
    rows = x[keep]
    h = np.maximum(rows @ w, 0.0)
    out = np.zeros_like(x @ w)
    out[keep] = h
    return out, h.sum(axis=0), rows.max()


def test_masks_over_dynamic_shapes():
    """Batch sizes that change (the batch becomes a dynamic dimension) and masks selecting everything, nothing
    and some rows: one translated function, each call compared with its plain run."""
    w = rng.standard_normal((4, 3))
    sets = [(rng.standard_normal((n, 4)), w) for n in (5, 7, 9, 2, 12)]
    sets.append((np.abs(sets[0][0]), w))   # every row
    sets.append((-np.abs(sets[1][0]), w))  # no row: max of an empty selection raises
    check_varied(masked_layer, sets)


def test_tuple_values_in_text_json_and_drawing():
    """A function of several results is one op making a tuple value, read by one getitem per item; the graph's
    text, JSON and drawing say so."""
    render = pytest.importorskip("sot.render")
    import sot

    def f(a):
        q, r = np.linalg.qr(a)
        return q @ r

    e = sot.explain(f, SQ)
    (g,) = e.graphs
    assert "linalg.qr(%0) : tuple of 2" in g["text"], g["text"]
    (qr,) = [op for op in g["json"]["ops"] if op["op"] == "linalg.qr"]
    assert qr["parts"] == 2
    assert "tuple of 2" in render.graph_dot(g["json"])


FFT_FIRST_USE = """
import sys
import numpy as np
import sot

def f(x):
    return np.fft.rfft(x) * 2.0

first = "numpy.fft" not in sys.modules
e = sot.explain(f, np.arange(8.0))
assert np.array_equal(sot.symbolic_translate(f)(np.arange(8.0)), np.fft.rfft(np.arange(8.0)) * 2.0)
print(first, e.graph_break_count, e.graph_count, e.break_reasons)
"""


def test_fft_first_use_in_a_translated_frame():
    """NumPy 2 loads np.fft at its first use (the numpy module's __getattr__): a first use inside a translated frame
    imports it there, as plain Python would, and the call is captured (a fresh interpreter: this one has np.fft)."""
    pytest.importorskip("sot")
    r = subprocess.run([sys.executable, "-c", FFT_FIRST_USE], capture_output=True, text=True, env=dict(os.environ),
                       check=False)
    assert r.returncode == 0, r.stderr
    first, breaks, graphs = r.stdout.split()[:3]
    assert (first, breaks, graphs) == (str(not np.__version__.startswith("1.")), "0", "1"), r.stdout
