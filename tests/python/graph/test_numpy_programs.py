"""NumPy differential tests: whole programs (softmax, layernorm, MLP forward, attention, k-means step, ...),
data-dependent control flow (if/while on array values, float(), .item()), loops over range with arrays,
containers of arrays in and out, closures over arrays, inlined helpers, in-place changes to inputs (operators,
item stores, out=), aliasing views, prints between array code.
PYTEST_DONT_REWRITE"""

import pytest

from numpy_differential import LEGACY, case, isolated_check, run_cases

np = pytest.importorskip("numpy")

rng = np.random.default_rng(3)
X = rng.standard_normal((8, 16))
W1 = rng.standard_normal((16, 32)) * 0.1
B1 = rng.standard_normal(32) * 0.1
W2 = rng.standard_normal((32, 4)) * 0.1
B2 = rng.standard_normal(4) * 0.1
Q = rng.standard_normal((2, 5, 8))
K = rng.standard_normal((2, 5, 8))
VV = rng.standard_normal((2, 5, 8))
PTS = rng.standard_normal((20, 2))
CENTERS = PTS[:3].copy()
GAMMA = rng.standard_normal(16)
BETA = rng.standard_normal(16)
V = rng.standard_normal(10)
F32 = rng.standard_normal((4, 4)).astype(np.float32)


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def log_softmax(x):
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


def layernorm(x, gamma, beta):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * gamma + beta


def _dense(x, w, b):
    return x @ w + b


def _relu(x):
    return np.maximum(x, 0.0)


def mlp_forward(x, w1, b1, w2, b2):
    h = _relu(_dense(x, w1, b1))
    return softmax(_dense(h, w2, b2))


def attention(q, k, v):
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    return softmax(scores) @ v


def kmeans_step(points, centers):
    d = ((points[:, None, :] - centers[None, :, :]) ** 2).sum(axis=-1)
    labels = d.argmin(axis=1)
    return labels, d.min(axis=1).sum()


def mse_loss_and_grad(x, w, y):
    pred = x @ w
    err = pred - y
    loss = (err ** 2).mean()
    grad = 2.0 * x.T @ err / x.shape[0]
    return loss, grad


def sgd_update_in_place(w, g):
    w -= 0.1 * g
    return None


def normalize_rows(x):
    norms = np.sqrt((x * x).sum(axis=1, keepdims=True))
    return x / np.maximum(norms, 1e-12)


def cosine_similarity(a, b):
    an = a / np.sqrt((a * a).sum(axis=-1, keepdims=True))
    bn = b / np.sqrt((b * b).sum(axis=-1, keepdims=True))
    return an @ bn.T


def pairwise_distances(p):
    sq = (p * p).sum(axis=1)
    return np.sqrt(np.maximum(sq[:, None] + sq[None, :] - 2.0 * p @ p.T, 0.0))


def batchnorm_inference(x, mean, var):
    return (x - mean) / np.sqrt(var + 1e-5)


def residual_block(x, w):
    return x + np.tanh(x @ w)


def if_on_sum(x):
    if x.sum() > 0:
        return x * 2
    return -x


def not_of_compare(x):
    # 3.13: COMPARE_OP with its bool flag, then UNARY_NOT, which takes only an exact bool.
    return not (x.sum() > 0)


def if_not_compare(x):
    if not (x.max() > 1.0):
        return x - 1
    return x + 1


def if_on_any(x):
    if np.any(x > 2.0):
        x = np.clip(x, -2.0, 2.0)
    return x.mean()


def while_on_norm(x):
    steps = 0
    while np.abs(x).max() > 1.0:
        x = x / 2.0
        steps += 1
    return x, steps


class _Stats:
    def __init__(self, x):
        self.mean = x.mean()
        self.centered = x - self.mean

    def scaled(self, k):
        return self.centered * k


def instance_with_arrays(x):
    # An instance made in the frame holding graph values: returned, so built after the graph runs.
    s = _Stats(x)
    s.top = s.scaled(2.0).max()
    return s, type(s) is _Stats, isinstance(s, _Stats)


def float_of_reduction(x):
    total = float(x.sum())
    return total * 2, x / total


def item_of_reduction(x):
    m = x.max().item()
    return m, x - m


def int_of_argmax(x):
    i = int(x.argmax())
    return i, x[i]


def index_past_the_end(x):
    i = int(x.argmax()) + x.shape[0]
    y = x * 2.0
    return y[i]  # (IndexError where the graph runs, as plain)


def print_between(x):
    y = x * 2
    print("y computed")
    z = y + 1
    print("z", z.shape)
    return z


def print_array(x):
    y = x + 1
    print(y)
    return y.sum()


def loop_over_range(x):
    acc = np.zeros_like(x)
    for i in range(3):
        acc = acc + x * i
    return acc


def loop_accumulate_list(x):
    outs = []
    for i in range(3):
        outs.append(x[i] * 2)
    return outs


def list_of_arrays_in(arrays):
    return arrays[0] + arrays[1], len(arrays)


def dict_of_arrays_out(x):
    return {"sum": x.sum(), "mean": x.mean(axis=0), "x2": x * 2}


def tuple_of_arrays_in_out(pair):
    a, b = pair
    return b, a + b


def closure_over_array(x):
    scale = x.max()

    def f(v):
        return v / scale

    return f(x)


def nested_helper_calls(x, gamma, beta):
    return layernorm(_relu(x), gamma, beta)


def lambda_over_arrays(x):
    act = lambda v: v * (v > 0)  # noqa: E731
    return act(x - 0.5)


def in_place_on_input_then_use(x):
    x += 1.0
    y = x * 2
    return y


def setitem_on_input(x):
    x[0] = 0.0
    x[:, 1] = -1.0
    x[2:4, 2:4] = x[0:2, 0:2] * 3
    return x.sum()


def setitem_on_computed(x):
    y = x.copy()
    y[y.shape[0] - 1] = 100.0
    return y


def setitem_broadcast_bad(x):
    x[0] = x[:2]
    return x


def out_argument(x, y):
    np.add(x, 1.0, out=y)
    np.multiply(y, y, out=y)
    return y.sum()


def out_argument_returned(x):
    r = np.exp(x, out=x)
    return r is x


def view_then_in_place(x):
    v = x[1:3]
    x += 1.0
    return v.sum(), v


def return_view_of_input(x):
    return x.T, x[::2]


def in_place_on_view(x):
    v = x[0]
    v *= 10.0
    return x


def alias_two_args(a, b):
    a += 1.0
    return b.sum()


def mutation_and_print(x):
    x *= 2.0
    print("doubled")
    return x.sum()


def float32_pipeline(f):
    g = f * np.float32(0.5)
    return (g @ g.T).astype(np.float64).sum(axis=0)


def python_scalars_everywhere(x, alpha, n):
    y = x * alpha
    for _ in range(n):
        y = y + alpha
    return y


def zero_d_arrays(x):
    z = np.array(2.0) if False else x.sum(keepdims=True).reshape(())
    return z * x, z + 1


def dtype_attribute_dispatch(x):
    if x.dtype == np.float32:
        return x * 2
    return x * 3


def shape_condition(x):
    if x.shape[0] > 5:
        return x[:5]
    return x


def ndim_condition(x):
    return x.sum(axis=-1) if x.ndim > 1 else x


CASES = [
    case(softmax, X),
    case(log_softmax, X),
    case(layernorm, X, GAMMA, BETA),
    case(mlp_forward, X, W1, B1, W2, B2),
    case(attention, Q, K, VV),
    case(kmeans_step, PTS, CENTERS),
    case(mse_loss_and_grad, X, W1[:, :4], X[:, :4]),
    case(sgd_update_in_place, W1.copy(), W1 * 0.5),
    case(normalize_rows, X),
    case(cosine_similarity, X, X[:3]),
    case(pairwise_distances, PTS),
    case(batchnorm_inference, X, X.mean(axis=0), X.var(axis=0)),
    case(residual_block, X, W1[:, :16]),
    case(if_on_sum, V, graphs=2, breaks=1),
    case(if_on_sum, -np.abs(V), graphs=2, breaks=1),
    case(not_of_compare, V, graphs=1, breaks=1),
    case(not_of_compare, -np.abs(V), graphs=1, breaks=1),
    case(if_not_compare, V, graphs=2, breaks=1),
    case(if_not_compare, V * 9, graphs=2, breaks=1),
    case(if_on_any, V * 3),  # (a cond op: test_numpy_conds.py)
    case(while_on_norm, V * 8),  # (a while loop op, test_numpy_while_loops.py)
    case(float_of_reduction, V, graphs=1, breaks=0),  # (x / total: a float64 array op with a Python float of any value)
    case(float_of_reduction, V.astype(np.float32), graphs=1, breaks=int(LEGACY)),  # (1.x: float64 past 3e38)
    case(item_of_reduction, V, graphs=2, breaks=1),
    case(instance_with_arrays, V),
    case(instance_with_arrays, V.astype(np.float32)),
    # (x[i] with i a Python int of the graph: an op of the graph, raising IndexError where it runs when i is out
    # of range, while no side effect waits to be replayed)
    case(int_of_argmax, V, graphs=1, breaks=0),
    case(index_past_the_end, V, graphs=1, breaks=0),
    case(print_between, X, graphs=2, breaks=2),
    case(print_array, X, graphs=2, breaks=1),
    case(loop_over_range, X),
    case(loop_accumulate_list, X),
    case(list_of_arrays_in, [X, X * 2], graphs=1),
    case(dict_of_arrays_out, X),
    case(tuple_of_arrays_in_out, (X, X + 1)),
    case(closure_over_array, V),
    case(nested_helper_calls, X, GAMMA, BETA),
    case(lambda_over_arrays, X),
    case(in_place_on_input_then_use, X),
    case(setitem_on_input, X[:6, :6].copy()),
    case(setitem_on_computed, X),
    case(setitem_broadcast_bad, X, graphs=1, breaks=1),
    case(out_argument, X, np.empty_like(X)),
    case(out_argument_returned, X),
    case(view_then_in_place, X),
    case(return_view_of_input, X),
    case(in_place_on_view, X),
    case(alias_two_args, X, X),
    case(mutation_and_print, X, graphs=2, breaks=1),
    case(float32_pipeline, F32),
    case(python_scalars_everywhere, V, 0.5, 3),
    case(zero_d_arrays, V),
    case(dtype_attribute_dispatch, F32),
    case(dtype_attribute_dispatch, V),
    case(shape_condition, X),
    case(ndim_condition, X),
]


@run_cases(CASES)
def test_programs(fn, args, kwargs, graphs, breaks, fallbacks):
    isolated_check(fn, args, kwargs, graphs, breaks, fallbacks)
