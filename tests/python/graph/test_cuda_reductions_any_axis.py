"""Reductions over any axes on the device (graph/backends/cuda/device_reductions.hpp), on the simulated device: a
tuple of axes that NumPy's iterator merges into one loop (neighbours, both reduced) runs as one reduction, in NumPy's
order (pairwise along the innermost loop, index order along another), so the results are NumPy's bit for bit; sums,
maxima and minima of ints and sums of bools run there too (exact in any order); loops reduced apart with the innermost
one reduced run as the rows kernel then the ordered one; means of ints of at most 32 bits, exact in any order. Other
loops apart, means of 64-bit ints and other layouts run on the host, with NumPy's results."""

import shutil

import numpy as np
import pytest
from harness import CUDA_REAL

import sot

G = sot._sot.graph
pytestmark = [pytest.mark.skipif(shutil.which("c++") is None, reason="no C++ compiler for the simulated device"),
              pytest.mark.skipif(sot.config.backend != "cpu", reason="the same programs as the default run's"),
              pytest.mark.usefixtures("cuda_device")]


def floats(seed, shape, dtype=np.float64):
    rng = np.random.default_rng(seed)
    # magnitudes over 16 decades: another order of additions would round differently
    return (rng.standard_normal(shape) * 10.0 ** rng.uniform(-8, 8, shape)).astype(dtype)


def ints(seed, shape, dtype):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(seed)
    return rng.integers(info.min // 2, info.max // 2, shape, dtype=dtype, endpoint=True)


def moved():
    c = G.cuda_transfer_counts(reset=True)
    return c["arrays_in"], c["arrays_out"]


def bits(values):
    return [(type(v), np.asarray(v).dtype, np.shape(v), np.asarray(v).tobytes()) for v in values]


def arrays(values):
    return sum(isinstance(v, np.ndarray) for v in values)


def planes(x):
    y = x * 2.0
    return (y.sum(axis=(0, 1)), np.mean(y, axis=(1, 2)), y.max(axis=(0, 1)), np.min(y, (0, 1), keepdims=True),
            y.sum(axis=(-1, -2), keepdims=True), y[0].sum(axis=0), y[0, 0].sum(axis=0), y.sum(axis=(2, 0, 1)),
            np.mean(y, axis=None), y[:, :1].sum(axis=(1, 2)))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("shape", [(4, 50, 33), (3, 7, 3000), (5, 1, 9)])
def test_merged_axes_reduce_on_the_device_as_numpy_bit_for_bit(dtype, shape):
    f = sot.jit(planes, backend="cuda")
    f(floats(0, shape, dtype))
    for k in range(2):
        x = floats(1 + k, shape, dtype)
        moved()
        plain = planes(x)
        assert bits(f(x)) == bits(plain), k
        # x in and the arrays out: nothing copied out to be reduced
        assert moved() == (1, arrays(plain)), k


def apart(x):
    y = x * 2.0
    return (y.sum(axis=(0, 2)), np.mean(y, axis=(0, 2)), np.mean(y[:, 1:], axis=(0, 2), keepdims=True),
            y[1:, :, 1:].sum(axis=(0, 2)))


def batch_norm(x):  # (N, C, H, W): statistics per channel
    mu = x.mean(axis=(0, 2, 3), keepdims=True)
    var = ((x - mu) ** 2).mean(axis=(0, 2, 3), keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("shape", [(4, 50, 33), (2, 500, 3), (3, 3, 700)])
def test_loops_reduced_apart_run_on_the_device_as_numpy_bit_for_bit(dtype, shape):
    # NumPy adds each innermost row pairwise and the rows' sums into each output in index order: the rows kernel,
    # then the ordered one, and a mean's division after them
    f = sot.jit(apart, backend="cuda")
    f(floats(3, shape, dtype))
    for k in range(2):
        x = floats(4 + k, shape, dtype)
        moved()
        plain = apart(x)
        assert bits(f(x)) == bits(plain), k
        assert moved() == (1, arrays(plain)), k


def test_batch_norm_statistics_stay_on_the_device():
    f = sot.jit(batch_norm, backend="cuda")
    f(floats(6, (8, 3, 10, 12)))
    for k, shape in enumerate([(8, 3, 10, 12), (8, 3, 10, 12), (5, 4, 7, 9)]):
        x = floats(7 + k, shape)
        moved()
        plain = batch_norm(x)
        assert bits([f(x)]) == bits([plain]), k
        assert moved() == (1, 1), k
    assert CUDA_REAL or G.cuda_simulated_counts()["bad_accesses"] == 0


ON_THE_HOST = {
    # a float max apart (the rows kernel compares in another order)
    "max": lambda y: np.max(y, axis=(0, 2)),
    # the innermost loop kept with reduced ones apart (NumPy adds in index order over both)
    "innermost kept": lambda y: y.reshape(2, 4, 5, 6).sum(axis=(0, 2)),
    # reduced loops in three places
    "three places": lambda y: y.reshape(2, 2, 2, 5, 6).sum(axis=(0, 2, 4)),
    # reduced loops side by side that do not merge (NumPy copies them into its buffer and adds them pairwise as one)
    "side by side": lambda y: y[:, ::2].sum(axis=(1, 2)),
    "side by side, all": lambda y: y[:, ::2].sum(),
    "side by side, mean": lambda y: y[:, ::2].mean(axis=(1, 2)),
    # axes out of memory order with two kept (NumPy's result comes in its operand's order)
    "transposed, two kept": lambda y: y.transpose(1, 0, 2).sum(axis=2),
    # a strided innermost loop
    "strided": lambda y: y[:, :, ::2].sum(axis=2),
}


def transposed(x):
    y = x * 2.0
    z = y.reshape(8, -1)
    return (y.T.sum(axis=(0, 1)), z.T.sum(axis=0), z.T.mean(axis=1), np.max(z.T, axis=1), y.transpose(2, 1, 0).sum(),
            y.transpose(0, 2, 1).mean(axis=(1, 2)), z.T.sum(axis=0, keepdims=True))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_transposed_operands_reduce_in_memory_order_on_the_device(dtype):
    # NumPy's iterator loops in memory order: x.T's loops are x's, so x.T.sum(axis=0) adds as x.sum(axis=1)
    f = sot.jit(transposed, backend="cuda")
    f(floats(13, (8, 50, 33), dtype))
    for k in range(2):
        x = floats(14 + k, (8, 50, 33), dtype)
        moved()
        plain = transposed(x)
        assert bits(f(x)) == bits(plain), k
        assert moved() == (1, arrays(plain)), k


@pytest.mark.parametrize("name", list(ON_THE_HOST))
def test_other_loops_reduced_apart_run_on_the_host(name):
    reduce = ON_THE_HOST[name]

    def g(x):
        return reduce(x * 2.0)

    f = sot.jit(g, backend="cuda")
    f(floats(3, (8, 5, 6)))
    for k in range(2):
        x = floats(4 + k, (8, 5, 6))
        before = G.cuda_simulated_counts()["launches"]
        assert bits([f(x)]) == bits([g(x)]), k
        assert CUDA_REAL or G.cuda_simulated_counts()["launches"] == before + 1, k  # (the product's alone)


def long_rows_apart(x):
    y = x + 1.0
    return y.sum(axis=(0, 2)), y.mean(axis=(0, 2))


def test_rows_longer_than_numpy_1x_buffer_apart():
    # NumPy 1.x adds a row past its buffer size in parts, each into the output element: there the host runs it;
    # NumPy >= 2.3 adds the row in one part: there the device
    f = sot.jit(long_rows_apart, backend="cuda")
    f(floats(8, (3, 2, 9000)))
    x = floats(9, (3, 2, 9000))
    moved()
    plain = long_rows_apart(x)
    assert bits(f(x)) == bits(plain)
    assert (moved()[1] == arrays(plain)) == (np.lib.NumpyVersion(np.__version__) >= "2.3.0")


def integer_reductions(x):
    y = x * 3
    return (y.sum(), np.sum(y, axis=0), y.sum(axis=-1), y.max(), np.min(y, axis=0), y.max(axis=(0, 1)),
            (y > 0).sum(), np.sum(y < 0, axis=(1, 2)), np.amax(y, axis=1, keepdims=True), y.min(axis=2),
            y.sum(axis=(0, 1)), y[1:].max(), y[:, :1].sum(axis=1), y.sum(axis=(0, 2)), y.max(axis=(0, 2)),
            np.min(y[:, ::2], axis=(1, 2)), (y > 0).sum(axis=(0, 2)))


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.int16, np.uint8, np.uint32])
def test_integer_sums_maxima_and_minima_run_on_the_device(dtype):
    f = sot.jit(integer_reductions, backend="cuda")
    shape = (6, 40, 50)
    f(ints(0, shape, dtype))
    for k in range(2):
        x = ints(1 + k, shape, dtype)  # (large values: the products and the sums wrap, as NumPy's do)
        moved()
        plain = integer_reductions(x)
        assert bits(f(x)) == bits(plain), k
        assert moved() == (1, arrays(plain)), k


def integer_means(x):
    y = x + 1
    return (y.mean(), np.mean(y, axis=0), y.mean(axis=(1, 2)), y.mean(axis=-1, keepdims=True), (y > 0).mean(),
            np.mean(y < 0, axis=0))


@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.int16, np.uint8, np.int8])
def test_means_of_small_ints_run_on_the_device(dtype):
    # NumPy adds ints in float64 for a mean: with at most 2^53 / 2^32 items an output (int32, uint32), every partial
    # sum is an integer a float64 holds, so any order gives NumPy's sum, then divided as NumPy divides
    f = sot.jit(integer_means, backend="cuda")
    for shape in [(5, 30, 40), (3, 7, 11)]:
        f(ints(7, shape, dtype))
        for k in range(2):
            x = ints(8 + k, shape, dtype)
            moved()
            plain = integer_means(x)
            assert bits(f(x)) == bits(plain), (shape, k)
            assert moved() == (1, arrays(plain)), (shape, k)


def test_a_mean_of_more_ints_than_float64_adds_exactly_runs_on_the_host():
    # 2^21 + 4096 uint32 items of 2^31 or more: partial sums pass 2^53, where float64 additions may round in NumPy's
    # order (an exact sum need not be NumPy's), so the host takes it
    def mean_of(x):
        return (x + np.uint32(0)).mean()

    f = sot.jit(mean_of, backend="cuda")
    rng = np.random.default_rng(60)
    n = 2**21 + 4096
    f(rng.integers(2**31, 2**32, n, dtype=np.uint32))
    for k in range(2):
        x = rng.integers(2**31, 2**32, n, dtype=np.uint32)
        before = G.cuda_simulated_counts()["launches"]
        assert bits([f(x)]) == bits([mean_of(x)]), k
        assert CUDA_REAL or G.cuda_simulated_counts()["launches"] == before + 1, k


def wide_means(x):
    y = x + 1
    return y.mean(), np.mean(y, axis=0), y.mean(axis=(1, 2))


def test_means_of_64_bit_ints_add_floats_on_the_host():
    f = sot.jit(wide_means, backend="cuda")
    f(ints(7, (5, 30, 40), np.int64))
    for k in range(2):
        x = ints(8 + k, (5, 30, 40), np.int64)  # (past 2^53: the order of float additions rounds)
        before = G.cuda_simulated_counts()["launches"]
        assert bits(f(x)) == bits(wide_means(x)), k
        assert CUDA_REAL or G.cuda_simulated_counts()["launches"] == before + 1, k  # (the sum's group alone)


def centered_steps(x, steps):
    for _ in range(steps):
        x = x * 1.5 - x.mean(axis=(1, 2), keepdims=True) + x.max(axis=(0, 1)) * 1e-3
    return x


def test_a_loop_reducing_merged_axes_each_step_moves_the_array_once():
    f = sot.jit(centered_steps, backend="cuda")
    f(floats(11, (3, 20, 64)), 30)
    for k in range(2):
        x = floats(12 + k, (3, 20, 64))
        moved()
        got, plain = f(x, 30), centered_steps(x, 30)
        assert bits([got]) == bits([plain]), k
        assert moved() == (1, 1), k
    assert CUDA_REAL or G.cuda_simulated_counts()["bad_accesses"] == 0


def test_bad_axes_raise_as_numpy():
    def reduce_by(x, axis):
        return (x * 1).sum(axis=axis)

    f = sot.jit(reduce_by, backend="cuda")
    x = ints(20, (4, 5, 6), np.int64)
    f(x, (0, 1))
    f(x, (0, 1))
    for axis in ((0, 0), (0, 3), (-4,)):
        with pytest.raises(Exception) as plain:
            reduce_by(x, axis)
        with pytest.raises(Exception) as got:
            f(x, axis)
        assert type(got.value) is type(plain.value) and str(got.value) == str(plain.value), axis


def row_extremes(x):
    y = x * 1.0
    return y.max(axis=-1), np.min(y, -1), np.amax(y + 1.0, axis=1)


def signed_zeros(seed, shape):
    rng = np.random.default_rng(seed)
    x = np.where(rng.random(shape) < 0.5, 0.0, -0.0)
    x[1] = np.nan
    x[2, 5], x[2, 7] = np.nan, -np.nan
    return x


def test_row_maxima_that_are_zeros_or_nans_are_numpys_own():
    # a fused max or min over rows compares in another order than NumPy's SIMD loop: where a row's result is a zero
    # (+0.0 or -0.0) or a NaN, the group's results come from the host, then and on every later call
    f = sot.jit(row_extremes, backend="cuda")
    f(floats(30, (64, 300)))
    for k in range(2):
        x = floats(31 + k, (64, 300))
        assert bits(f(x)) == bits(row_extremes(x)), k
    for k in range(4):
        x = signed_zeros(40 + k, (64, 300))
        assert bits(f(x)) == bits(row_extremes(x)), k
    x = floats(50, (64, 300))
    assert bits(f(x)) == bits(row_extremes(x))
