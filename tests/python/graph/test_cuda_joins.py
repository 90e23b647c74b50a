"""numpy.stack and numpy.concatenate of device arrays, on the device (graph/backends/cuda/device_joins.hpp), on the
simulated device: each part copied into its place in a new C-ordered array, so the results are NumPy's bit for bit;
a loop keeping each step's array in a list and stacking them at the end copies nothing out but the result. Parts of
several dtypes, parts that do not fit and axes out of range run on the host (NumPy promotes or raises)."""

import shutil

import numpy as np
import pytest
from harness import CUDA_REAL

import sot

G = sot._sot.graph
pytestmark = [pytest.mark.skipif(shutil.which("c++") is None, reason="no C++ compiler for the simulated device"),
              pytest.mark.skipif(sot.config.backend != "cpu", reason="the same programs as the default run's"),
              pytest.mark.usefixtures("cuda_device")]


def moved():
    c = G.cuda_transfer_counts(reset=True)
    return c["arrays_in"], c["arrays_out"]


def bits(values):
    return [(type(v), v.dtype, v.shape, v.tobytes()) for v in values]


def joins(x):
    a = x * 2
    b = x + 1
    c = a[:, 1:3]
    return (np.stack([a, b]), np.stack((a, b, a), axis=1), np.stack([a, b], -1), np.concatenate([a, b]),
            np.concatenate((a, b, c[:, :0]), axis=1), np.concatenate([c, a[:, ::2], b[:, :1]], axis=-1),
            np.stack([a[0], b[1], c[:, 0]]), np.concatenate([a[0], c[0]]), np.stack([x], axis=2))


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.uint8])
def test_stacks_and_concatenations_run_on_the_device_as_numpy(dtype):
    f = sot.jit(joins, backend="cuda")
    rng = np.random.default_rng(0)
    f((rng.standard_normal((4, 4)) * 50).astype(dtype))
    for k in range(2):
        x = (rng.standard_normal((4, 4)) * 50).astype(dtype)
        moved()
        plain = joins(x)
        assert bits(f(x)) == bits(plain), k
        assert moved() == (1, len(plain)), k  # (x in, the results out: no part copied out to be joined)


def history(cells, steps):
    rows = [cells]
    for _ in range(steps):
        cells = np.roll(cells, 1) ^ (cells | np.roll(cells, -1))
        rows.append(cells)
    return np.stack(rows), np.concatenate([cells, cells[::-1]])


def test_a_loop_stacking_its_steps_moves_each_array_once():
    f = sot.jit(history, backend="cuda")
    cells = np.zeros(64, dtype=np.uint8)
    cells[32] = 1
    f(cells, 40)
    for k in range(2):
        cells = np.zeros(64, dtype=np.uint8)
        cells[20 + k] = 1
        moved()
        plain = history(cells, 40)
        assert bits(f(cells, 40)) == bits(plain), k
        assert moved() == (1, 2), k  # (before: every step's array out, for NumPy's stack)
    assert CUDA_REAL or G.cuda_simulated_counts()["bad_accesses"] == 0


def mixed(x, y):
    a = x * 2.0
    return np.stack([a, y]), np.concatenate([a, a.astype(np.float32)])


def test_parts_of_several_dtypes_are_promoted_on_the_host():
    f = sot.jit(mixed, backend="cuda")
    x = np.arange(6.0).reshape(2, 3)
    f(x, x.astype(np.int32))
    for k in range(2):
        y = (x * (k + 3)).astype(np.int32)
        assert bits(f(x, y)) == bits(mixed(x, y)), k


def join_by(x, axis):
    a = x * 2.0
    return np.stack([a, a[:1]], axis=0) if axis is None else np.concatenate([a, a], axis=axis)


def test_joins_that_do_not_fit_raise_as_numpy():
    f = sot.jit(join_by, backend="cuda")
    x = np.arange(12.0).reshape(3, 4)
    f(x, 1)
    f(x, 1)
    for axis in (None, 2, -3):
        with pytest.raises(Exception) as plain:
            join_by(x, axis)
        with pytest.raises(Exception) as got:
            f(x, axis)
        assert type(got.value) is type(plain.value) and str(got.value) == str(plain.value), axis
