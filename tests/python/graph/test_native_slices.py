"""Loops over rows and slices whose bounds are the loop's ints (``L[i, :i] @ x[:i]``, ``A[i] @ x``,
``U[i, i + 1:] @ x[i + 1:]``): loop ops only where tier C runs them (views of the arguments and NumPy's own dot
products, per-step lengths included), unrolled elsewhere. Every case runs plainly and translated - first call,
from the cache, and with other arguments of the same types - with tier C compiled before the loop's first run
(``sync``): values and exact types, arguments after the call, exceptions and warnings must agree. Dot products
must be NumPy's bit for bit (float64 through the BLAS NumPy calls, with its rule for strides), so values are
compared exactly here, not within a tolerance.
PYTEST_DONT_REWRITE"""

import warnings

import pytest
from numpy_differential import check, native_runs, tier_c_loops

np = pytest.importorskip("numpy")
sot = pytest.importorskip("sot")
from sot import capture as cap  # noqa: E402

cpu_only = pytest.mark.skipif(sot.config.backend != "cpu", reason="tier C is the cpu backend's")

pytestmark = pytest.mark.usefixtures("tier_c_sync")


def rng(seed):
    return np.random.default_rng(seed)


# ---- programs ---------------------------------------------------------------------------------------------------


def forward_substitution(L, b):
    n = b.shape[0]
    x = np.zeros(n)
    for i in range(n):
        x[i] = (b[i] - L[i, :i] @ x[:i]) / L[i, i]
    return x


def back_substitution(U, b):
    n = b.shape[0]
    x = np.zeros(n)
    for i in range(n - 1, -1, -1):
        x[i] = (b[i] - U[i, i + 1:] @ x[i + 1:]) / U[i, i]
    return x


def matvec_by_rows(A, x):
    y = np.empty(A.shape[0])
    for i in range(A.shape[0]):
        y[i] = A[i] @ x
    return y


def column_dots(A, v):
    s = 0.0
    for j in range(1, A.shape[1]):
        s += A[:j, j] @ v[:j]  # (a column: strides of a row's length, BLAS's incx)
    return s


def reversed_rows(A, x):
    s = 0.0
    for i in range(A.shape[0]):
        s += A[i, ::-1] @ x[::-1]  # (negative strides: NumPy's own loop, not its BLAS)
    return s


def gram(A):
    n = A.shape[1]
    G = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            G[i, j] = A[:, i] @ A[:, j]
    return G


def int_dots(A, v):
    total = 0
    for i in range(A.shape[0]):
        total += int(A[i, :i] @ v[:i])
    return total


def stepped(x, y):
    s = 0.0
    for i in range(2, x.shape[0]):
        s += x[:i:2] @ y[:i:2]
    return s


def shifted_window(x, w):
    out = np.zeros(x.shape[0] - 4)
    for i in range(x.shape[0] - 4):
        out[i] = x[i:i + 4] @ w
    return out


def dot_calls(A, x):
    s = 0.0
    for i in range(A.shape[0]):
        s += np.dot(A[i, :i], x[:i]) + A[i].dot(x)
    return s


def reversed_dot(A, x):
    s = 0.0
    for i in range(A.shape[0]):
        s += np.dot(A[i, ::-1], x)  # (np.dot copies a reversed vector first: the native run gives up)
    return s


# ---- cases ------------------------------------------------------------------------------------------------------


def lower(n, seed):
    return np.tril(rng(seed).standard_normal((n, n))) + n * np.eye(n)


def upper(n, seed):
    return np.triu(rng(seed).standard_normal((n, n))) + n * np.eye(n)


CASES = [
    (forward_substitution, (lower(40, 1), rng(2).standard_normal(40)),
     [((lower(23, 3), rng(4).standard_normal(23)), {}), ((lower(7, 5), rng(6).standard_normal(7)), {})]),
    (forward_substitution, (lower(12, 1), rng(2).standard_normal(12)), None),  # (a short loop: native too)
    (back_substitution, (upper(40, 7), rng(8).standard_normal(40)),
     [((upper(31, 9), rng(10).standard_normal(31)), {})]),
    (matvec_by_rows, (rng(11).standard_normal((50, 30)), rng(12).standard_normal(30)),
     [((rng(13).standard_normal((20, 9)), rng(14).standard_normal(9)), {})]),
    (column_dots, (rng(15).standard_normal((40, 40)), rng(16).standard_normal(40)), None),
    (reversed_rows, (rng(17).standard_normal((30, 25)), rng(18).standard_normal(25)), None),
    (gram, (rng(19).standard_normal((30, 20)),), None),
    (int_dots, (rng(20).integers(-50, 50, (40, 40)), rng(21).integers(-50, 50, 40)), None),
    (stepped, (rng(22).standard_normal(60), rng(23).standard_normal(60)), None),
    (shifted_window, (rng(24).standard_normal(70), rng(25).standard_normal(4)), None),
    (dot_calls, (rng(26).standard_normal((40, 40)), rng(27).standard_normal(40)), None),
]


@pytest.mark.parametrize("fn, args, variants", CASES, ids=[c[0].__name__ for c in CASES])
def test_native_slices(fn, args, variants):
    """On the cpu backend a native loop op; on the numpy backend (no native loops) the loop unrolls: both right."""
    records = check(fn, *args, variants=variants)
    if sot.config.backend == "cpu":
        assert native_runs(records) > 0, "tier C's code never ran"


def exact(fn, *args):
    """fn translated equals fn plain bit for bit (the dot products are NumPy's own)."""
    want = fn(*[a.copy() for a in args])
    got = sot.jit(fn)(*[a.copy() for a in args])
    assert np.array_equal(np.asarray(got), np.asarray(want)), (got, want)
    assert type(got) is type(want)


@cpu_only
def test_dot_products_are_numpys_bit_for_bit():
    for n in (1, 2, 3, 7, 16, 17, 33, 100):
        exact(forward_substitution, lower(n, n), rng(n + 1).standard_normal(n))
        exact(back_substitution, upper(n, n), rng(n + 2).standard_normal(n))
    exact(column_dots, rng(30).standard_normal((64, 64)), rng(31).standard_normal(64))
    exact(reversed_rows, rng(32).standard_normal((33, 47)), rng(33).standard_normal(47))
    exact(reversed_dot, rng(34).standard_normal((33, 47)), rng(35).standard_normal(47))
    exact(dot_calls, rng(36).standard_normal((50, 50)), rng(37).standard_normal(50))


@cpu_only
def test_a_zero_pivot_gives_up_and_warns_as_plain():
    """A division by zero raises NumPy's flag: the native run gives up, the arrays it wrote are put back, and the
    loop op's own path (the slices' lengths found step by step) warns and computes as plain NumPy does."""
    L = lower(20, 40)
    L[9, 9] = 0.0
    b = rng(41).standard_normal(20)
    with warnings.catch_warnings(record=True) as plain_w:
        warnings.simplefilter("always")
        want = forward_substitution(L.copy(), b.copy())
    jitted = sot.jit(forward_substitution)
    sot.reset()
    cap.clear(forward_substitution)
    with warnings.catch_warnings(record=True) as got_w:
        warnings.simplefilter("always")
        got = jitted(L.copy(), b.copy())
    assert np.array_equal(got, want, equal_nan=True)
    assert [str(w.message) for w in got_w] == [str(w.message) for w in plain_w]
    loops, _ = tier_c_loops(forward_substitution, L, b)
    assert loops and loops[0]["gave_up"] == 1, loops


@cpu_only
def test_int_overflow_gives_up_where_numpy_wraps():
    A = np.full((6, 6), 2**40, dtype=np.int64)
    v = np.full(6, 2**30, dtype=np.int64)

    def wraps(A, v):
        out = np.zeros(A.shape[0], dtype=np.int64)
        for i in range(A.shape[0]):
            out[i] = A[i, :i] @ v[:i]
        return out

    exact(wraps, A, v)


def test_an_index_past_the_end_raises_as_plain():
    def past(A, x):
        s = 0.0
        for i in range(A.shape[0]):
            s += A[i + 1, :i] @ x[:i]
        return s

    A = rng(50).standard_normal((20, 20))
    x = rng(51).standard_normal(20)
    with pytest.raises(IndexError) as plain:
        past(A, x)
    with pytest.raises(IndexError) as got:
        sot.jit(past)(A, x)
    assert str(got.value) == str(plain.value)


def test_what_tier_c_does_not_hold_unrolls():
    """A slice whose use tier C has no form for (a row handed on after the loop) keeps the loop unrolled; sums of
    slices and stores into them (arrays in tier C, test_native_arrays.py) are native: all right."""

    def summed(x):
        s = 0.0
        for i in range(1, 24):
            s += x[:i].sum()
        return s

    def last_row(L, x):
        s = 0.0
        for i in range(1, 24):
            r = L[i, :i]
            s += r @ x[:i]
        return s, r

    def stored(x):
        for i in range(1, 24):
            x[:i] = x[:i] * 0.5
        return x

    for fn, args in [(summed, (rng(60).standard_normal(30),)),
                     (last_row, (rng(61).standard_normal((30, 30)), rng(62).standard_normal(30))),
                     (stored, (rng(63).standard_normal(30),))]:
        check(fn, *args, variants=False)


@cpu_only
def test_without_tier_c_the_loop_unrolls():
    sot._sot.graph.tier_c("off")
    loops, records = tier_c_loops(forward_substitution, lower(30, 70), rng(71).standard_normal(30))
    assert loops == [], loops
    got = sot.jit(forward_substitution)(lower(30, 70), rng(71).standard_normal(30))
    assert np.array_equal(got, forward_substitution(lower(30, 70), rng(71).standard_normal(30)))


def random_slice_programs(count, seed):
    """Loops whose bodies take dot products of slices with random parts (the loop variable plus or minus a
    constant, constants, None; steps of 1, 2, -1), random rows and random ranges, short and long: most lengths
    agree, some do not (NumPy raises ValueError), some indices fall outside (IndexError)."""
    r = np.random.default_rng(seed)
    parts = ["None", "i", "i + 1", "i - 1", "i + 3", "2", "-2", "i - 4"]
    steps = ["", "", "", ":2", ":-1"]
    for k in range(count):
        a = f"{r.choice(parts)}:{r.choice(parts)}{r.choice(steps)}"
        b = a if r.random() < 0.6 else f"{r.choice(parts)}:{r.choice(parts)}{r.choice(steps)}"
        row = r.choice(["i", "i - 1", "-1 - i", "0"])
        lo, hi = sorted(r.integers(0, 30, 2))
        step = r.choice([1, 1, 2])
        body = (f"        s += A[{row}, {a}] @ x[{b}]\n" if k % 2 else
                f"        out[i] = A[{row}, {a}] @ x[{b}]\n")
        src = (f"def prog_{k}(A, x):\n"
               f"    s = np.float64(0.0)\n"
               f"    out = np.zeros(A.shape[0])\n"
               f"    for i in range({lo}, {hi + 1}, {step}):\n"
               f"{body}"
               f"    return s, out\n")
        scope = {"np": np}
        exec(compile(src, f"<prog_{k}>", "exec"), scope)
        yield src, scope[f"prog_{k}"]


def outcome(fn, *args):
    try:
        return ("value", fn(*args))
    except Exception as e:  # noqa: BLE001 - the exception itself is compared
        return ("raised", type(e), str(e))


def agree(got, want):
    if got[0] != want[0]:
        return False
    if got[0] == "raised":
        return got[1:] == want[1:]
    return all(type(g) is type(w) and np.array_equal(g, w, equal_nan=True) for g, w in zip(got[1], want[1]))


def test_random_slices_agree_with_plain():
    """Each program plainly and translated (first call, from the cache, then on arrays of another size), bit for
    bit; on the cpu backend most of them run natively."""
    arrays = [(rng(80).standard_normal((32, 32)), rng(81).standard_normal(32)),
              (rng(83).standard_normal((27, 27)), rng(84).standard_normal(27))]
    native = 0
    for src, fn in random_slice_programs(80, 82):
        jitted = sot.jit(fn)
        for A, x in [arrays[0], arrays[0], arrays[1]]:
            want = outcome(fn, A, x)
            got = outcome(jitted, A, x)
            assert agree(got, want), (src, got, want)
        native += native_runs(tier_c_loops(fn, *arrays[0], raises=(ValueError, IndexError))[1])
    if sot.config.backend == "cpu":
        assert native >= 20, native
