"""Graphs with no loop op as one native function (the cpu backend's tier C, ``whole_graph.hpp``): a function of
small-array arithmetic, reductions and Python numbers. Made native only once hot (``SOT_CPU_TIER_C_HOT`` calls on
arrays of at most 16,384 items); then tier C and tier B's groups are timed on a few calls per size class and the
faster runs. Every case runs plainly and translated - first call, from the cache, and with other arguments of the
same types - with the graph native from its first call (hot 0, compiled before the run): values and exact types,
arguments after the call, exceptions and warnings must agree, bit for bit.
PYTEST_DONT_REWRITE"""

import warnings

import pytest
from numpy_differential import check, native_runs, tier_c_entries

np = pytest.importorskip("numpy")
sot = pytest.importorskip("sot")
from sot import capture as cap  # noqa: E402

pytestmark = pytest.mark.skipif(sot.config.backend != "cpu", reason="tier C is the cpu backend's")


@pytest.fixture
def hot(tier_c_sync):
    """Sets tier C's hot calls for the test (``hot(0)``: native from the first call) and puts them back after."""
    before = sot._sot.graph.tier_c_hot()
    yield sot._sot.graph.tier_c_hot
    sot._sot.graph.tier_c_hot(before)


def floats(seed, *shape):
    return np.random.default_rng(seed).standard_normal(shape)


# ---- programs ---------------------------------------------------------------------------------------------------


def kick_drift(x, v, m, dt):
    r = x - x.mean()
    d = np.sqrt((r * r).sum() + 0.01)
    a = -r / (d * d * d) * m
    v = v + a * dt
    x = x + v * dt
    e = 0.5 * m * (v * v).sum() - m / d
    return x, v, e


def softmax(x):
    e = np.exp(x - x.max())
    return e / e.sum()


def clipped_blend(a, b, w):
    mixed = w * a + (1.0 - w) * b
    return np.minimum(np.maximum(mixed, -1.0), 1.0) + np.abs(a - b) * 0.5


def int_mix(a, b, k):
    return (a * 3 + b) // 2 - k, (a - b).sum()


def masked(x, t):
    keep = x > t
    return np.where(keep, x, 0.0), keep


def in_place_step(x, v, dt):
    x += v * dt
    v *= 0.5
    return float((x * x).sum())


def ratio(a, b):
    return a / b + 1.0


def mat_vec(A, x, b):
    return A @ x + b


CASES = [
    (kick_drift, (floats(1, 3), floats(2, 3), 1.5, 0.01)),
    (kick_drift, (floats(3, 200), floats(4, 200), 2.0, 0.02)),
    (softmax, (floats(5, 17),)),
    (clipped_blend, (floats(6, 20), floats(7, 20), 0.25)),
    (int_mix, (np.arange(12, dtype=np.int64), np.arange(12, dtype=np.int64)[::-1].copy(), 7)),
    (masked, (floats(8, 33), 0.1)),
    (in_place_step, (floats(9, 8), floats(10, 8), 0.5)),
    (mat_vec, (floats(11, 5, 5), floats(12, 5), floats(13, 5))),
]


@pytest.mark.parametrize("fn,args", CASES, ids=[f"{c[0].__name__}-{i}" for i, c in enumerate(CASES)])
def test_graphs_native_from_the_first_call_equal_plain(hot, fn, args):
    hot(0)
    records = check(fn, *args)
    if fn is softmax and np.__version__.startswith("1."):
        return  # (np.exp goes through NumPy's own loop: not emitted under NumPy 1.x)
    loops = tier_c_entries(records)
    assert loops, "the graph has no tier C entry"
    assert native_runs(records) >= 1, loops


def warned_runs(fn, *args):
    """``fn(*args)`` plainly, then translated by a fresh translator, each with every warning recorded: the plain
    result and warnings' messages, the translated ones, and the translator's records."""
    with warnings.catch_warnings(record=True) as plain_w:
        warnings.simplefilter("always")
        plain = fn(*args)
    sot.reset()
    cap.clear(fn)
    translator = sot.translate.new_translator(records=True)
    with warnings.catch_warnings(record=True) as got_w, cap.capture(translator):
        warnings.simplefilter("always")
        got = fn(*args)
    messages = [[str(w.message) for w in ws] for ws in (plain_w, got_w)]
    return plain, messages[0], got, messages[1], translator.records()


def test_a_flag_gives_up_and_warns_as_plain(hot):
    hot(0)
    a, b = floats(14, 6), floats(15, 6)
    b[2] = 0.0
    plain, plain_w, got, got_w, records = warned_runs(ratio, a, b)
    assert np.array_equal(got, plain, equal_nan=True)
    assert got_w == plain_w
    entries = tier_c_entries(records)
    assert entries and entries[0]["gave_up"] == 1, entries


def sqrt_sign(x):
    return np.sqrt(x) * np.sign(x)  # (NumPy's sign loop clears the flags when it ends)


def unused_sqrt(x):
    x = np.sqrt(x) * np.sign(x)  # (nothing reads it: its warning is all that shows)


def nan_compare(k, flag):
    if np.int32(k) / flag > float("nan"):  # (a quiet comparison with NaN: always false)
        return 1
    return 0


def scalar_divide(a, b):
    q = np.float64(a) / b  # (nothing reads q)
    return a


@pytest.mark.parametrize("fn, args", [
    (sqrt_sign, (np.array([-1.0]),)), (sqrt_sign, (np.array([4.0, -1.0, 2.0]),)),
    (unused_sqrt, (np.array([-1.0]),)), (nan_compare, (0, False)), (scalar_divide, (1.0, 0.0)),
], ids=["sqrt_sign-1", "sqrt_sign-3", "unused_sqrt", "nan_compare", "scalar_divide"])
def test_flags_of_values_nothing_reads_and_of_cleared_flags_warn_as_plain(hot, fn, args):
    """Found by the program fuzzer with every graph native: a NumPy loop that clears the flags (sign) after an
    op that raised one, a value nothing reads, a comparison the compiler folds: each warns as plain NumPy."""
    hot(0)
    plain, plain_w, got, got_w, _ = warned_runs(fn, *args)
    assert plain_w, plain_w
    assert got_w == plain_w
    assert type(got) is type(plain)
    assert plain is None or np.array_equal(np.asarray(got), np.asarray(plain), equal_nan=True)


def store_huge(x):
    x[1:] = 1e300
    return x


def store_huge_at(x, i):
    x[i] = 1e300
    return x


def full_huge(n):
    return np.full(n, 1e300, dtype=np.float32)


def store_float(x):
    x[1:] = 2.5
    return x


@pytest.mark.parametrize("fn,args_of", [
    (store_huge, lambda n: (np.zeros(n, np.float32),)),
    (store_huge_at, lambda n: (np.zeros(n + 1, np.float32), n)),
    (full_huge, lambda n: (n,)),
    (store_float, lambda n: (np.zeros(n, np.float32),)),
], ids=["slice", "element", "full", "exact"])
@pytest.mark.parametrize("n", [0, 1, 3])
def test_a_float_stored_into_float32_warns_once_as_numpy_even_into_no_element(hot, fn, args_of, n):
    """Found by the program fuzzer with every graph native: NumPy casts the number once per assignment, even of
    no element, and 1e300 overflows float32 ("overflow encountered in cast"); tier C cast it per element, or at
    compile time where it was a constant, and lost the warning."""
    hot(0)
    plain, plain_w, got, got_w, _ = warned_runs(fn, *args_of(n))
    assert got_w == plain_w
    assert type(got) is type(plain) and got.dtype == plain.dtype and np.array_equal(got, plain)


def _calls(fn, args_of, n, translator):
    """``n`` translated calls of ``fn`` on ``args_of(k)``, each compared with its plain call."""
    for k in range(n):
        args = args_of(k)
        plain = fn(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
        with cap.capture(translator):
            got = fn(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
        for p, g in zip(plain, got):
            assert type(p) is type(g)
            assert np.array_equal(p, g), (k, p, g)


def test_a_hot_graph_is_made_native_and_timed_per_size(hot):
    hot(5)
    sot.reset()
    cap.clear(kick_drift)
    translator = sot.translate.new_translator(records=True)
    # (4 calls: not hot yet; then the rounds of 3 and of 40 items, each 8 timed calls of both paths)
    _calls(kick_drift, lambda k: (floats(k, 3), floats(k + 1, 3), 1.0 + k, 0.01), 4, translator)
    assert not tier_c_entries(translator.records())
    _calls(kick_drift, lambda k: (floats(k, 3), floats(k + 1, 3), 1.0 + k, 0.01), 30, translator)
    _calls(kick_drift, lambda k: (floats(k, 40), floats(k + 1, 40), 1.0 + k, 0.01), 30, translator)
    statuses = [e["status"] for e in tier_c_entries(translator.records())]
    assert any("arrays of up to 3 items: " in s for s in statuses), statuses
    assert any("arrays of up to 63 items: " in s for s in statuses), statuses


def test_arrays_past_the_limit_stay_on_tier_b(hot):
    hot(0)
    sot.reset()
    cap.clear(softmax)
    translator = sot.translate.new_translator(records=True)
    _calls(lambda x: (softmax(x),), lambda k: (floats(k, 20000),), 3, translator)
    records = translator.records()
    assert native_runs(records) == 0
    assert not tier_c_entries(records), "a graph of large arrays was made native"


def test_hot_calls_are_a_count():
    with pytest.raises(ValueError, match="0 or more"):
        sot._sot.graph.tier_c_hot(-1)
    with pytest.raises(sot.ConfigError, match="non-negative"):
        sot.config.cpu_tier_c_hot = -2
    with pytest.raises(sot.ConfigError, match="SOT_CPU_TIER_C_HOT"):
        sot.Config.from_environ({"SOT_CPU_TIER_C_HOT": "soon"})
    assert sot.Config.from_environ({"SOT_CPU_TIER_C_HOT": "3"}).cpu_tier_c_hot == 3


def pair_steps(pos, steps):
    for _ in range(steps):
        d = pos[None, :, :] - pos[:, None, :]
        r2 = (d * d).sum(axis=2) + 0.01
        pos = pos + 0.001 * (d / r2[:, :, None]).sum(axis=1)
    return (pos,)


def test_a_loop_of_arrays_past_the_limit_is_native_where_timing_says_it_pays(hot):
    """A loop making (96, 96, 2) arrays (18,432 items, past kMostItems): its native code is compiled, and per size
    class of the arguments 8 calls of each path are timed and the faster kept (TimedLoop), each call computing what
    plain NumPy does; with hot calls 0 every call is native, untimed."""
    hot(5)
    sot.reset()
    cap.clear(pair_steps)
    translator = sot.translate.new_translator(records=True)
    _calls(pair_steps, lambda k: (floats(k, 96, 2), 2 + k % 2), 40, translator)  # (two graphs: 2 and 3 steps)
    statuses = [e["status"] for e in tier_c_entries(translator.records())]
    assert any("arrays of 18432 items made: native where timing says it pays; arrays of up to 255 items: " in s
               for s in statuses), statuses
    hot(0)
    sot.reset()
    cap.clear(pair_steps)
    translator = sot.translate.new_translator(records=True)
    _calls(pair_steps, lambda k: (floats(k, 96, 2), 3), 3, translator)
    assert native_runs(translator.records()) == 3


# ---- layouts: NumPy makes an elementwise result in the operands' order (K), tier C C-ordered ----------------------


def transposed_sums(X):
    return (2.0 * X.T).sum(axis=0), (X.T + 1.0).sum(axis=1)


def transposed_gemv(X, w):
    return (X.T * 3.0) @ w


def sgd_gradient(X, w, y):
    return 2.0 * X.T @ (X @ w - y) / 4


def looped_gradient(X, w, y, steps):
    for _ in range(steps):
        w = w - 0.01 * (2.0 * X.T @ (X @ w - y))
    return w


def scaled_sums(X):
    return (X * 2.0).sum(axis=0)


def _wide(seed, n, d):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, d)) * 10.0 ** rng.uniform(-3, 3, (n, d))


LAYOUTS = [
    (transposed_sums, (_wide(20, 40, 9),)),
    (transposed_sums, (_wide(21, 9, 300),)),
    (transposed_gemv, (_wide(22, 40, 9), floats(23, 40))),
    (sgd_gradient, (_wide(24, 16, 6), floats(25, 6), floats(26, 16))),
    (looped_gradient, (_wide(27, 24, 8), floats(28, 8), floats(29, 24), 5)),
    (scaled_sums, (np.asfortranarray(_wide(30, 30, 7)),)),
    (scaled_sums, (_wide(31, 30, 7)[::2, ::-1],)),
]


@pytest.mark.parametrize("fn,args", LAYOUTS, ids=[f"{c[0].__name__}-{i}" for i, c in enumerate(LAYOUTS)])
def test_results_laid_out_otherwise_by_numpy_equal_plain(hot, fn, args):
    """Found running every graph natively: `2.0 * X.T` is F-ordered in NumPy and was C-ordered in tier C, so a
    sum over an axis or a gemv of it summed in another order (1e-17 off in a minibatch gradient). The code now
    gives up where an operand of a matrix result is not laid out as C order at run time."""
    hot(0)
    check(fn, *args, variants=False)


def view_sums(a, b):
    r = a * 2.0 + b
    return r.sum(axis=0), r.sum(axis=-1), r[1, 2]


def _views(seed):
    """Operand pairs in many layouts: C, F, transposed, reversed, strided, broadcast rows and columns."""
    rng = np.random.default_rng(seed)
    base = rng.standard_normal((12, 10)) * 10.0 ** rng.uniform(-3, 3, (12, 10))
    other = rng.standard_normal((12, 10)) * 10.0 ** rng.uniform(-3, 3, (12, 10))
    firsts = [base[:6, :5], base.T[:6, :5], base[::-1, :][:6, :5], base[:, ::-1][:6, :5], base[::2, ::2][:6, :5],
              np.asfortranarray(base[:6, :5]), base.T[::-1, ::-2][:6, :5]]
    seconds = [other[:6, :5], other.T[:6, :5], other[0, :5], other[:6, :1], np.asfortranarray(other[:6, :5]),
               other[::-1, ::-1][:6, :5]]
    return [(a, b) for a in firsts for b in seconds]


def test_elementwise_layouts_are_numpys_whatever_the_operands(hot):
    """A matrix made elementwise is NumPy's C-ordered one only where NumPy's iterator keeps C order
    (sot_c_result); elsewhere the code gives up. Sums over both axes of it agree bit for bit either way."""
    hot(0)
    native = 0
    for a, b in _views(40):
        sot.reset()
        cap.clear(view_sums)
        translator = sot.translate.new_translator(records=True)
        with cap.capture(translator):
            got = view_sums(a, b)
        want = view_sums(a, b)
        for g, w in zip(got, want):
            assert np.array_equal(g, w), (a.strides, b.strides, g, w)
        native += native_runs(translator.records())
    assert native >= 10, native


def float32_scaled(x, s):
    return x * s, x / s - 1.0


@pytest.mark.parametrize("n", [0, 1, 700])
@pytest.mark.parametrize("s", [1e300, 3.4028235677973366e38, 3.4028235677973362e38, -1e39, float("inf")])
def test_a_python_float_past_float32_warns_of_its_cast_as_plain(hot, n, s):
    """Found running every graph natively: NumPy casts a Python float operand of a float32 loop before the loop
    and warns "overflow encountered in cast" where it becomes an infinity (2**128 - 2**103 and beyond), even on an
    empty array; the compiler had folded the cast of the constant, so no flag was raised. The code gives up there."""
    hot(0)
    x = np.linspace(1.0, 2.0, n).astype(np.float32)
    plain, plain_w, got, got_w, records = warned_runs(float32_scaled, x, s)
    for p, g in zip(plain, got):
        assert p.dtype == g.dtype and np.array_equal(p, g, equal_nan=True)
    assert got_w == plain_w
    assert tier_c_entries(records)
