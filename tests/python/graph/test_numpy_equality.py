"""``a == b`` and ``a != b`` of arrays fused as ``numpy.equal`` and ``not_equal`` (graph/rules/ufuncs.cpp,
equality_ufunc) where the two cannot fail to broadcast: a Python number or a NumPy scalar on one side, or the same
shape (and shape symbols) on both. Elsewhere the operator runs as it is: under NumPy 1.x ``==`` of shapes that do not
broadcast returns False with a warning where the ufunc raises. Each case through the differential check (values and
types, first call, cache, other arguments of the same types), on whichever backend the run uses; and the Game of
Life's neighbour counts compared with ``== 3`` stay on the cuda backend's simulated device."""

import shutil

import numpy as np
import pytest
from numpy_differential import LEGACY, check

import sot

G = sot._sot.graph


def counts_equal(n, board):
    return ((n == 3) | ((board == 1) & (n == 2))).astype(board.dtype)


def out_of_range(a):
    return (a == 1000) | (a != -200), (a * 2) == 300, a == 3.5


def same_shapes(a, b):
    return (a + 1 == b * 2) & (a != b), (a == a[0]) | (b != np.float64(0.5))


def nans(x):
    y = x * 1.0
    return y == y, y != y, y == np.nan


def shapes_that_do_not_broadcast(a, b):
    return (a + 0) == (b + 0)


def bools(p, q):
    return (p == q) != (p == True)  # noqa: E712 - the comparison is the test


@pytest.mark.parametrize("dtype", [np.int8, np.int64, np.uint8, np.float32])
def test_counts_compared_with_numbers(dtype):
    rng = np.random.default_rng(1)
    n = rng.integers(0, 9, (20, 30)).astype(dtype)
    board = rng.integers(0, 2, (20, 30)).astype(dtype)
    check(counts_equal, n, board)


@pytest.mark.parametrize("dtype,graphs,breaks", [(np.int8, 2, 3), (np.uint8, 2, 3), (np.int16, 1, 0),
                                                  (np.float64, 1, 0)])
def test_numbers_out_of_the_dtypes_range(dtype, graphs, breaks):
    # (the translator breaks at a Python int out of an integer dtype's range, NumPy 2's comparisons being special;
    # NumPy 1.x's value-based casting compares in a wider dtype, in the graph)
    if LEGACY:
        graphs, breaks = 1, 0
    check(out_of_range, np.arange(-50, 150, dtype=np.int64).astype(dtype), graphs=graphs, breaks=breaks)


def test_same_shapes_and_numpy_scalars():
    rng = np.random.default_rng(2)
    a, b = rng.integers(0, 3, (2, 40, 7)).astype(np.float64)
    check(same_shapes, a, b)


def test_nans_compare_as_numpys():
    x = np.array([1.0, np.nan, -0.0, 0.0, np.inf])
    check(nans, x)


def test_bool_arrays():
    rng = np.random.default_rng(3)
    check(bools, rng.random(50) < 0.5, rng.random(50) < 0.3)


def test_shapes_that_do_not_broadcast_run_as_the_operator():
    # (the graph breaks there; the operator then gives NumPy 1.x's False and warning, or NumPy 2's ValueError)
    check(shapes_that_do_not_broadcast, np.ones(3), np.ones(4), graphs=1, breaks=1, variants=False)


def life(board, steps):
    for _ in range(steps):
        n = sum(np.roll(np.roll(board, dy, axis=0), dx, axis=1)
                for dy in (-1, 0, 1) for dx in (-1, 0, 1) if (dy, dx) != (0, 0))
        board = ((n == 3) | ((board == 1) & (n == 2))).astype(board.dtype)
    return board


@pytest.mark.skipif(shutil.which("c++") is None, reason="no C++ compiler for the simulated device")
@pytest.mark.skipif(sot.config.backend != "cpu", reason="the same programs as the default run's")
@pytest.mark.usefixtures("cuda_device")
def test_the_game_of_life_stays_on_the_device():
    f = sot.jit(life, backend="cuda")
    rng = np.random.default_rng(4)
    f((rng.random((24, 24)) < 0.35).astype(np.int8), 12)
    for k in range(2):
        board = (rng.random((24, 24)) < 0.35).astype(np.int8)
        G.cuda_transfer_counts(reset=True)
        assert np.array_equal(f(board, 12), life(board, 12))
        c = G.cuda_transfer_counts()
        assert (c["arrays_in"], c["arrays_out"]) == (1, 1), k
