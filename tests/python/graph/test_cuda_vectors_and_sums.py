"""Products with vectors and sums over all axes on the device (device_library.cpp, device_reductions.cpp), on the
simulated device. ``A @ x``, ``x @ A``, ``x @ y``, ``np.dot`` and ``np.matmul`` of float device arrays with a vector
run through the BLAS as matrices of one row or column; two vectors give NumPy's scalar, its bytes copied out (the
simulated device hands NumPy's matmul the vectors themselves, so its results are NumPy's own; a GPU's cuBLAS rounds
as it does for matrices). ``x.sum()``, ``np.sum(x)``, ``x.mean()`` and ``np.mean(x)`` of a C-contiguous float device
array add its items as one row of the rows kernel, in NumPy's pairwise order (bit for bit, NumPy 2.x and 1.24, past
NumPy 1.x's 8,192-item buffer), the mean then NumPy's own ``type(s)(s / intp(n))``. Before, each of these copied its
operands out: damped oscillators' ``v @ v`` a step moved 2,000 arrays out per call of 1,000 steps, logistic
regression's ``X @ w`` and ``err.mean()`` 403 in and 400 out, Lotka-Volterra's ``x.sum()`` 501 each way."""

import shutil

import numpy as np
import pytest
from harness import CUDA_REAL, warned

import sot

G = sot._sot.graph
pytestmark = [pytest.mark.skipif(shutil.which("c++") is None, reason="no C++ compiler for the simulated device"),
              pytest.mark.skipif(sot.config.backend != "cpu", reason="the same programs as the default run's"),
              pytest.mark.usefixtures("cuda_device")]


def data(seed, shape, dtype=np.float64):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 4, shape)).astype(dtype)


def moved():
    c = G.cuda_transfer_counts(reset=True)
    return c["arrays_in"], c["arrays_out"]


def same(got, plain):
    assert type(got) is type(plain), (type(got), type(plain))
    if isinstance(plain, tuple):
        assert len(got) == len(plain)
        for g, p in zip(got, plain):
            same(g, p)
        return
    if isinstance(plain, np.ndarray):
        assert got.dtype == plain.dtype and got.shape == plain.shape
    assert np.array_equal(got, plain, equal_nan=True)


def close(got, plain):
    """``same`` on the simulated device (NumPy's own matmul there); on a GPU, cuBLAS rounds products its own way:
    the same types and shapes, values within float64's or float32's tolerance."""
    if not CUDA_REAL:
        same(got, plain)
        return
    for g, p in zip(got, plain):
        assert type(g) is type(p) and np.shape(g) == np.shape(p)
        tol = 1e-12 if np.asarray(p).dtype == np.float64 else 1e-5
        assert np.allclose(g, p, rtol=tol, atol=0), (g, p)


def products(A, v, w):
    B = A * 1.0  # (device values: kernels' results)
    x = v * 1.0
    y = w * 1.0
    return (B @ x, x @ B.T, x @ x, np.dot(x, x), np.matmul(B, x), B.T @ y, y @ B, B[:, 1] @ y, B[0] @ x,
            np.dot(B, x), B[::2] @ x[::-1])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_products_with_vectors_are_numpys_and_run_on_the_device(dtype):
    f = sot.jit(products, backend="cuda")
    f(data(0, (7, 5), dtype), data(1, 5, dtype), data(2, 7, dtype))
    for k in range(3):
        A, v, w = data(3 + k, (7, 5), dtype), data(4 + k, 5, dtype), data(5 + k, 7, dtype)
        if not CUDA_REAL:
            G.cuda_simulated_counts(reset=True)
        moved()
        close(f(A, v, w), products(A, v, w))
        # the three inputs in; the seven vector results out (the four scalars are their bytes), and x for the
        # host's product of a reversed vector
        assert moved() == (3, 8), k
        if not CUDA_REAL:
            assert G.cuda_simulated_counts()["gemms"] >= 10, k  # (B[::2] @ x[::-1]: a reversed vector, the host's)


def oscillators(x, v, k, dt, steps):
    energy = np.empty(steps)
    for t in range(steps):
        a = -k * x - 0.1 * v
        v = v + dt * a
        x = x + dt * v
        energy[t] = 0.5 * (v @ v) + 0.5 * (k * x) @ x
    return x, v, energy


def normalized_powers(A, v, steps):
    for _ in range(steps):
        v = A @ v
        v = v / np.sqrt(v @ v)
    return v, v @ (A @ v)


@pytest.mark.parametrize("steps", [30, 31])
def test_loops_of_vector_products_move_their_arrays_once(steps):
    f, g = sot.jit(oscillators, backend="cuda"), sot.jit(normalized_powers, backend="cuda")
    f(data(10, 64), data(11, 64), 2.0, 0.01, steps)
    A0 = np.eye(16) + 0.1 * data(12, (16, 16)) / 1000
    g(A0, data(13, 16), steps)
    for k in range(2):
        x, v = data(14 + k, 64), data(15 + k, 64)
        moved()
        close(f(x, v, 2.0, 0.01, steps), oscillators(x, v, 2.0, 0.01, steps))
        assert moved() == (3, 3), k  # (x, v and the energies, each once: its items set on the device)
        A, v = np.eye(16) + np.abs(data(16 + k, (16, 16))) / 1000, np.abs(data(17 + k, 16)) + 1
        moved()
        close(g(A, v, steps), normalized_powers(A, v, steps))
        assert moved() == (2, 1), k


def sums(x):
    y = x * 1.0
    return y.sum(), np.sum(y), y.mean(), np.mean(y), (y * 2.0).sum() / y.size


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("shape", [(1,), (9,), (129,), (1000,), (8191,), (8193,), (20_000,), (40, 77), (3, 4, 500)])
def test_sums_and_means_over_all_axes_are_numpys_bit_for_bit(dtype, shape):
    f = sot.jit(sums, backend="cuda")
    f(data(20, shape, dtype))
    for k in range(2):
        x = data(21 + k, shape, dtype)
        moved()
        same(f(x), sums(x))
        assert moved() == (1, 0), k


def history(x, steps):
    out = np.empty(steps)
    for t in range(steps):
        x = x * 0.99 + 0.01
        out[t] = x.sum()
    return x, out


def test_a_sum_a_step_into_an_array_moves_each_array_once():
    f = sot.jit(history, backend="cuda")
    f(data(30, 500), 40)
    for k in range(2):
        x = data(31 + k, 500)
        moved()
        same(f(x, 40), history(x, 40))
        assert moved() == (2, 2), k  # (x and the sums' array, its items set on the device)


def edge_cases(x, e):
    y = x * 1.0
    z = e * 1.0
    return y.sum(), z.sum(), z @ z, (y * 1e300) @ (y * 1e300)


def test_empty_and_overflowing_operands_run_on_the_host_as_numpy():
    f = sot.jit(edge_cases, backend="cuda")
    for k in range(3):
        x, e = data(40 + k, 10) + 100.0, np.empty(0)
        plain, plain_w = warned(lambda: edge_cases(x, e))
        got, got_w = warned(lambda: f(x, e))
        same(got, plain)
        assert got_w == plain_w, k


def empty_mean(e):
    return (e * 1.0).mean()


def test_the_mean_of_nothing_warns_as_numpy():
    f = sot.jit(empty_mean, backend="cuda")
    e = np.empty(0)
    plain, plain_w = warned(lambda: empty_mean(e))
    got, got_w = warned(lambda: f(e))
    same(got, plain)
    assert got_w == plain_w and plain_w


def norms(A, v):
    B = A * 1.0
    x = v * 1.0
    return np.linalg.norm(x), np.linalg.norm(B), np.linalg.norm(B.T), np.linalg.norm(x[::2]), np.linalg.norm(x, 1)


def power_iteration(A, v, steps):
    for _ in range(steps):
        v = A @ v
        v = v / np.linalg.norm(v)
    return v


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_norms_are_numpys_and_a_power_iteration_moves_its_arrays_once(dtype):
    """``np.linalg.norm(x)`` of a C-contiguous device array is NumPy's ``sqrt(x.ravel().dot(x.ravel()))`` with the
    product on the device; other layouts and orders run on the host."""
    f, g = sot.jit(norms, backend="cuda"), sot.jit(power_iteration, backend="cuda")
    f(data(50, (40, 33), dtype), data(51, 1000, dtype))
    A0 = (np.eye(24) + np.abs(data(52, (24, 24))) / 1000).astype(dtype)
    g(A0, np.ones(24, dtype), 20)
    for k in range(2):
        A, v = data(53 + k, (40, 33), dtype), data(54 + k, 1000, dtype)
        close(f(A, v), norms(A, v))
        A = (np.eye(24) + np.abs(data(55 + k, (24, 24))) / 1000).astype(dtype)
        v = (np.abs(data(56 + k, 24)) + 1).astype(dtype)
        moved()
        close((g(A, v, 20),), (power_iteration(A, v, 20),))
        assert moved() == (2, 1), k


def row_sums(x):
    y = x * 1.0
    return (y.sum(axis=-1), y.mean(axis=-1), np.sum(y, axis=-1, keepdims=True), np.mean(y, axis=y.ndim - 1),
            y.max(axis=-1))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("shape", [(3, 5), (7, 129), (300, 77), (2, 3, 1000), (4, 9000), (1, 20_000)])
def test_sums_over_the_last_axis_by_keyword_are_numpys_rows(dtype, shape):
    """``sum(axis=-1)`` and ``mean(axis=-1)`` (keywords: not fused) of a C-contiguous array run as the rows kernel, in
    NumPy's pairwise order; ``max(axis=-1)`` stays on the host (a row's +0.0 or -0.0, its NaN, depends on the order
    of comparisons)."""
    f = sot.jit(row_sums, backend="cuda")
    f(data(60, shape, dtype))
    for k in range(2):
        x = data(61 + k, shape, dtype)
        moved()
        same(f(x), row_sums(x))
        assert moved() == (1, 5), k  # (the four device results, and y for the host's max)


def host_sums(x):
    return x.sum(), x.mean(), np.linalg.norm(x), np.sum(x)


def test_sums_of_an_array_only_the_host_holds_stay_on_the_host():
    """No kernel read the caller's array: summing it where it is copies nothing (the device would copy it in)."""
    f = sot.jit(host_sums, backend="cuda")
    f(data(70, 1000))
    for k in range(2):
        x = data(71 + k, 1000)
        moved()
        same(f(x), host_sums(x))
        assert moved() == (0, 0), k


def sweeps(A, b, count):
    n = len(b)
    x = np.zeros_like(b)
    for _ in range(count):
        for i in range(n):
            s = A[i, :i] @ x[:i] + A[i, i + 1:] @ x[i + 1:]
            x[i] = (b[i] - s) / A[i, i]
    return x, np.empty(0) @ np.empty(0), A[:, :0] @ b[:0]


def test_elements_of_the_callers_arrays_and_empty_products_stay_off_the_bus():
    # Gauss-Seidel: b[i] and A[i, i] are read from the caller's arrays where no kernel wrote them (nothing copied
    # out, nothing waited for), and the empty products at the ends of each sweep are NumPy's zeros made on the device
    f = sot.jit(sweeps, backend="cuda")
    n = 10
    A0 = np.eye(n) * n + np.abs(data(60, (n, n))) / 1e3
    f(A0, data(61, n), 3)
    for k in range(2):
        A, b = np.eye(n) * n + np.abs(data(62 + k, (n, n))) / 1e3, data(64 + k, n)
        moved()
        got, plain = f(A, b, 3), sweeps(A, b, 3)
        if CUDA_REAL:
            assert np.allclose(got[0], plain[0], rtol=1e-12) and type(got[1]) is type(plain[1]), k
        else:
            same(got, plain)
        # A in (its rows' products on the device; b's elements are read where they are), x and the empty product's
        # zeros out; before, x went out at every element read and at every empty product
        assert moved() == (1, 2), k
