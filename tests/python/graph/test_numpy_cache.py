"""The cache and guards of captured NumPy code: the same dtypes and shapes hit the cache; a new shape first
recompiles, then the dimension that changed is dynamic (a shape symbol, any size >= 2) and later sizes hit;
with dynamic shapes off every new shape recompiles; a new dtype, ndim or a size read as a Python value
recompiles; explain() shows graphs with symbolic dimensions and the array guards.
PYTEST_DONT_REWRITE"""

import pytest

from numpy_differential import same

import sot
from sot import capture as cap

np = pytest.importorskip("numpy")


def _translator(dynamic=True):
    t = sot.translate.new_translator(records=True)
    t.check_graphs = True
    t.dynamic_shapes = dynamic
    return t


def _run(fn, t, *args):
    with cap.capture(t):
        return fn(*args)


def _fresh(fn):
    sot.reset()
    cap.clear(fn)


def mlp(x, w1, w2):
    h = np.maximum(x @ w1, 0.0)
    return (h @ w2).sum(axis=1)


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def rows_times_two(x):
    return x * 2.0, x.shape[0]


W1 = np.random.default_rng(0).standard_normal((8, 16))
W2 = np.random.default_rng(1).standard_normal((16, 3))


def test_same_shape_hits_the_cache():
    _fresh(mlp)
    t = _translator()
    x = np.ones((4, 8))
    for _ in range(3):
        assert same(_run(mlp, t, x, W1, W2), mlp(x, W1, W2))
    s = cap.stats(mlp)
    assert (s["translations"], s["hits"], s["fallbacks"]) == (1, 2, 0), s


def test_new_shape_recompiles_once_then_goes_dynamic():
    _fresh(mlp)
    t = _translator()
    for batch in (4, 6, 9, 2, 33):
        x = np.random.default_rng(batch).standard_normal((batch, 8))
        got = _run(mlp, t, x, W1, W2)
        assert got.shape == (batch,) and same(got, mlp(x, W1, W2))
    s = cap.stats(mlp)
    # 4: first translation; 6: recompile, the batch dimension is now dynamic; 9, 2, 33: hits.
    assert (s["translations"], s["hits"], s["fallbacks"]) == (2, 3, 0), s
    texts = [g["text"] for r in t.records() for g in r["graphs"]]
    assert "s0" in texts[-1] and "float64[s0, 8]" in texts[-1], texts[-1]
    guards = t.records()[-1]["guards"]
    assert any("shape (s" in g and ">=2, 8)" in g for g in guards), guards


def test_size_one_is_not_dynamic():
    _fresh(softmax)
    t = _translator()
    for rows in (3, 5, 1, 7):
        x = np.arange(rows * 4, dtype=np.float64).reshape(rows, 4)
        assert same(_run(softmax, t, x), softmax(x))
    s = cap.stats(softmax)
    # 3; 5 (dynamic from here); 1: the symbol needs >= 2, so a static translation; 7: hits the dynamic one.
    assert (s["translations"], s["hits"]) == (3, 1), s


def test_dynamic_shapes_off_recompiles_every_shape():
    _fresh(softmax)
    t = _translator(dynamic=False)
    for rows in (3, 5, 6):
        x = np.ones((rows, 4))
        assert same(_run(softmax, t, x), softmax(x))
    s = cap.stats(softmax)
    assert (s["translations"], s["hits"]) == (3, 0), s


def test_a_size_read_as_python_value_stays_static():
    _fresh(rows_times_two)
    t = _translator()
    for rows in (3, 5, 6, 6):
        x = np.ones((rows, 2))
        got, n = _run(rows_times_two, t, x)
        assert n == rows and got.shape == (rows, 2)
    s = cap.stats(rows_times_two)
    # x.shape[0] is returned: the dimension is specialized, each new size recompiles, the repeat hits.
    assert (s["translations"], s["hits"]) == (3, 1), s


def test_new_dtype_or_ndim_recompiles():
    _fresh(softmax)
    t = _translator()
    for x in (np.ones((2, 3)), np.ones((2, 3), dtype=np.float32), np.ones((2, 3, 3)), np.ones((2, 3))):
        got = _run(softmax, t, x)
        assert got.dtype == x.dtype and same(got, softmax(x))
    s = cap.stats(softmax)
    assert (s["translations"], s["hits"]) == (3, 1), s


def test_non_contiguous_and_views_are_guarded_by_meta_only():
    _fresh(softmax)
    t = _translator()
    base = np.arange(24.0).reshape(4, 6)
    for x in (base[:, :3], base[:, ::2], base.T[:3, :3].copy()[:, :3]):
        assert same(_run(softmax, t, x), softmax(x))
    s = cap.stats(softmax)
    assert s["fallbacks"] == 0 and s["translations"] + s["hits"] == 3, s


def test_explain_reports_graphs_ops_and_array_guards():
    x = np.ones((5, 8))
    e = sot.explain(mlp, x, W1, W2)
    assert same(e.value, mlp(x, W1, W2))
    assert e.graph_count == 1 and e.graph_break_count == 0
    assert e.op_count == 4, e.graphs[0]["text"]
    assert e.graphs[0]["op_counts"] == {"matmul": 2, "maximum": 1, "sum": 1}
    assert any("x: array format d shape (5, 8)" in g for g in e.guards), e.guards
    text = str(e)
    assert "graph of mlp" in text and "matmul(" in text
    js = e.graphs[0]["json"]
    assert [op["op"] for op in js["ops"]][:1] == ["matmul"] and js["inputs"][0]["shape"] == [5, 8]


def test_explain_names_numpy_break_reasons():
    def f(x):
        y = np.unique(x)
        if y.sum() > 0:
            return y
        return -y

    e = sot.explain(f, np.array([3.0, -1.0, 2.0]))
    reasons = [b.reason for b in e.break_reasons]
    assert "unsupported numpy function np.unique" in reasons
    assert any(r.startswith("data-dependent branch") for r in reasons), reasons


def test_backend_selection():
    assert "numpy" in sot._sot.graph.backends()
    f = sot.jit(softmax, backend="numpy")
    x = np.ones((2, 3))
    assert same(f(x), softmax(x))
    with pytest.raises(ValueError, match="unknown backend 'nope'"):
        sot.jit(softmax, backend="nope")
