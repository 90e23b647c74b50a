"""Lists a loop op's body appends to (translator/control/loop_lists.cpp, issue 36): a list made in the frame before a
`for` loop and appended to in its body (NumPy scalars, Python floats, or arrays the step makes) is a buffer of the
graph, and the loop stays a loop op - on every step, under an `if`, after an exit's test, read back with len() and
constant indices, handed after the loop to np.array, np.stack, np.vstack, np.hstack, np.concatenate, sum() or
returned. Every case runs plainly and translated (first call, from the cache, other arguments: other trip counts,
other sizes, exits taken on the first step, later, never) and compares values and exact types, the list's items
included, and the exception where plain Python raises one. Lists the buffer cannot stand for (items of several kinds,
ints, an array appended then written into, one appended twice, one a local read after the loop still holds, a list
used otherwise in the body) keep the loop unrolled or broken as before, and agree with plain Python too."""

import pytest
from numpy_differential import check, native_loops, native_runs

np = pytest.importorskip("numpy")
sot = pytest.importorskip("sot")

pytestmark = pytest.mark.usefixtures("tier_c_sync")


def rng(seed):
    return np.random.default_rng(seed)


# ---------------------------------------------------------------------------------------------------------------
# Loop ops with buffers (loops of array work: loop ops on every backend)
# ---------------------------------------------------------------------------------------------------------------


def sums_per_step(x, n):
    out = []
    for i in range(n):
        x = x * 0.9 + 1.0
        out.append(x.sum())
    return x, out


def rows_after_a_first_item(x, n):
    first = x.copy()
    traj = [first]
    for i in range(n):
        x = np.tanh(x * 1.1) + 0.5
        traj.append(x)
    arr = np.array(traj)
    return arr[-1], arr.shape, len(traj), traj[0] is first, traj[-1], traj[1]


def two_lists_in_a_dict(data, idx):
    stats = {"mean": [], "std": []}
    for row in idx:
        sample = data[row]
        stats["mean"].append(sample.mean())
        stats["std"].append(sample.std(ddof=1))
    spread = np.percentile(np.asarray(stats["std"]), [5, 95])
    return sum(stats["mean"]) / len(stats["mean"]), spread, stats


def stacked_rows(x, n):
    rows = []
    for i in range(n):
        x = np.sin(x) + 0.25
        rows.append(x * 2.0)
    return np.stack(rows), np.vstack(rows), np.hstack(rows), np.concatenate(rows), np.array(rows).sum()


def floats_of_steps(x, n):
    out = []
    for i in range(n):
        x = x * 0.75
        out.append(float(x.max()))
    return x, out, out[-1], out[0], len(out)


BUFFERED = [
    (sums_per_step, (np.ones(4), 30), [((rng(1).random(7), 21), {}), ((np.arange(3.0), 64), {})]),
    (rows_after_a_first_item, (np.zeros(2), 40), [((rng(2).random(5), 17), {}), ((np.ones(1), 80), {})]),
    (two_lists_in_a_dict, (rng(3).random(50), rng(4).integers(0, 50, (40, 50))),
     [((rng(5).random(30), rng(6).integers(0, 30, (25, 30))), {})]),
    (stacked_rows, (rng(7).random((3, 2)), 24), [((rng(8).random((2, 5)), 18), {})]),
    (floats_of_steps, (np.ones(3), 20), [((rng(9).random(6) + 1.0, 33), {})]),
]


@pytest.mark.parametrize("fn, args, variants", BUFFERED, ids=[c[0].__name__ for c in BUFFERED])
def test_lists_appended_to_in_loop_ops(fn, args, variants):
    records = check(fn, *args, variants=variants)
    texts = [g["text"] for r in records for g in r["graphs"]]
    assert any("rows_list(" in t for t in texts), texts


# ---------------------------------------------------------------------------------------------------------------
# Appends under ifs, after exits, read back in the body (cond ops and exits: where loops are native)
# ---------------------------------------------------------------------------------------------------------------


def every_fifth_change(u, tol, n):
    # (the argument relaxed in place; its largest change kept every fifth sweep, until it is small)
    changes = []
    for k in range(n):
        new = 0.5 * (u[:-2] + u[2:])
        d = np.abs(new - u[1:-1]).max()
        u[1:-1] = new
        if k % 5 == 0:
            changes.append(d)
        if d < tol:
            break
    return k, changes


def losses_until_flat(x, n, tol):
    losses = []
    for i in range(n):
        x = x * 0.5 + 0.1
        losses.append(float(x.sum()))
        if len(losses) > 1 and abs(losses[-2] - losses[-1]) < tol:
            break
    return x, losses, len(losses)


def appended_after_the_exit(x, n, limit):
    seen = []
    for i in range(n):
        x = x * 1.5
        s = x.sum()
        if s > limit:
            break
        seen.append(s)
    return x, seen, len(seen)


def last_two_apart(x, n):
    # (plain Python raises IndexError on the first step: one item, seen[-2] read)
    seen = []
    for i in range(n):
        x = x + 1.0
        seen.append(x.sum())
        gap = seen[-1] - seen[-2]
        x = x * gap
    return x, seen


READ_BACK = [
    (every_fifth_change, (np.sin(np.linspace(0, 3, 30)), 1e-3, 200),
     [((np.ones(12), 1e-3, 200), {}), ((np.sin(np.linspace(0, 3, 25)), 1e-12, 60), {})]),
    (losses_until_flat, (np.ones(3), 40, 1e-3), [((np.ones(2) * 50, 40, 1e-9), {}), ((np.ones(3), 40, 10.0), {})]),
    (appended_after_the_exit, (np.ones(3), 30, 1e6), [((np.ones(3), 30, 0.5), {}), ((np.ones(4), 30, 1e300), {})]),
]


@pytest.mark.parametrize("fn, args, variants", READ_BACK, ids=[c[0].__name__ for c in READ_BACK])
def test_appends_under_ifs_and_exits(fn, args, variants):
    if native_loops():
        records = check(fn, *args, variants=variants)
        assert native_runs(records) > 0, "tier C's code never ran"
    else:
        check(fn, *args, variants=variants, breaks=1)


def test_an_item_before_the_first_is_indexerror():
    if native_loops():
        check(last_two_apart, np.ones(2), 20, variants=[((np.ones(3), 5), {})])
    else:
        check(last_two_apart, np.ones(2), 20, variants=[((np.ones(3), 5), {})], graphs=None, breaks=None)


# ---------------------------------------------------------------------------------------------------------------
# Lists a buffer does not stand for: the loop unrolls or breaks as before, and agrees with plain Python
# ---------------------------------------------------------------------------------------------------------------


def appended_then_written(x, n):
    rows = []
    for i in range(n):
        r = x * float(i)
        rows.append(r)
        r[0] = -1.0  # (the list's item changes too)
    return rows


def appended_twice(x, n):
    rows = []
    for i in range(n):
        r = x + float(i)
        rows.append(r)
        rows.append(r)
    return rows[0] is rows[1], rows


def item_kept_in_a_local(x, n):
    rows = []
    for i in range(n):
        x = x * 0.5
        rows.append(x)
    x += 1.0  # (the list's last item is this array)
    return rows


def previous_item_written(x, n):
    rows = []
    for i in range(n):
        x[0] += 1.0  # (the array the last step appended)
        x = x * 2.0
        rows.append(x)
    return rows


def items_of_two_kinds(x, n):
    out = []
    for i in range(n):
        x = x * 0.5
        out.append(x.sum() if i % 2 else float(x.sum()))
    return out


def list_summed_in_the_body(x, n):
    out = []
    for i in range(n):
        x = x * 0.5
        out.append(x.sum())
        x = x + sum(out)
    return x, out


NOT_BUFFERED = [
    (appended_then_written, (np.ones(3), 20)),
    (appended_twice, (np.ones(3), 20)),
    (item_kept_in_a_local, (np.ones(3), 20)),
    (previous_item_written, (np.ones(3), 20)),
    (items_of_two_kinds, (np.ones(3), 20)),
    (list_summed_in_the_body, (np.ones(3), 20)),
]


@pytest.mark.parametrize("fn, args", NOT_BUFFERED, ids=[c[0].__name__ for c in NOT_BUFFERED])
def test_lists_no_buffer_stands_for_agree_with_plain(fn, args):
    records = check(fn, *args, variants=[((np.ones(2), 18), {})], graphs=None, breaks=None, fallbacks=None)
    texts = [g["text"] for r in records for g in r["graphs"]]
    assert not any("rows_list(" in t for t in texts), texts
