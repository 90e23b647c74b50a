"""The loop corpus: NumPy programs built around Python loops, written the way people write them (loops over
slices, rows, single elements and time steps; dynamic programming; iterations to convergence; pure-Python
counters), each with a maker of its inputs at a size. The subject of issue 34's goals: translated, no program
slower than plain, and ahead of numba where both run. ``bench_loop_corpus.py`` runs it.

Each entry: ``name``, ``fn``, ``make(n) -> args`` (``n`` the size: a side, a length or a step count), ``sizes``
(small, large) and ``kind`` (``slices``: loops whose slices move with the loop variable; ``elements``: loops over
single elements; ``steps``: time steps over whole arrays; ``iterate``: while loops to convergence; ``python``: no
array in the loop)."""

import math

import numpy as np

CORPUS = []


def program(kind, sizes):
    def register(fn):
        CORPUS.append({"name": fn.__name__, "fn": fn, "kind": kind, "sizes": sizes, "make": None})
        return fn
    return register


def inputs(name):
    """Registers the maker of ``name``'s inputs."""
    def register(make):
        next(e for e in CORPUS if e["name"] == name)["make"] = make
        return make
    return register


def rng(seed=0):
    return np.random.default_rng(seed)


def spd(n, seed=0):
    a = rng(seed).standard_normal((n, n))
    return a @ a.T + n * np.eye(n)


# --- dense linear algebra with moving slices ---------------------------------------------------------------


@program("slices", (16, 128))
def forward_substitution(L, b):
    n = b.shape[0]
    x = np.zeros(n)
    for i in range(n):
        x[i] = (b[i] - L[i, :i] @ x[:i]) / L[i, i]
    return x


@inputs("forward_substitution")
def _(n):
    return np.tril(rng(1).standard_normal((n, n))) + n * np.eye(n), rng(2).standard_normal(n)


@program("slices", (16, 128))
def back_substitution(U, b):
    n = b.shape[0]
    x = np.zeros(n)
    for i in range(n - 1, -1, -1):
        x[i] = (b[i] - U[i, i + 1:] @ x[i + 1:]) / U[i, i]
    return x


@inputs("back_substitution")
def _(n):
    return np.triu(rng(3).standard_normal((n, n))) + n * np.eye(n), rng(4).standard_normal(n)


@program("slices", (16, 96))
def lu_doolittle(A):
    A = A.copy()
    n = A.shape[0]
    for k in range(n - 1):
        A[k + 1:, k] = A[k + 1:, k] / A[k, k]
        A[k + 1:, k + 1:] -= np.outer(A[k + 1:, k], A[k, k + 1:])
    return A


@inputs("lu_doolittle")
def _(n):
    return (spd(n, 5),)


@program("slices", (16, 96))
def cholesky_rows(A):
    n = A.shape[0]
    L = np.zeros_like(A)
    for j in range(n):
        L[j, j] = math.sqrt(A[j, j] - L[j, :j] @ L[j, :j])
        for i in range(j + 1, n):
            L[i, j] = (A[i, j] - L[i, :j] @ L[j, :j]) / L[j, j]
    return L


@inputs("cholesky_rows")
def _(n):
    return (spd(n, 6),)


@program("slices", (8, 64))
def gram_schmidt(A):
    m, n = A.shape
    Q = np.zeros((m, n))
    for j in range(n):
        v = A[:, j].copy()
        for i in range(j):
            v = v - (Q[:, i] @ A[:, j]) * Q[:, i]
        Q[:, j] = v / np.linalg.norm(v)
    return Q


@inputs("gram_schmidt")
def _(n):
    return (rng(7).standard_normal((2 * n, n)),)


@program("slices", (16, 128))
def matvec_by_rows(A, x):
    y = np.empty(A.shape[0])
    for i in range(A.shape[0]):
        y[i] = A[i] @ x
    return y


@inputs("matvec_by_rows")
def _(n):
    return rng(8).standard_normal((n, n)), rng(9).standard_normal(n)


@program("slices", (32, 512))
def conv1d_taps(x, w):
    n = x.shape[0] - w.shape[0] + 1
    y = np.zeros(n)
    for k in range(w.shape[0]):
        y += w[k] * x[k:k + n]
    return y


@inputs("conv1d_taps")
def _(n):
    return rng(10).standard_normal(n), rng(11).standard_normal(9)


@program("slices", (16, 256))
def prefix_rows(A):
    S = np.empty_like(A)
    S[0] = A[0]
    for i in range(1, A.shape[0]):
        S[i] = S[i - 1] + A[i]
    return S


@inputs("prefix_rows")
def _(n):
    return (rng(12).standard_normal((n, 16)),)


@program("slices", (16, 64))
def floyd_warshall(D):
    D = D.copy()
    for k in range(D.shape[0]):
        D = np.minimum(D, D[:, k:k + 1] + D[k:k + 1, :])
    return D


@inputs("floyd_warshall")
def _(n):
    d = rng(13).uniform(1.0, 10.0, (n, n))
    np.fill_diagonal(d, 0.0)
    return (d,)


@program("slices", (16, 256))
def knapsack(weights, values, capacity):
    best = np.zeros(capacity + 1)
    for i in range(weights.shape[0]):
        w = weights[i]
        best[w:] = np.maximum(best[w:], best[:capacity + 1 - w] + values[i])
    return best[capacity]


@inputs("knapsack")
def _(n):
    r = rng(14)
    return r.integers(1, 20, n), r.uniform(1.0, 10.0, n), 4 * n


@program("slices", (32, 1024))
def autocorrelation(x, max_lag):
    n = x.shape[0]
    x = x - x.mean()
    denom = (x * x).sum()
    ac = np.empty(max_lag)
    for lag in range(max_lag):
        ac[lag] = (x[:n - lag] * x[lag:]).sum() / denom
    return ac


@inputs("autocorrelation")
def _(n):
    return rng(38).standard_normal(n), 16


# --- sweeps over single elements -----------------------------------------------------------------------------


@program("elements", (8, 48))
def gauss_seidel(u, f, sweeps):
    n = u.shape[0]
    for _ in range(sweeps):
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                u[i, j] = 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1] - f[i, j])
    return u


@inputs("gauss_seidel")
def _(n):
    return np.zeros((n, n)), rng(15).standard_normal((n, n)) * 0.01, 4


@program("elements", (16, 512))
def sor_1d(u, f, omega, sweeps):
    for _ in range(sweeps):
        for i in range(1, u.shape[0] - 1):
            u[i] = (1 - omega) * u[i] + omega * 0.5 * (u[i - 1] + u[i + 1] - f[i])
    return u


@inputs("sor_1d")
def _(n):
    return np.zeros(n), rng(16).standard_normal(n) * 0.01, 1.5, 8


@program("elements", (16, 128))
def edit_distance(a, b):
    n, m = a.shape[0], b.shape[0]
    d = np.zeros((n + 1, m + 1))
    d[:, 0] = np.arange(n + 1)
    d[0, :] = np.arange(m + 1)
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            cost = 0.0 if a[i - 1] == b[j - 1] else 1.0
            d[i, j] = min(d[i - 1, j] + 1.0, d[i, j - 1] + 1.0, d[i - 1, j - 1] + cost)
    return d[n, m]


@inputs("edit_distance")
def _(n):
    r = rng(17)
    return r.integers(0, 4, n), r.integers(0, 4, n)


@program("elements", (64, 4096))
def running_mean(x):
    out = np.empty_like(x)
    acc = 0.0
    for i in range(x.shape[0]):
        acc += x[i]
        out[i] = acc / (i + 1)
    return out


@inputs("running_mean")
def _(n):
    return (rng(18).standard_normal(n),)


@program("elements", (64, 4096))
def exp_moving_average(x, alpha):
    out = np.empty_like(x)
    m = x[0]
    for i in range(x.shape[0]):
        m = alpha * x[i] + (1 - alpha) * m
        out[i] = m
    return out


@inputs("exp_moving_average")
def _(n):
    return rng(19).standard_normal(n), 0.1


@program("elements", (64, 4096))
def running_max(x):
    best = -np.inf
    for v in x:
        if v > best:
            best = v
    return best


@inputs("running_max")
def _(n):
    return (rng(20).standard_normal(n),)


@program("elements", (64, 4096))
def histogram_loop(x, lo, hi, bins):
    h = np.zeros(bins, dtype=np.int64)
    width = (hi - lo) / bins
    for v in x:
        k = int((v - lo) / width)
        if 0 <= k < bins:
            h[k] += 1
    return h


@inputs("histogram_loop")
def _(n):
    return rng(21).standard_normal(n), -3.0, 3.0, 24


@program("elements", (64, 4096))
def trapezoid_loop(x, y):
    total = 0.0
    for i in range(1, x.shape[0]):
        total += 0.5 * (x[i] - x[i - 1]) * (y[i] + y[i - 1])
    return total


@inputs("trapezoid_loop")
def _(n):
    x = np.linspace(0.0, 3.0, n)
    return x, np.sin(x)


@program("elements", (32, 1024))
def welford_rows(X):
    mean = np.zeros(X.shape[1])
    m2 = np.zeros(X.shape[1])
    for k, row in enumerate(X, start=1):
        delta = row - mean
        mean = mean + delta / k
        m2 = m2 + delta * (row - mean)
    return mean, m2 / (X.shape[0] - 1)


@inputs("welford_rows")
def _(n):
    return (rng(22).standard_normal((n, 4)),)


@program("elements", (16, 256))
def insertion_sort(a):
    a = a.copy()
    for i in range(1, a.shape[0]):
        key = a[i]
        j = i - 1
        while j >= 0 and a[j] > key:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = key
    return a


@inputs("insertion_sort")
def _(n):
    return (rng(39).standard_normal(n),)


# --- time steps over whole arrays ---------------------------------------------------------------------------


@program("steps", (64, 4096))
def heat_1d(u, steps):
    for _ in range(steps):
        u[1:-1] = u[1:-1] + 0.1 * (u[2:] - 2 * u[1:-1] + u[:-2])
    return u


@inputs("heat_1d")
def _(n):
    return rng(23).standard_normal(n), 200


@program("steps", (64, 4096))
def wave_1d(u0, steps):
    u_prev = u0.copy()
    u = u0.copy()
    u_next = np.zeros_like(u0)
    for _ in range(steps):
        u_next[1:-1] = 2 * u[1:-1] - u_prev[1:-1] + 0.25 * (u[2:] - 2 * u[1:-1] + u[:-2])
        u_prev, u, u_next = u, u_next, u_prev
    return u


@inputs("wave_1d")
def _(n):
    return rng(24).standard_normal(n), 200


@program("steps", (16, 128))
def jacobi_2d(u, steps):
    for _ in range(steps):
        u[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
    return u


@inputs("jacobi_2d")
def _(n):
    u = np.zeros((n, n))
    u[0] = 1.0
    return u, 100


@program("steps", (16, 128))
def row_sweeps(u, sweeps):
    for _ in range(sweeps):
        for i in range(1, u.shape[0]):
            u[i] = 0.5 * u[i] + 0.5 * u[i - 1]
    return u


@inputs("row_sweeps")
def _(n):
    return rng(25).standard_normal((n, n)), 4


@program("steps", (16, 128))
def game_of_life(grid, steps):
    for _ in range(steps):
        n = (grid[:-2, :-2] + grid[:-2, 1:-1] + grid[:-2, 2:] + grid[1:-1, :-2] + grid[1:-1, 2:]
             + grid[2:, :-2] + grid[2:, 1:-1] + grid[2:, 2:])
        inner = grid[1:-1, 1:-1]
        grid[1:-1, 1:-1] = ((n == 3) | ((inner == 1) & (n == 2))).astype(grid.dtype)
    return grid


@inputs("game_of_life")
def _(n):
    return (rng(26).random((n, n)) < 0.3).astype(np.int64), 40


@program("steps", (16, 128))
def nbody(pos, vel, mass, steps):
    dt = 0.01
    for _ in range(steps):
        d = pos[None, :, :] - pos[:, None, :]
        r2 = (d * d).sum(axis=2) + 0.01
        acc = (d * (mass[None, :] / (r2 * np.sqrt(r2)))[:, :, None]).sum(axis=1)
        vel = vel + dt * acc
        pos = pos + dt * vel
    return pos, vel


@inputs("nbody")
def _(n):
    r = rng(27)
    return r.standard_normal((n, 2)), r.standard_normal((n, 2)) * 0.1, r.uniform(0.5, 1.5, n), 20


@program("steps", (64, 4096))
def particles_in_a_box(x, v, steps):
    dt = 0.01
    for _ in range(steps):
        x = x + dt * v
        hit = (x < 0.0) | (x > 1.0)
        v = np.where(hit, -v, v)
        x = np.clip(x, 0.0, 1.0)
    return x, v


@inputs("particles_in_a_box")
def _(n):
    r = rng(28)
    return r.random(n), r.standard_normal(n), 100


@program("steps", (64, 4096))
def rk4_lotka_volterra(x, y, steps):
    dt = 0.01

    def f(a, b):
        return 1.1 * a - 0.4 * a * b, 0.1 * a * b - 0.4 * b

    for _ in range(steps):
        k1x, k1y = f(x, y)
        k2x, k2y = f(x + 0.5 * dt * k1x, y + 0.5 * dt * k1y)
        k3x, k3y = f(x + 0.5 * dt * k2x, y + 0.5 * dt * k2y)
        k4x, k4y = f(x + dt * k3x, y + dt * k3y)
        x = x + dt / 6.0 * (k1x + 2 * k2x + 2 * k3x + k4x)
        y = y + dt / 6.0 * (k1y + 2 * k2y + 2 * k3y + k4y)
    return x, y


@inputs("rk4_lotka_volterra")
def _(n):
    r = rng(29)
    return r.uniform(5, 15, n), r.uniform(2, 8, n), 100


@program("steps", (64, 4096))
def leapfrog_oscillators(x, v, k, steps):
    dt = 0.01
    a = -k * x
    for _ in range(steps):
        v = v + 0.5 * dt * a
        x = x + dt * v
        a = -k * x
        v = v + 0.5 * dt * a
    return x, v


@inputs("leapfrog_oscillators")
def _(n):
    r = rng(30)
    return r.standard_normal(n), r.standard_normal(n), r.uniform(0.5, 2.0, n), 200


@program("steps", (16, 128))
def power_iteration(A, v, iters):
    for _ in range(iters):
        w = A @ v
        v = w / np.linalg.norm(w)
    return v @ (A @ v), v


@inputs("power_iteration")
def _(n):
    return spd(n, 31), np.ones(n), 50


@program("steps", (64, 2048))
def kmeans(X, C, iters):
    for _ in range(iters):
        d = ((X[:, None, :] - C[None, :, :]) ** 2).sum(axis=2)
        labels = d.argmin(axis=1)
        for k in range(C.shape[0]):
            members = X[labels == k]
            if members.shape[0] > 0:
                C[k] = members.mean(axis=0)
    return C


@inputs("kmeans")
def _(n):
    r = rng(32)
    return r.standard_normal((n, 2)), r.standard_normal((4, 2)), 8


@program("steps", (64, 2048))
def logistic_regression(X, y, iters):
    w = np.zeros(X.shape[1])
    for _ in range(iters):
        p = 1.0 / (1.0 + np.exp(-(X @ w)))
        w = w - 0.1 * (X.T @ (p - y)) / y.shape[0]
    return w


@inputs("logistic_regression")
def _(n):
    r = rng(33)
    X = r.standard_normal((n, 4))
    return X, (X @ np.array([1.0, -2.0, 0.5, 0.0]) > 0).astype(np.float64), 50


@program("steps", (64, 4096))
def lcg_random_walk(x, steps):
    state = np.arange(x.shape[0], dtype=np.int64)
    for _ in range(steps):
        state = (state * 1103515245 + 12345) % 2147483648
        x = x + np.where(state % 2 == 0, 1.0, -1.0)
    return x


@inputs("lcg_random_walk")
def _(n):
    return np.zeros(n), 100


# --- iterations to convergence -------------------------------------------------------------------------------


@program("iterate", (64, 4096))
def newton_sqrt(a):
    x = a.copy()
    while np.max(np.abs(x * x - a)) > 1e-10:
        x = 0.5 * (x + a / x)
    return x


@inputs("newton_sqrt")
def _(n):
    return (rng(34).uniform(1.0, 100.0, n),)


@program("iterate", (64, 4096))
def bisection_roots(c, lo, hi):
    lo = np.full_like(c, lo)
    hi = np.full_like(c, hi)
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        f = mid ** 3 - c
        lo = np.where(f < 0, mid, lo)
        hi = np.where(f < 0, hi, mid)
    return 0.5 * (lo + hi)


@inputs("bisection_roots")
def _(n):
    return rng(35).uniform(1.0, 50.0, n), 0.0, 4.0


@program("iterate", (64, 4096))
def escape_time(cr, ci, maxiter):
    zr = np.zeros_like(cr)
    zi = np.zeros_like(ci)
    count = np.zeros(cr.shape, dtype=np.int64)
    for _ in range(maxiter):
        inside = zr * zr + zi * zi <= 4.0
        zr, zi = np.where(inside, zr * zr - zi * zi + cr, zr), np.where(inside, 2 * zr * zi + ci, zi)
        count += inside
    return count


@inputs("escape_time")
def _(n):
    r = rng(36)
    return r.uniform(-2.0, 0.5, n), r.uniform(-1.2, 1.2, n), 50


@program("iterate", (64, 4096))
def fixed_point_cos(x):
    for _ in range(100):
        x_new = np.cos(x)
        if np.max(np.abs(x_new - x)) < 1e-12:
            return x_new
        x = x_new
    return x


@inputs("fixed_point_cos")
def _(n):
    return (rng(37).uniform(0.0, 1.0, n),)


# --- Python numbers alone ------------------------------------------------------------------------------------


@program("python", (1000, 100_000))
def counter(n):
    s = 0
    for i in range(n):
        s += i * i
    return s


@inputs("counter")
def _(n):
    return (n,)


def escape_scalar(cr, ci, maxiter):
    zr = zi = 0.0
    k = 0
    while k < maxiter and zr * zr + zi * zi <= 4.0:
        zr, zi = zr * zr - zi * zi + cr, 2.0 * zr * zi + ci
        k += 1
    return k


@program("python", (8, 48))
def mandelbrot_scalar(n):
    total = 0
    for i in range(n):
        for j in range(n):
            total += escape_scalar(-2.0 + 2.5 * i / n, -1.2 + 2.4 * j / n, 40)
    return total


@inputs("mandelbrot_scalar")
def _(n):
    return (n,)


@program("python", (100, 10_000))
def sir_scalar(steps):
    s, i, r = 0.99, 0.01, 0.0
    beta, gamma, dt = 0.3, 0.1, 0.1
    for _ in range(steps):
        new_inf = beta * s * i * dt
        new_rec = gamma * i * dt
        s, i, r = s - new_inf, i + new_inf - new_rec, r + new_rec
    return s, i, r


@inputs("sir_scalar")
def _(n):
    return (n,)


assert all(e["make"] is not None for e in CORPUS), [e["name"] for e in CORPUS if e["make"] is None]
