"""Generators over arrays consumed at once (issue 20, item 3): a generator expression or generator function whose
generator goes straight into sum(), list(), tuple(), sorted(), max() or min() runs inline to its end, so the
arrays it yields are graph values and sum() adds them in the graph. Each compared with plain NumPy on the first
call, from the cache and with varied arguments (other values, dimensions one longer, another dtype); graph and
break counts pinned.
PYTEST_DONT_REWRITE"""

import pytest

from numpy_differential import case, isolated_check, run_cases

np = pytest.importorskip("numpy")

rng = np.random.default_rng(22)
XS = [rng.standard_normal(5) for _ in range(3)]
BOARD = (rng.random((6, 7)) > 0.6).astype(np.int64)


def weighted_sum(ws, xs):
    return sum(w * x for w, x in zip(ws, xs))


def neighbours(board):
    return sum(np.roll(np.roll(board, dy, axis=0), dx, axis=1)
               for dy in (-1, 0, 1) for dx in (-1, 0, 1) if (dy, dx) != (0, 0))


def life_steps(board):
    for _ in range(3):
        n = sum(np.roll(np.roll(board, dy, axis=0), dx, axis=1)
                for dy in (-1, 0, 1) for dx in (-1, 0, 1) if (dy, dx) != (0, 0))
        board = ((n == 3) | ((board == 1) & (n == 2))).astype(board.dtype)
    return board


def stacked(xs):
    return np.stack(list(x * 2.0 for x in xs)), tuple(np.abs(x) for x in xs)[1]


def powers(x):
    def gen(v, n):
        for k in range(n):
            yield v ** k
    return sum(gen(x, 4)), list(gen(x + 1.0, 2))


def sum_with_start_breaks(xs):
    return sum((x * 2.0 for x in xs), xs[0])  # (the generator is not the call's only argument)


def sum_of_a_list(xs):
    return sum([x * x for x in xs]), sum(xs, np.zeros_like(xs[0]))


def max_of_sizes(xs):
    return max(x.shape[0] for x in xs) + min(len(x) for x in xs), sum(x.ndim for x in xs)


def float_of_items(xs):
    return max(float(x.max()) for x in xs)  # (Python floats made in the graph, their max too)


CASES = [
    case(weighted_sum, [1.0, 2.0, 3.0], XS),
    case(neighbours, BOARD),
    case(life_steps, BOARD),
    case(stacked, XS),
    case(powers, XS[0]),
    case(sum_of_a_list, XS),
    case(max_of_sizes, XS, graphs=0),
    case(sum_with_start_breaks, XS, graphs=0, breaks=2),
    case(float_of_items, XS),
]


@run_cases(CASES)
def test_generators(fn, args, kwargs, graphs, breaks, fallbacks):
    isolated_check(fn, args, kwargs, graphs, breaks, fallbacks)
