"""NumPy breadth (issue 20, item 5): outer products, ufunc methods (outer, reduce, accumulate), flips, rolls,
triangles, sorts (functions and ndarray methods, ``x.sort()`` in place), take_along_axis, linspace with dtype and
endpoint. Each compared with plain NumPy on the first call, from the cache and with
varied arguments (other values, dimensions one longer, another dtype); graph and break counts pinned. Errors (a bad
axis, an index out of bounds) reach the caller as in plain NumPy; a call that may raise on its data (IndexError)
is not captured while side effects wait to be replayed after the graph.
PYTEST_DONT_REWRITE"""

import pytest

from numpy_differential import case, isolated_check, run_cases

np = pytest.importorskip("numpy")

rng = np.random.default_rng(20)
A = rng.standard_normal((3, 4))
SQ = rng.standard_normal((4, 4))
V4 = rng.standard_normal(4)
V3 = rng.standard_normal(3)
BATCH = rng.standard_normal((2, 3, 4))
F32 = A.astype(np.float32)
I64 = rng.integers(-5, 5, (3, 4))
I32 = I64.astype(np.int32)
I8 = I64.astype(np.int8)
U8 = np.abs(I64).astype(np.uint8)
BOOL = A > 0
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
]


@run_cases(CASES)
def test_breadth(fn, args, kwargs, graphs, breaks, fallbacks):
    isolated_check(fn, args, kwargs, graphs, breaks, fallbacks)
