"""Items counted by masks (``np.count_nonzero(r2 <= 1.0)``: NumPy 1.x's Python int, NumPy 2's int64) and rows
picked by an array of ints inside loops (``X[idx]``, ``y[perm[k:k + b]]``: minibatches, resampling, permutations),
and the transposes they are used through (``lr * X[idx].T @ err``: NumPy makes ``lr * A.T`` F-ordered, and so does
tier C): loop ops that tier C runs natively on the cpu backend (a gather is a new C-ordered array of the picked
items, NumPy's advanced indexing), unrolled or op by op elsewhere. Every case runs plainly and translated - first
call, from the cache, and with other arguments of the same types (other lengths, batch sizes, index dtypes) - with
tier C compiled before the loop's first run (``sync``); values are compared bit for bit, and an index out of range
must raise NumPy's own IndexError.
PYTEST_DONT_REWRITE"""

import pytest
from numpy_differential import check, native_loops, native_runs, tier_c_loops

np = pytest.importorskip("numpy")
sot = pytest.importorskip("sot")

cpu_only = pytest.mark.skipif(sot.config.backend != "cpu", reason="tier C is the cpu backend's")

pytestmark = pytest.mark.usefixtures("tier_c_sync")


def rng(seed):
    return np.random.default_rng(seed)


# ---- programs ---------------------------------------------------------------------------------------------------


def minibatch_sgd(X, y, perm, batch, lr):
    n, d = X.shape
    w = np.zeros(d)
    for start in range(0, n, batch):
        idx = perm[start:start + batch]
        err = X[idx] @ w - y[idx]
        w -= lr * X[idx].T @ err / len(idx)
    return w


def bootstrap_means(x, draws):
    means = np.zeros(draws.shape[0])
    for k in range(draws.shape[0]):
        means[k] = x[draws[k]].mean()
    return means


def picked_rows_summed(A, order):
    total = np.zeros(A.shape[1])
    for k in range(order.shape[0] - 1):
        pair = A[order[k:k + 2]]
        total += pair[0] - pair[1]
    return total


def cube_slices(T, picks):
    s = 0.0
    for k in range(picks.shape[0]):
        sub = T[picks[k]]
        s += sub[0, 1, 2] + sub[-1, -1, -1]
    return s


def last_batch(X, perm, batch):
    rows = X[perm[:batch]]
    for start in range(batch, X.shape[0], batch):
        rows = X[perm[start:start + batch]] * 2.0
    return rows


def index_by_argsort(x, steps):
    for _ in range(steps):
        order = np.argsort(x)
        x = x[order] * 0.5 + x
    return x


def transposed_products(X, u, steps):
    for _ in range(steps):
        u = 0.5 * X.T @ u + 0.1 * (X.T * 2.0 + X.T) @ u - (X + X.T) @ u
        u = u / np.linalg.norm(u)
    return u


def transposed_sums(X, steps):
    s = np.zeros(X.shape[0])
    for k in range(steps):
        s = s + (0.5 * k * X.T).sum(axis=0) + (X.T - 1.0).sum(axis=1)
    return s


def pi_batches(u, batch, tol):
    estimates = []
    inside = 0
    total = 0
    for start in range(0, len(u), batch):
        chunk = u[start:start + batch]
        r2 = chunk[:, 0] ** 2 + chunk[:, 1] ** 2
        inside += int(np.count_nonzero(r2 <= 1.0))
        total += len(chunk)
        estimates.append(4.0 * inside / total)
        if len(estimates) > 3 and abs(estimates[-1] - estimates[-2]) < tol:
            break
    return estimates


def counts_of_kinds(x, steps):
    counts = np.zeros(4, dtype=np.int64)
    for k in range(steps):
        y = x * float(k) - 1.0
        counts[0] += np.count_nonzero(y)
        counts[1] += np.count_nonzero(y > 0.0)
        counts[2] += np.count_nonzero(np.isnan(y))
        counts[3] = counts[3] + np.count_nonzero(x.T)
    return counts


# ---- cases ------------------------------------------------------------------------------------------------------


def perm_of(n, seed, dtype=np.int64):
    return rng(seed).permutation(n).astype(dtype)


CASES = [
    (minibatch_sgd, (rng(1).standard_normal((60, 5)), rng(2).standard_normal(60), perm_of(60, 3), 8, 0.1),
     [((rng(4).standard_normal((37, 3)), rng(5).standard_normal(37), perm_of(37, 6), 5, 0.05), {}),
      ((rng(7).standard_normal((40, 5)), rng(8).standard_normal(40), perm_of(40, 9, np.int32), 16, 0.2), {}),
      ((np.asfortranarray(rng(10).standard_normal((30, 4))), rng(11).standard_normal(30), perm_of(30, 12), 7, 0.1),
       {})]),
    (bootstrap_means, (rng(20).standard_normal(50), rng(21).integers(-50, 50, (30, 50))),
     [((rng(22).standard_normal(9), rng(23).integers(0, 9, (4, 3)).astype(np.uint8)), {})]),
    (picked_rows_summed, (rng(30).standard_normal((12, 6)), rng(31).integers(-12, 12, 40)),
     [((rng(32).standard_normal((5, 3))[:, ::-1], rng(33).integers(0, 5, 9)), {})]),
    (cube_slices, (rng(40).standard_normal((6, 3, 4)), rng(41).integers(0, 6, (20, 2))), None),
    (last_batch, (rng(50).standard_normal((36, 4)), perm_of(36, 51), 6),  # (a shorter last batch: no loop op)
     [((rng(52).standard_normal((10, 2)), perm_of(10, 53), 10), {}), ((rng(54).standard_normal((33, 4)),
                                                                      perm_of(33, 55), 6), {})]),
    (transposed_products, (rng(70).standard_normal((7, 7)), rng(71).standard_normal(7), 20),
     [((np.asfortranarray(rng(72).standard_normal((5, 5))), rng(73).standard_normal(5), 18), {}),
      ((rng(74).standard_normal((9, 9))[::-1, ::2][:5, :5], rng(75).standard_normal(5), 19), {})]),
    (transposed_sums, (rng(76).standard_normal((6, 6)), 20), [((rng(77).standard_normal((3, 3)).T, 17), {})]),
    (pi_batches, (rng(80).random((2000, 2)), 100, 0.01),
     [((rng(81).random((700, 2)), 64, 0.05), {}), ((rng(82).random((300, 2)), 20, 0.0), {})]),
    (counts_of_kinds, (np.array([[0.0, -0.0, np.nan, 1.0], [2.0, 0.5, 0.0, -1.0]]), 20),
     [((rng(83).standard_normal((3, 5)), 18), {}), ((np.zeros((0, 3)), 17), {})]),
    (index_by_argsort, (rng(60).standard_normal(25), 6), [((rng(61).standard_normal(3), 2), {})]),
]


@pytest.mark.parametrize("fn, args, variants", CASES, ids=[c[0].__name__ for c in CASES])
def test_gathers_in_loops(fn, args, variants):
    """One graph, no break, where loops are native; elsewhere (no tier C) an exit or a short loop may break."""
    check(fn, *args, variants=variants, graphs=1 if native_loops() else None)


def exact(fn, *args):
    """fn translated equals fn plain bit for bit, the result's type and layout included."""
    want = fn(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    got = sot.jit(fn)(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    assert type(got) is type(want)
    assert np.array_equal(np.asarray(got), np.asarray(want)), (got, want)
    if isinstance(want, np.ndarray):
        assert got.flags.c_contiguous == want.flags.c_contiguous


@cpu_only
def test_gathers_run_natively_bit_for_bit():
    for fn, args, _ in CASES:
        exact(fn, *args)
        # (np.argsort is not tier C's: that loop runs op by op; a sum over an axis of an F-ordered array gives up)
        if fn not in (index_by_argsort, transposed_sums):
            assert native_runs(tier_c_loops(fn, *args)[1]) > 0, fn.__name__


def test_an_index_out_of_range_raises_numpys_error():
    """Tier C gives up at the position out of range; the loop op's own path raises NumPy's IndexError, after the
    steps before it (their writes kept, as plain's are)."""
    X = rng(70).standard_normal((10, 3))
    out = np.zeros(6)
    for bad in (10, -11, 2**40):
        draws = rng(71).integers(0, 10, (6, 4))
        draws[4, 2] = bad

        def sums(X, draws, out):
            for k in range(draws.shape[0]):
                out[k] = X[draws[k]].sum()
            return out

        with pytest.raises(IndexError) as plain:
            sums(X, draws, out.copy())
        got_out = out.copy()
        with pytest.raises(IndexError) as got:
            sot.jit(sums)(X, draws, got_out)
        assert str(got.value) == str(plain.value)
        want_out = out.copy()
        with pytest.raises(IndexError):
            sums(X, draws, want_out)
        assert np.array_equal(got_out, want_out)


def test_masks_and_float_indices_are_not_gathers():
    """A boolean index is a mask (another rule: its count decides the length) and a float index raises: neither
    is taken for a gather; both agree with plain."""

    def masked(x, k):
        s = 0.0
        for _ in range(k):
            s += x[x > 0.0].sum()
        return s

    def by_float(x, f):
        s = 0.0
        for _ in range(3):
            s += x[f].sum()
        return s

    check(masked, rng(80).standard_normal(20), 4, variants=False)
    with pytest.raises(IndexError) as plain:
        by_float(np.ones(4), np.array([1.0]))
    with pytest.raises(IndexError) as got:
        sot.jit(by_float)(np.ones(4), np.array([1.0]))
    assert str(got.value) == str(plain.value)
