"""More NumPy calls that the programs of corpus_programs_wild.py make (issue 36): np.flatnonzero (its length known
only when the graph runs), np.gradient (one axis, several unpacked, axis=, a spacing, edge_order=2, ints made
floats), np.polyval at a Python number, a NumPy scalar or a 0-d array, NumPy functions given a list of the frame's
NumPy scalars or arrays (np.mean(flow) after `flow.append(v.mean())`: the list made an array by an np.array op) or
a short list of Python numbers received from outside (guarded by its items' values: a list changed in place
translates again), np.asarray with dtype= (the array itself where the dtype is its own), math.isclose of numbers
of the graph, and min(d, key=d.get) / max(...) of a dict of the frame's NumPy scalars (the builtin itself picks the
key where the graph runs: ties, NaNs and the key's type as in plain Python).
Each compared with plain NumPy on the first call, from the cache and with varied arguments (other values,
dimensions one longer, another dtype of the same kind); graph and break counts pinned. What NumPy refuses breaks
the graph and raises as in plain NumPy.
PYTEST_DONT_REWRITE"""

import math

import pytest

from numpy_differential import case, isolated_check, run_cases

np = pytest.importorskip("numpy")

rng = np.random.default_rng(3636)
A = rng.standard_normal((4, 5))
V7 = rng.standard_normal(7)
I32 = rng.integers(-9, 9, (4, 5)).astype(np.int32)
F32 = A.astype(np.float32)
COEFFS = np.array([1.0, -2.0, 0.5, 3.0])
INT_COEFFS = np.array([2, -1, 3])


def flat_nonzeros(a):
    idx = np.flatnonzero(a > 0.2)
    return idx, np.flatnonzero(a), a.ravel()[idx].sum(), np.flatnonzero(a[0] < 0) * 2


def gradient_1d(v):
    return np.gradient(v), np.gradient(v, 0.5), np.gradient(v * 2.0, edge_order=2)


def gradient_2d(a):
    gy, gx = np.gradient(a)
    g1 = np.gradient(a, axis=1)
    h0, h1 = np.gradient(a, 2.0, edge_order=2)
    return np.hypot(gx, gy), g1, h0 - h1


def gradient_of_ints(a):
    gy, gx = np.gradient(a)
    return gy, gx, np.gradient(a[0])


def polyval_at_numbers(c, v):
    return np.polyval(c, 2.5), np.polyval(c, 3), np.polyval(c, v[0]), np.polyval(c, v.sum()), np.polyval(c, v)


def polyval_bisection(c):
    a, b = -3.0, 3.0
    fa = np.polyval(c, a)
    m = 0.5 * (a + b)
    fm = np.polyval(c, m)
    return fa * fm, fm


def statistics_of_lists(v):
    means = []
    tops = []
    for k in range(4):
        means.append(v[k:].mean())
        tops.append(v[: k + 2])
    pair = (v.min(), v.max())
    return (np.mean(means), np.median(means), np.std(means, ddof=1), np.percentile(means, [10, 90]),
            np.max(pair), np.sum(tops[0]), np.linalg.norm(means), float(np.mean(means)))


def list_of_rows(a):
    rows = [a[0] * 2.0, a[1], a[2] - 1.0]
    return np.mean(rows, axis=0), np.sum(rows, axis=1), np.cumsum(rows)


def asarray_dtypes(a, v):
    same = np.asarray(a, dtype=a.dtype) is a
    b = np.asarray(a, dtype=np.float32)
    c = np.asarray(v, dtype=float)
    c[0] = 5.0  # (v itself where it is float64: the change shows in v, as in plain NumPy)
    return same, b * 2, c, v


def closeness(v):
    s = v.sum()
    return (math.isclose(s, 4.0, rel_tol=0.2), math.isclose(s, s + 1e-12), math.isclose(v[0], v[1], abs_tol=10.0),
            math.isclose(float(s), s), math.isclose(2.0, v.max()))


def lists_from_outside(x, ns):
    h = np.array(ns, dtype=float)
    return x[: len(ns)] * h, np.diff(np.log(h)), np.mean(ns), np.asarray(ns) + 1, np.sum(ns) * x.max()


def best_by_key(x, lambdas):
    scores = {}
    for lam in lambdas:
        scores[lam] = ((x - lam) ** 2).mean()
    ranks = {}
    for name, v in (("a", x.min()), ("b", x.max()), ("c", x.min())):  # (a tie: the first key)
        ranks[name] = v
    return min(scores, key=scores.get), max(scores, key=scores.get), min(ranks, key=ranks.get), scores


def best_of_nans(x):
    d = {1: x[0], 2: x[1], 3: x[2]}  # (NaNs: the builtin's comparisons decide, as in plain Python)
    return min(d, key=d.get), max(d, key=d.get)


def resample_statistics(data, idx_rows):
    # (a loop over 60 rows that is no loop op - it appends to lists - unrolled: it fits the translation's budget)
    stats = {"mean": [], "median": []}
    for idx in idx_rows:
        sample = data[idx]
        stats["mean"].append(sample.mean())
        stats["median"].append(np.median(sample))
    lo, hi = np.percentile(stats["mean"], [5, 95])
    return float(lo), float(hi), np.mean(stats["median"]), len(stats["mean"])


def long_rows_heavy_body(a):
    # (300 rows: more than 256, a break at the third step; the rest runs as is)
    # (pairs appended: no buffer of the graph holds them, loop_lists.cpp)
    out = []
    for row in a:
        out.append((row.sum(), row.max()))
    return np.array(out)


def long_rows_over_budget(a):
    # (200 rows whose body passes the budget at its pace: a break at the fifth step)
    out = []
    for row in a:
        b = row * 2.0 + 1.0
        c = np.sqrt(np.abs(b)) - row
        d = np.maximum(c, 0.5) * np.minimum(b, 2.0)
        e = (d - d.mean()) / (d.std() + 1.0)
        f = np.exp(-e * e) + np.log1p(np.abs(c))
        g = np.clip(f, 0.1, 0.9) * np.tanh(b) - np.sin(c) * np.cos(d)
        out.append((float(g.sum() + e.max()), f.min()))
    return out


def grouped_rows(z, labels):
    # (rows grouped by their labels in a dict made in the frame, its items sorted: by the labels alone)
    groups = {}
    for row, lab in zip(z, labels):
        groups.setdefault(lab, []).append(row)
    summary = {}
    for lab, rows in sorted(groups.items()):
        arr = np.vstack(rows)
        summary[lab] = (len(rows), arr.mean(axis=0), float(np.abs(arr).max()))
    return summary


IDX_ROWS = rng.integers(0, 7, (60, 7))


CASES = [
    case(flat_nonzeros, A),
    case(flat_nonzeros, I32),
    case(gradient_1d, V7),
    case(gradient_1d, V7.astype(np.float32)),
    case(gradient_2d, A),
    case(gradient_2d, F32),
    case(gradient_of_ints, I32),
    case(polyval_at_numbers, COEFFS, V7),
    case(polyval_at_numbers, INT_COEFFS, I32[0].astype(np.int64)),
    case(polyval_bisection, COEFFS),
    case(statistics_of_lists, V7),
    case(statistics_of_lists, F32[0]),
    case(list_of_rows, A),
    case(asarray_dtypes, A, V7),
    case(asarray_dtypes, F32, I32[0]),
    case(closeness, V7),
    case(lists_from_outside, V7, [4, 8, 16]),
    case(lists_from_outside, V7, [0.5, 1.5, 2.0, 3.0]),
    case(best_by_key, V7, [0.1, 1.0, 10.0]),
    case(best_by_key, I32[0], [1, 2]),
    case(best_of_nans, np.array([1.0, np.nan, 0.5])),
    case(best_of_nans, np.array([np.nan, 2.0, 0.5])),
    case(resample_statistics, V7, IDX_ROWS),
    case(long_rows_heavy_body, rng.standard_normal((300, 3)), graphs=1, breaks=1),
    case(long_rows_over_budget, rng.standard_normal((200, 3)), graphs=1, breaks=1),
    case(grouped_rows, rng.standard_normal((12, 3)), ["b", "a", "c", "a", "b", "b", "c", "a", "a", "c", "b", "a"]),
]


@run_cases(CASES)
def test_program_calls(fn, args, kwargs, graphs, breaks, fallbacks):
    isolated_check(fn, args, kwargs, graphs, breaks, fallbacks)


def gradient_too_short(v):
    return np.gradient(v[:2] * 1.0, edge_order=2)


def gradient_spacings_per_axis(a):
    return np.gradient(a * 1.0, 1.0, 2.0)


def rows_of_two_lengths(v):
    rows = [v[:2] * 1.0, v[:3]]
    return np.mean(rows)


def isclose_negative_tolerance(v):
    return math.isclose(v.sum(), 1.0, rel_tol=-1.0)


ERRORS = [
    case(gradient_too_short, V7, breaks=1),
    case(gradient_spacings_per_axis, A, breaks=1),
    case(rows_of_two_lengths, V7, breaks=1),
    case(isclose_negative_tolerance, V7, breaks=1),
]


@run_cases(ERRORS)
def test_what_numpy_refuses_raises_as_numpy(fn, args, kwargs, graphs, breaks, fallbacks):
    isolated_check(fn, args, kwargs, graphs, breaks, fallbacks)


def test_a_list_from_outside_changed_in_place_translates_again():
    import sot
    from sot import capture as cap

    def scaled(x, ns):
        return np.array(ns, dtype=float) * x[0]

    x = np.arange(1.0, 4.0)
    ns = [1, 2, 3]
    sot.reset()
    cap.clear(scaled)
    translator = sot.translate.new_translator()
    with cap.capture(translator):
        first = scaled(x, ns)
        ns[1] = 20
        second = scaled(x, ns)
        ns.append(4)
        third = scaled(x, ns)
    assert first.tolist() == [1.0, 2.0, 3.0]
    assert second.tolist() == [1.0, 20.0, 3.0]
    assert third.tolist() == [1.0, 20.0, 3.0, 4.0]
    assert cap.stats(scaled)["translations"] == 3


def sized_calls(v, edges):
    return (np.isclose(v, 0.5), np.isclose(v * 2.0, v), np.searchsorted(edges, v), np.digitize(v, edges),
            np.flatnonzero(v > 0.5), np.gradient(v), np.polyval(v, 0.5), np.mean([v.sum(), v.max()]))


def test_sizes_that_change_from_call_to_call():
    # A size that changes between calls becomes a shape symbol at the second translation; a rule whose result's
    # shape carries no symbols must specialize it (else the third size reuses the second's graph: np.isclose and
    # np.searchsorted did, found by the fuzzer).
    import sot
    from sot import capture as cap
    from numpy_differential import same

    sot.reset()
    cap.clear(sized_calls)
    translator = sot.translate.new_translator()
    translator.check_graphs = True
    edges = np.linspace(0.0, 1.0, 5)
    for n in (3, 4, 6, 9, 4):
        v = np.linspace(0.0, 1.0, n) ** 2
        expected = sized_calls(v, edges)
        with cap.capture(translator):
            got = sized_calls(v, edges)
        assert same(got, expected), (n, got, expected)
