"""``if`` on values of the graph captured as cond ops: each way simulated to where the two meet, its ops a graph of
its own, the locals either way changes handed on as the op's outputs; only the way the test picks runs. Ifs whose
ways cannot be (a print, a list appended to, a ``break`` or ``return``, an if inside a way, values of other kinds
each way), and ifs inside loops (a cond op on every step costs more than plain Python's branch) but where the loop
runs as native code (the cpu backend's tier C), break at the jump as before. Every case is compared with plain NumPy on the first call, from the cache
and with other arguments (which take the other way).
PYTEST_DONT_REWRITE"""

import sys

import pytest

from numpy_differential import case, check, isolated_check, native_loops, run_cases

np = pytest.importorskip("numpy")

# 3.12 and 3.13 copy a short `return ...` after an if/else into both ways: each way then returns, and such an
# if is not captured yet (it breaks at its jump as before): (graphs, breaks) there.
COPIES_RETURN = sys.version_info >= (3, 12)


def pin(graphs_there):
    return {"graphs": graphs_there, "breaks": 1} if COPIES_RETURN else {}


def in_a_loop():
    """An if inside a loop over rows (tier C makes the rows' arrays): a cond op inside a native loop op, else a
    break at its jump."""
    return {"graphs": 1, "breaks": 0 if native_loops() else 1}


rng = np.random.default_rng(5)
R = rng.standard_normal((30, 3))
V = rng.standard_normal(8)


def rows_if_no_else(x):
    total = np.zeros(x.shape[1])
    count = 0
    for row in x:
        if row.sum() > 0:
            total += row * row
            count += 1
    return np.sqrt(total), count


def rows_if_else(x):
    acc = np.zeros(x.shape[1])
    for r in x:
        if r.mean() > 0:
            acc = acc + r
        else:
            acc = acc - 2 * r
    return acc


def top_if_else(x):
    if x.sum() > 0:
        y = x * 2
        n = 1
    else:
        y = x - 1
        n = 2
    return y + n, n


def only_else_changes(x):
    y = x
    if x.max() > 1.0:
        pass
    else:
        y = x * 10
    return y


def in_place_on_input(x):
    if x[0] > 0:
        x *= 2.0
    return x.sum()


def same_constant_both_ways(x):
    if x.mean() > 0:
        k = 3
        y = x + 1
    else:
        k = 3
        y = x - 1
    return y * k


def on_any(x):
    if np.any(x > 1.5):
        x = np.clip(x, -1.5, 1.5)
    return x.mean()


def on_python_int(x):
    n = int((x > 0).sum())
    if n > 3:
        y = x[:3] * n
    else:
        y = x[-3:] - n
    return y


def log_only_when_positive(x):
    # the way not taken would warn (log of 0): only the way the test picks runs
    if x.min() > 0:
        y = np.log(x)
    else:
        y = x
    return y


def loop_inside_a_way(x):
    if x.sum() > 0:
        for _ in range(20):
            x = x * 0.9 + 0.01
    return x


def cond_inside_while(x, tol):
    steps = 0
    while np.abs(x).max() > tol:
        if x.sum() > 0:
            x = x * 0.5
        else:
            x = x * 0.25
        steps += 1
    return x, steps


def kinds_differ_breaks(x):
    if x.sum() > 0:
        y = x * 2
    else:
        y = x.astype(np.int64)
    return y


def print_in_a_way_breaks(x):
    if x.sum() > 0:
        print("positive")
        x = x + 1
    return x


def list_append_in_a_way_breaks(x):
    seen = [0]
    if x.sum() > 0:
        seen.append(1)
    return x * len(seen), seen


def break_in_a_way_breaks(x):
    for r in x:
        if r.sum() > 1.0:
            break
        x = x * 0.5
    return x


def return_in_a_way_breaks(x):
    if x.sum() > 0:
        return x * 2
    return x - 1


def if_inside_a_way_breaks(x):
    if x.sum() > 0:
        if x.max() > 1.0:
            x = x - 1
        x = x * 2
    return x


CASES = [
    # (an if inside a loop is no cond op yet: each step would pay for the op, slower than plain Python's branch)
    case(rows_if_no_else, R, **in_a_loop()),
    case(rows_if_no_else, np.abs(R), **in_a_loop()),
    # (each way's array a new one: a cond op of arrays inside a native loop op)
    case(rows_if_else, R[:20], **in_a_loop()),
    case(top_if_else, V),
    case(top_if_else, -np.abs(V)),
    case(only_else_changes, V, **pin(1)),
    case(only_else_changes, V * 0.1, **pin(2)),
    # (an in-place change to an array from outside is a side effect: no way may make one)
    case(in_place_on_input, V.copy(), graphs=2, breaks=1),
    case(in_place_on_input, -np.abs(V), graphs=2, breaks=1),
    case(same_constant_both_ways, V, **pin(2)),
    case(on_any, V * 3),
    case(on_any, V * 0.1),
    case(on_python_int, V, **pin(2)),
    case(log_only_when_positive, np.abs(V) + 1, **pin(2)),
    case(log_only_when_positive, np.array([0.0, 1.0, 2.0]), **pin(1)),
    case(loop_inside_a_way, np.abs(V)),
    case(cond_inside_while, V, 1e-3, **({"graphs": 1, "breaks": 0} if native_loops() else {"graphs": 2, "breaks": 2})),
    case(kinds_differ_breaks, V, graphs=2, breaks=1),
    case(print_in_a_way_breaks, np.abs(V), graphs=2, breaks=2),  # (and the print itself, after)
    case(list_append_in_a_way_breaks, np.abs(V), graphs=2, breaks=1),
    case(return_in_a_way_breaks, V, graphs=2, breaks=1),
    # (the outer if breaks; where the run goes on after it, the inner one is a cond op)
    case(if_inside_a_way_breaks, np.abs(V), graphs=2, breaks=1),
]


@run_cases(CASES)
def test_conds(fn, args, kwargs, graphs, breaks, fallbacks):
    isolated_check(fn, args, kwargs, graphs, breaks, fallbacks)


@pytest.mark.parametrize("fn,args", [(break_in_a_way_breaks, (R,))])
def test_not_captured_still_right(fn, args):
    # (the counts are the translation's own, whatever it does there: the values are compared; a `break` in a
    # `for` loop's body is that loop op's exit where loops are native, test_loop_exits.py)
    graphs, breaks = _count(fn, args)
    check(fn, *args, graphs=graphs, breaks=breaks)


def _count(fn, args):
    import sot  # noqa: PLC0415

    e = sot.explain(fn, *args)
    return e.graph_count, e.graph_break_count


def _graph_texts(fn, *args):
    records = check(fn, *args, variants=False)
    return [g["text"] for r in records if r["transformed"] is not None for g in r["graphs"]]


@pytest.mark.parametrize("fn,args", [
    (top_if_else, (V,)),
    (loop_inside_a_way, (np.abs(V),)),
])
def test_one_cond_op(fn, args):
    (text,) = _graph_texts(fn, *args)
    assert text.count("= cond(") == 1, text


def test_cond_op_inside_a_loop_only_where_native():
    records = check(rows_if_no_else, R, **in_a_loop(), variants=False)
    texts = [g["text"] for r in records if r["transformed"] is not None for g in r["graphs"]]
    assert texts and any("= cond(" in t for t in texts) == native_loops(), texts
