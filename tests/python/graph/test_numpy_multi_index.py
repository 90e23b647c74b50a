"""Several integer indices at once (issue 20, item 5): ``x[rows, cols]``, ``p[np.arange(n), y]``, ``img[yy, xx]``
with index arrays of any shape, mixed with Python ints and NumPy integers, a mask then ints (``pos[below, 1]``:
the mask's count a size known only when the graph runs), and the stores through them
(``g[np.arange(n), y] -= 1``). The indices broadcast together and the result takes x's other dimensions; an index
out of bounds raises IndexError where the graph runs, as in plain NumPy, so the op is not captured while side
effects wait to be replayed. Each case compared with plain NumPy on the first call, from the cache and with
varied arguments (other values, dimensions one longer, another dtype); graph and break counts pinned.
PYTEST_DONT_REWRITE"""

import pytest

from numpy_differential import case, check_varied, isolated_check, run_cases

np = pytest.importorskip("numpy")

rng = np.random.default_rng(21)
P = rng.random((5, 3))
Y = np.array([0, 2, 1, 1, 0])
IMG = rng.standard_normal((6, 7))
YY = np.array([[0, 1], [2, 5]])
XX = np.array([[1, 2], [3, 5]])
CUBE = rng.standard_normal((4, 5, 3))

g_count = 0


def pick_per_row(p, y):
    return p[np.arange(p.shape[0]), y]


def cross_entropy_grad(p, y):
    n = p.shape[0]
    g = p.copy()
    g[np.arange(n), y] -= 1.0
    return g / n, -np.log(p[np.arange(n), y]).mean()


def gather_2d(img, yy, xx):
    return img[yy, xx] * 2.0 + img[yy, xx + 1]


def int_and_array(img, xx):
    return img[1, xx], img[xx, -1], img[xx[0], xx]


def numpy_integer_and_array(cube, y):
    i = cube[:, 0, 0].argmax()
    return cube[i, y], cube[y[:3], y[1:4]]


def leaves_trailing_dimensions(cube, y):
    return cube[y[:2], y[2:4]].sum(axis=-1)


def stores(img, yy, xx):
    out = img.copy()
    out[yy, xx] = 0.0
    out[yy, xx + 1] = np.arange(yy.size, dtype=img.dtype).reshape(yy.shape)
    out[0, xx] += 10.0
    return out


def reflect_below(pos, vel):
    below = pos[:, 1] < 0.0
    pos[below, 1] = -pos[below, 1]
    vel[below, 1] *= -0.9
    return pos, vel


def mask_and_int(img):
    m = img[:, 0] > 0
    return img[m, 1], img[m, -1].sum(), img[m, 2] * img[m, 3]


def mask_and_int_out_of_bounds_breaks(img):
    return img[img[:, 0] > 0, 9]


def unsigned_indices(img, xx):
    return img[xx.astype(np.uint8), xx.astype(np.uint16) + 1]


def out_of_bounds_raises(img, xx):
    return img[xx + 6, xx]


def shape_mismatch_breaks(img, two, three):
    return img[two, three]


def too_many_indices_breaks(v, two):
    return v[two, two[::-1]]


def float_index_breaks(img, two):
    return img[two * 1.0, two]


def after_effect_breaks(img, xx):
    global g_count
    g_count = 3
    return img[xx, xx]


CASES = [
    case(pick_per_row, P, Y),
    case(cross_entropy_grad, P, Y),
    case(gather_2d, IMG, YY, XX),
    case(int_and_array, IMG, XX),
    case(numpy_integer_and_array, CUBE, np.array([0, 2, 1, 1, 0])),
    case(leaves_trailing_dimensions, CUBE, np.array([0, 3, 1, 4])),
    case(stores, IMG, YY, XX),
    case(reflect_below, IMG[:, :2].copy(), IMG[:, 2:4].copy()),
    case(mask_and_int, IMG),
    case(mask_and_int_out_of_bounds_breaks, IMG, graphs=1, breaks=1),
    case(unsigned_indices, IMG, XX),
    case(out_of_bounds_raises, IMG, XX),
    case(shape_mismatch_breaks, IMG, np.array([0, 1]), np.array([0, 1, 2]), graphs=0, breaks=1),
    case(too_many_indices_breaks, IMG[0], np.array([0, 1]), graphs=1, breaks=1),
    case(float_index_breaks, IMG, np.array([0, 1]), graphs=1, breaks=1),
    case(after_effect_breaks, IMG, XX, graphs=0, breaks=1),
]


@run_cases(CASES)
def test_multi_index(fn, args, kwargs, graphs, breaks, fallbacks):
    isolated_check(fn, args, kwargs, graphs, breaks, fallbacks)


def test_batches_of_other_sizes():
    """One translated function over batches of several sizes and label sets (the batch becomes a dynamic
    dimension), each call compared with its plain run."""
    sets = []
    for n, k in ((5, 3), (8, 3), (2, 4), (11, 6)):
        p = rng.random((n, k))
        sets.append((p, rng.integers(0, k, n)))
    check_varied(cross_entropy_grad, sets)
