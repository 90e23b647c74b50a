"""More NumPy differential tests: einsum's common forms, broadcasting corners (size-1 and empty dimensions,
0-d arrays), dtype corners (bool/int/float mixes, unsigned with signed, float16, complex), NumPy scalars from
reductions mixed with arrays, aliasing (views returned, changed in place, inputs that are one array), arrays
in containers, class attributes and closures, inlined helpers of several levels, unsupported NumPy calls.
PYTEST_DONT_REWRITE"""

import pytest

from numpy_differential import LEGACY, case, isolated_check, run_cases

np = pytest.importorskip("numpy")

rng = np.random.default_rng(5)
A = rng.standard_normal((3, 4))
B = rng.standard_normal((4, 5))
C = rng.standard_normal((3, 4))
V3 = rng.standard_normal(3)
V4 = rng.standard_normal(4)
SQ = rng.standard_normal((4, 4))
BATCH = rng.standard_normal((2, 3, 4))
EMPTY = np.zeros((0, 4))
ONE = rng.standard_normal((1, 4))
I8 = np.arange(-4, 8, dtype=np.int8).reshape(3, 4)
U16 = np.arange(12, dtype=np.uint16).reshape(3, 4)
I64 = np.arange(12, dtype=np.int64).reshape(3, 4)
F32 = rng.standard_normal((3, 4)).astype(np.float32)
C64 = (rng.standard_normal((3, 4)) + 1j).astype(np.complex64)
BOOL = A > 0


def einsum_matmul(a, b):
    return np.einsum("ij,jk->ik", a, b)


def einsum_transpose_trace_sum(s):
    return np.einsum("ij->ji", s), np.einsum("ii", s), np.einsum("ij->", s), np.einsum("ii->i", s)


def einsum_batched(x, b):
    return np.einsum("bij,jk->bik", x, b)


def einsum_outer_inner(u, v):
    return np.einsum("i,j->ij", u, v), np.einsum("i,i->", v, v), np.einsum("i,i", v, v)


def einsum_implicit(a, b):
    return np.einsum("ij,jk", a, b)


def einsum_ellipsis_breaks(x):
    return np.einsum("...ij->...ji", x)


def broadcast_size_one(a, one):
    return a + one, one * 2 - a


def broadcast_empty(e, v):
    return e + v, (e * 2).sum(axis=0), e.sum()


def broadcast_zero_d_with_empty(e):
    return e + np.float64(1.0)


def broadcast_three_operands(a, v, col):
    return np.where(a > 0, v, col)


def unsigned_signed_mix(u, i):
    return u + i, u - 1, u * i


def int64_with_float32(i, f):
    return i + f, i * 1.5


def bool_with_float32(p, f):
    return p * f, p + f


def complex64_mix(c, f):
    return c + f, c * 2, c * (1 + 2j)


def int8_wraparound(i):
    return i * 100, i + i


def int_div_by_zero(i):
    with np.errstate(divide="ignore"):
        return i // (i - i + 1), i % 3


def reduction_scalar_mixed(a, f):
    s = a.sum()
    return f * s, a / s, s * 2


def reduction_scalar_float32(f):
    s = f.sum()
    return f * s, f - f.mean()


def reduction_of_ints_with_array(i):
    return i - i.sum()


def views_returned(a):
    return a[1], a[:, 1:3], a.T, a.reshape(4, 3), a[None], np.expand_dims(a, 0)


def in_place_visible_through_view(a):
    v = a.T
    a *= 2.0
    return v


def setitem_through_view(a):
    v = a[1:]
    v[0, 0] = 42.0
    return a[1, 0]


def same_array_twice(a, b):
    a[0, 0] = -1.0
    return b[0, 0], a is b


def list_of_arrays_out(a):
    return [a, a * 2, a.sum(axis=0)]


def dict_of_arrays_in(d):
    return d["w"] @ d["x"], sorted(d)


def nested_tuple_out(a):
    return (a.max(), (a.min(), (a.mean(),)))


class Layer:
    def __init__(self, w, b):
        self.w = w
        self.b = b

    def __call__(self, x):
        return np.tanh(x @ self.w + self.b)


LAYER = Layer(rng.standard_normal((4, 5)), rng.standard_normal(5))


def method_of_layer(x):
    return LAYER(x)


def layer_attributes(layer, x):
    return x @ layer.w + layer.b


def update_layer_in_place(layer, g):
    layer.w -= 0.01 * g
    return layer.w.sum()


def closure_factory_scale(a):
    def make(s):
        return lambda v: v * s

    double = make(2.0)
    return double(a) + make(a.max())(a)


def _level3(x):
    return x * x


def _level2(x):
    return _level3(x) + 1.0


def _level1(x):
    return np.sqrt(_level2(x))


def helpers_three_levels(x):
    return _level1(x)


def helper_with_kwargs(x):
    return _normalize(x, axis=0, eps=1e-3)


def _normalize(x, axis=-1, eps=1e-6):
    return x / (np.abs(x).sum(axis=axis, keepdims=True) + eps)


def keyword_reductions(a):
    return np.sum(a=a, axis=1), a.mean(axis=0, keepdims=True), np.max(a, axis=-1, keepdims=False)


def methods_chain(a):
    return a.T.reshape(-1).cumsum().reshape(2, 6).max(axis=1)


def unsupported_linalg(s):
    return np.linalg.eigvals(s) @ s  # (its dtype, real or complex, depends on the data)


def unsupported_method_then_math(a):
    b = a.argpartition(1, axis=1)
    return b * 2


def tolist_breaks(a):
    return a.sum(axis=0).tolist()


def iteration_over_rows(a):
    total = 0.0
    for row in a:
        total += row.sum()
    return total


def truth_of_array_breaks(v):
    return bool(v.any()), v


def zero_d_from_reshape(v):
    z = v[:1].reshape(())
    return z * v, np.add(z, 1.0)


def float16_reductions(h):
    return h.sum(), h.mean(axis=0), h.max(), (h * h).sum(axis=1)


def comparison_chain_bools(a):
    m = (a > -0.5) & (a < 0.5)
    return m, m.sum(), np.where(m, a, 0.0)


def argmax_then_index(a):
    i = a.argmax()
    return a.reshape(-1)[i]


def constant_arrays_folded():
    x = np.arange(6).reshape(2, 3)
    return x * 2 + 1, x.sum()


CASES = [
    case(einsum_matmul, A, B),
    case(einsum_transpose_trace_sum, SQ),
    case(einsum_batched, BATCH, B),
    case(einsum_outer_inner, V3, V4),
    case(einsum_implicit, A, B),
    case(einsum_ellipsis_breaks, BATCH, graphs=0, breaks=1),
    case(broadcast_size_one, A, ONE),
    case(broadcast_empty, EMPTY, V4),
    case(broadcast_zero_d_with_empty, EMPTY),
    case(broadcast_three_operands, A, V4, V3[:, None]),
    case(unsigned_signed_mix, U16, I8),
    case(int64_with_float32, I64, F32),
    case(bool_with_float32, BOOL, F32),
    case(complex64_mix, C64, F32),
    case(int8_wraparound, I8),
    case(int_div_by_zero, I64, graphs=0, breaks=3),  # np.errstate, the with block, an op inside it break
    case(reduction_scalar_mixed, A, F32, graphs=1 + int(LEGACY), breaks=int(LEGACY)),
    case(reduction_scalar_float32, F32),
    case(reduction_of_ints_with_array, I8, graphs=1, breaks=int(LEGACY)),
    case(views_returned, A),
    case(in_place_visible_through_view, A),
    case(setitem_through_view, A),
    case(same_array_twice, A, A, graphs=1, breaks=1),  # (is between two inputs)
    case(list_of_arrays_out, A),
    case(dict_of_arrays_in, {"w": A, "x": B}, graphs=1, breaks=0),
    case(nested_tuple_out, A),
    case(method_of_layer, A, graphs=1, breaks=1),  # (calling an instance: __call__ is not inlined)
    case(layer_attributes, LAYER, A),
    case(update_layer_in_place, Layer(B.copy(), V4), B),
    case(closure_factory_scale, A),
    case(helpers_three_levels, A),
    case(helper_with_kwargs, A),
    case(keyword_reductions, A),
    case(methods_chain, A),
    case(unsupported_linalg, SQ, graphs=1, breaks=1),
    case(unsupported_method_then_math, A, graphs=1, breaks=1),
    case(tolist_breaks, A, graphs=1, breaks=1),
    case(iteration_over_rows, A),  # (unrolled: a row per step)
    case(truth_of_array_breaks, V3, graphs=1, breaks=1),
    case(zero_d_from_reshape, V3),
    case(float16_reductions, F32.astype(np.float16)),
    case(comparison_chain_bools, A),
    case(argmax_then_index, A),  # (a NumPy integer as an index)
    case(constant_arrays_folded),
]


@run_cases(CASES)
def test_more(fn, args, kwargs, graphs, breaks, fallbacks):
    isolated_check(fn, args, kwargs, graphs, breaks, fallbacks)
