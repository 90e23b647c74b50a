"""NumPy differential tests: reductions with every axis form and keepdims, cumulative ops, matmul/dot, reshapes,
transposes, axis moves, squeeze/expand_dims, concatenate/stack/split, basic slicing and integer indexing,
broadcast_to, array creation with static arguments, ndarray attributes as constants.
PYTEST_DONT_REWRITE"""

import pytest

from numpy_differential import case, isolated_check, run_cases

np = pytest.importorskip("numpy")

rng = np.random.default_rng(11)
A = rng.standard_normal((4, 5))
T3 = rng.standard_normal((2, 3, 4))
V = rng.standard_normal(6)
I16 = np.arange(24, dtype=np.int16).reshape(4, 6)
U8 = np.arange(10, dtype=np.uint8)
BOOL = (np.arange(20) % 3 == 0).reshape(4, 5)
F16 = rng.standard_normal((3, 4)).astype(np.float16)
M1 = rng.standard_normal((3, 4))
M2 = rng.standard_normal((4, 2))
BATCH = rng.standard_normal((5, 3, 4))


def sum_all(a):
    return a.sum(), np.sum(a)


def sum_axis0_axis1(a):
    return a.sum(axis=0), a.sum(axis=1), np.sum(a, 0)


def sum_negative_axis(a):
    return a.sum(axis=-1), a.sum(-2)


def sum_axis_tuple(t):
    return t.sum(axis=(0, 2)), np.sum(t, axis=(1, 2))


def sum_keepdims(t):
    return t.sum(axis=1, keepdims=True), t.sum(keepdims=True), np.sum(t, axis=(0, 1), keepdims=True)


def sum_dtype(i):
    return i.sum(dtype=np.float32), i.sum(), np.sum(i, axis=0, dtype=np.int32)


def sum_small_ints(u):
    return u.sum(), u.prod(), u.cumsum()


def sum_bools(p):
    return p.sum(), p.sum(axis=0), p.mean()


def prod_reduction(a):
    return np.prod(a, axis=1), a.prod()


def mean_axes(t):
    return t.mean(), t.mean(axis=0), np.mean(t, axis=(0, 2)), t.mean(axis=-1, keepdims=True)


def mean_of_ints(i):
    return i.mean(), i.mean(axis=1)


def mean_float16(h):
    return h.mean(), h.mean(axis=0)


def max_min(a):
    return a.max(), a.min(axis=0), np.max(a, axis=1), np.min(a), np.amax(a, axis=0)


def max_keepdims(t):
    return t.max(axis=2, keepdims=True), t.min(axis=(0, 1))


def argmax_argmin(a):
    return a.argmax(), a.argmin(axis=0), np.argmax(a, axis=1), np.argmin(a, axis=-1)


def any_all(p):
    return p.any(), p.all(), p.any(axis=0), np.all(p, axis=1)


def var_std(a):
    return a.var(), a.std(axis=0), np.var(a, axis=1), np.std(a, ddof=1)


def var_of_ints(i):
    return i.var(), i.std(axis=0)


def cumsum_cumprod(a):
    return np.cumsum(a, axis=0), a.cumprod(axis=1), a.cumsum()


def reduce_then_broadcast(a):
    return a - a.max(axis=1, keepdims=True)


def axis_out_of_range(a):
    return a.sum(axis=2)


def repeated_axis(t):
    return t.sum(axis=(1, 1))


def max_of_empty(a):
    return a[:, :0].max(axis=1)


def matmul_2d(a, b):
    return a @ b


def matmul_vec(a, v):
    return a @ v, v @ a.T


def vec_dot_vec(v):
    return v @ v, np.dot(v, v)


def matmul_batched(b, m):
    return b @ m, np.matmul(b, m)


def dot_2d(a, b):
    return np.dot(a, b), a.dot(b)


def matmul_mismatch(a):
    return a @ a


def matmul_int(i):
    return i @ i.T


def reshape_forms(a):
    return a.reshape(5, 4), a.reshape((2, 10)), a.reshape(-1), np.reshape(a, (10, -1)), a.reshape(-1, 2, 5)


def reshape_bad(a):
    return a.reshape(3, 7)


def transpose_forms(t):
    return t.T, t.transpose(), t.transpose(2, 0, 1), np.transpose(t, (1, 0, 2)), t.transpose((0, 2, 1))


def swapaxes_moveaxis(t):
    return t.swapaxes(0, 2), np.swapaxes(t, 1, -1), np.moveaxis(t, 0, -1), np.moveaxis(t, [0, 1], [-1, -2])


def expand_squeeze(a):
    e = np.expand_dims(a, 0)
    f = np.expand_dims(a, (1, 3))
    return e, f, e.squeeze(), np.squeeze(f, axis=1), f.squeeze(axis=(1, 3))


def squeeze_bad_axis(a):
    return a.squeeze(axis=0)


def ravel_flatten(t):
    return t.ravel(), t.flatten(), np.ravel(t)


def concatenate_axes(a):
    return np.concatenate([a, a], axis=0), np.concatenate((a, a * 2), axis=1), np.concatenate([a, a], -1)


def concatenate_mixed_dtypes(a, i):
    return np.concatenate([a[:, :4], i[:4, :4].astype(np.float32)])


def stack_axes(v):
    w = v * 2
    return np.stack([v, w]), np.stack((v, w), axis=1), np.stack([v, w, v], axis=-1)


def split_sections(a):
    parts = np.split(a, 2, axis=1 - 1)
    return parts[0] + parts[1]


def split_indices(v):
    a, b, c = np.split(v, [2, 4])
    return a, b, c


def split_unequal(v):
    return np.split(v, 4)


def slicing_basic(a):
    return a[1:3], a[:, ::2], a[::-1], a[1, 2:], a[-1], a[..., 1], a[None, 0], a[:, None, :]


def indexing_scalars(a):
    return a[0, 0], a[-1, -1] * 2


def index_out_of_range(a):
    return a[7]


def slice_of_slice(t):
    s = t[1:, :2]
    return s[0], s[:, 1:, ::2]


def boolean_mask(a):
    return a[a > 0]


def mask_count(a, t):
    # (len() and .shape of a masked array: Python ints made where the graph runs, no break)
    picked = a[a > t]
    n = len(picked)
    return n, picked.shape, picked.shape[0] * 2 + 1, n / max(len(a), 1), -n


def masked_rows_count(m, t):
    rows = m[m[:, 0] > t]
    return rows.shape, len(rows), rows.sum(axis=0)


def prefix_means(x):
    # (len() of x[:i] in a loop body: where loops are native, tier C's)
    out = np.zeros_like(x)
    for i in range(1, x.shape[0]):
        out[i] = x[:i].sum() / len(x[:i])
    return out


def fancy_index(a):
    return a[[0, 2]]


def broadcast_to_shape(v):
    return np.broadcast_to(v, (3, 6)), np.broadcast_to(v[:1], (2, 6))


def creation_static():
    return np.zeros((2, 3)), np.ones(4, dtype=np.int32), np.full((2, 2), 7), np.full(3, 1.5, dtype=np.float32)


def creation_empty_shape_only():
    return np.empty((3, 2)).shape


def creation_like(a):
    return np.zeros_like(a), np.ones_like(a, dtype=np.int8), np.full_like(a, 3.0), np.empty_like(a).shape


def arange_linspace_eye():
    return np.arange(5), np.arange(1, 10, 2), np.arange(0.0, 1.0, 0.25), np.linspace(0, 1, 5), np.eye(3), np.eye(2, 3, dtype=np.int64)


def arange_with_input_bound(n):
    return np.arange(n) * 2


def attributes_constant(a):
    return a.shape, a.ndim, a.size, a.dtype, a.itemsize, a.nbytes, len(a)


def shape_drives_python(a):
    rows, cols = a.shape
    out = a
    for _ in range(rows // 2):
        out = out + 1.0
    return out, rows * cols


def astype_copy(a):
    c = a.copy()
    d = np.copy(a)
    return c, d, a.astype(np.float32).dtype


def unsupported_function(a):
    return np.unique(a)


def unsupported_method(a):
    return a.diagonal()


def random_breaks(a):
    rng = np.random.default_rng(0)  # (seeded: the plain and translated runs draw the same numbers)
    return a + rng.standard_normal(a.shape)


CASES = [
    case(sum_all, A),
    case(sum_axis0_axis1, A),
    case(sum_negative_axis, A),
    case(sum_axis_tuple, T3),
    case(sum_keepdims, T3),
    case(sum_dtype, I16),
    case(sum_small_ints, U8),
    case(sum_bools, BOOL),
    case(prod_reduction, A),
    case(mean_axes, T3),
    case(mean_of_ints, I16),
    case(mean_float16, F16),
    case(max_min, A),
    case(max_keepdims, T3),
    case(argmax_argmin, A),
    case(any_all, BOOL),
    case(var_std, A),
    case(var_of_ints, I16),
    case(cumsum_cumprod, A),
    case(reduce_then_broadcast, A),
    case(axis_out_of_range, A, graphs=0, breaks=1),
    case(repeated_axis, T3, graphs=0, breaks=1),
    case(max_of_empty, A, graphs=1, breaks=1),
    case(matmul_2d, M1, M2),
    case(matmul_vec, M1, rng.standard_normal(4)),
    case(vec_dot_vec, V),
    case(matmul_batched, BATCH, M2),
    case(dot_2d, M1, M2),
    case(matmul_mismatch, M1, graphs=0, breaks=1),
    case(matmul_int, I16),
    case(reshape_forms, A),
    case(reshape_bad, A, graphs=0, breaks=1),
    case(transpose_forms, T3),
    case(swapaxes_moveaxis, T3),
    case(expand_squeeze, A),
    case(squeeze_bad_axis, A, graphs=0, breaks=1),
    case(ravel_flatten, T3),
    case(concatenate_axes, A),
    case(concatenate_mixed_dtypes, A, I16),
    case(stack_axes, V),
    case(split_sections, A),
    case(split_indices, V),
    case(split_unequal, V, graphs=0, breaks=1),
    case(slicing_basic, A),
    case(indexing_scalars, A),
    case(index_out_of_range, A, graphs=0, breaks=1),
    case(slice_of_slice, T3),
    case(boolean_mask, A),  # (its count a size known when the graph runs)
    case(mask_count, A, 0.5, variants=[((A, 99.0), {}), ((A * -1.0, -99.0), {}), ((A[:1], 0.0), {})]),
    case(masked_rows_count, A, 0.5, variants=[((A, 99.0), {}), ((A + 1.0, -99.0), {})]),
    case(prefix_means, np.linspace(-1.0, 2.0, 40), variants=[((np.linspace(0.0, 1.0, 70),), {}),
                                                             ((np.ones(2, dtype=np.float32),), {})]),
    case(fancy_index, A),
    case(broadcast_to_shape, V),
    case(creation_static),
    case(creation_empty_shape_only, graphs=0),
    case(creation_like, A),
    case(arange_linspace_eye),
    case(arange_with_input_bound, 6),
    case(attributes_constant, A, graphs=0),
    case(shape_drives_python, A),
    case(astype_copy, A),
    case(unsupported_function, A, graphs=0, breaks=1),
    case(unsupported_method, A, graphs=0, breaks=1),
    case(random_breaks, A, graphs=1, breaks=3),
]


@run_cases(CASES)
def test_shapes(fn, args, kwargs, graphs, breaks, fallbacks):
    isolated_check(fn, args, kwargs, graphs, breaks, fallbacks)
