"""np.linalg.solve(A, b) of a float64 matrix and vector, and vector-matrix products ``x @ A``, inside loops
(inverse iteration, Newton steps, power iterations): on the cpu backend tier C calls the loop NumPy's solve runs (its
LAPACK gesv through NumPy's own gufunc loop) and the gemv NumPy's matmul calls, so the loops with exits and ``if``s
on their results stay native loop ops; elsewhere they unroll or break. Every case runs plainly and translated -
first call, from the cache, and with other arguments of the same types (other sizes, layouts, trip counts) - with
tier C compiled before the loop's first run (``sync``); values are compared bit for bit. A singular matrix must
raise NumPy's own LinAlgError after the steps before it (their effects kept).
PYTEST_DONT_REWRITE"""

import pytest
from corpus_programs_wild import inverse_iteration  # (the corpus program itself)
from numpy_differential import check, native_loops, native_runs, tier_c_loops

np = pytest.importorskip("numpy")
sot = pytest.importorskip("sot")

cpu_only = pytest.mark.skipif(sot.config.backend != "cpu", reason="tier C is the cpu backend's")
numpy2 = pytest.mark.skipif(np.__version__.startswith("1."), reason="tier C calls NumPy 2's loops only")

pytestmark = pytest.mark.usefixtures("tier_c_sync")


def rng(seed):
    return np.random.default_rng(seed)


# ---- programs ---------------------------------------------------------------------------------------------------


def newton_steps(J, x, steps):
    for _ in range(steps):
        r = J @ x - np.sin(x) - 1.0
        x = x - np.linalg.solve(J, r) * 0.5
    return x


def left_products(A, v, steps):
    s = 0.0
    for _ in range(steps):
        v = v @ A
        v = v / np.linalg.norm(v)
        s += v @ A @ v
    return s, v


def solves_into(A, B, out):
    I = np.diag(np.ones(A.shape[0]))
    for k in range(B.shape[0]):
        out[k] = np.linalg.solve(A + k * I, B[k])
    return out


# ---- cases ------------------------------------------------------------------------------------------------------


def spd(n, seed):
    a = rng(seed).standard_normal((n, n))
    return a @ a.T + n * np.eye(n)


CASES = [
    (inverse_iteration, (spd(6, 1), 0.5, rng(2).standard_normal(6), 1e-10, 50),
     [((spd(9, 3), 2.0, rng(4).standard_normal(9), 1e-6, 40), {}),
      ((np.asfortranarray(spd(4, 5)), 0.1, rng(6).standard_normal(4), 0.0, 17), {})]),
    (newton_steps, (spd(5, 10), rng(11).standard_normal(5), 20),
     [((spd(8, 12).T, rng(13).standard_normal(8), 18), {}), ((spd(12, 14)[::2, ::2], rng(15).standard_normal(6), 19),
                                                             {})]),
    (left_products, (rng(20).standard_normal((7, 7)), rng(21).standard_normal(7), 25),
     [((np.asfortranarray(rng(22).standard_normal((5, 5))), rng(23).standard_normal(5), 19), {}),
      ((rng(24).standard_normal((9, 9))[::-1, 1:8], rng(25).standard_normal(9), 21), {})]),
    (solves_into, (spd(4, 30), rng(31).standard_normal((20, 4)), np.zeros((20, 4))),
     [((spd(3, 32), rng(33).standard_normal((18, 3))[:, ::-1], np.zeros((18, 3))), {})]),
]


@pytest.mark.parametrize("fn, args, variants", CASES, ids=[c[0].__name__ for c in CASES])
def test_solves_and_left_products_in_loops(fn, args, variants):
    """One graph, no break, where loops are native (NumPy 2); elsewhere an exit or a short loop may break."""
    native = native_loops() and not np.__version__.startswith("1.")
    check(fn, *args, variants=variants, graphs=1 if native else None)


def exact(fn, *args):
    want = fn(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    got = sot.jit(fn)(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    for g, w in zip(got, want) if isinstance(want, tuple) else [(got, want)]:
        assert type(g) is type(w)
        assert np.array_equal(np.asarray(g), np.asarray(w), equal_nan=True), (g, w)


@cpu_only
@numpy2
def test_native_bit_for_bit():
    for fn, args, _ in CASES:
        exact(fn, *args)
        assert native_runs(tier_c_loops(fn, *args)[1]) > 0, fn.__name__


def test_a_singular_matrix_raises_numpys_error_after_the_steps_before():
    A_bad = spd(4, 40)
    A_bad[0, :] = 0.0
    A_bad[:, 0] = 0.0
    A_bad[0, 0] = -7.0  # (A_bad + 7 I has a row of zeros: singular at the step k = 7)
    B = rng(41).standard_normal((12, 4))
    want_out = np.zeros((12, 4))
    with pytest.raises(np.linalg.LinAlgError) as plain:
        solves_into(A_bad, B, want_out)
    got_out = np.zeros((12, 4))
    with pytest.raises(np.linalg.LinAlgError) as got:
        sot.jit(solves_into)(A_bad, B, got_out)
    assert str(got.value) == str(plain.value)
    assert np.array_equal(got_out, want_out)
    assert np.count_nonzero(got_out[:7].any(axis=1)) == 7  # (the seven steps before it wrote their rows)


def test_sizes_that_do_not_agree_raise_as_plain():
    def mismatched(A, b, k):
        s = 0.0
        for _ in range(k):
            s += np.linalg.solve(A, b).sum()
        return s

    for A, b in [(spd(4, 50), rng(51).standard_normal(5)), (rng(52).standard_normal((3, 4)), np.ones(3))]:
        with pytest.raises(Exception) as plain:
            mismatched(A, b, 20)
        with pytest.raises(Exception) as got:
            sot.jit(mismatched)(A, b, 20)
        assert type(got.value) is type(plain.value) and str(got.value) == str(plain.value)


def test_nan_data_solves_as_numpy_does():
    A = spd(5, 60)
    A[2, 3] = np.nan
    check(newton_steps, A, rng(61).standard_normal(5), 17, variants=False,
          graphs=1 if native_loops() and not np.__version__.startswith("1.") else None)
