"""The CPU backend's benchmark corpus: realistic NumPy functions, each with a maker of its inputs at a given
number of elements, an optional numexpr form, and whether it is a chain of >= 3 elementwise ops (the
fusion goal's subject) or a single op / library-bound function (the >= 0.95x goal's)."""

import numpy as np

CORPUS = []


def bench(kind, numexpr=None):
    """Registers fn(make) with kind 'chain', 'single', 'library' or 'mixed' (chains with reductions or views)."""
    def register(fn):
        CORPUS.append({"name": fn.__name__, "fn": fn, "kind": kind, "numexpr": numexpr})
        return fn
    return register


def vec(n, k, seed=0, lo=None, hi=None):
    rng = np.random.default_rng(seed)
    if lo is not None:
        return tuple(rng.uniform(lo, hi, n) for _ in range(k))
    return tuple(rng.standard_normal(n) for _ in range(k))


def rows(n, width, k=1, seed=0):
    rng = np.random.default_rng(seed)
    r = max(1, n // width)
    return tuple(rng.standard_normal((r, width)) for _ in range(k))


# --- elementwise chains -------------------------------------------------------------------------------------


@bench("chain", "a * 2.0 + b")
def axpy(a, b):
    return a * 2.0 + b


@bench("chain", "(a * 2.0 + b) * (a - b) / (b * b + 1.0)")
def poly_chain(a, b):
    return (a * 2.0 + b) * (a - b) / (b * b + 1.0)


@bench("chain", "0.5 * x * (1.0 + tanh(0.7978845608 * (x + 0.044715 * x * x * x)))")
def gelu(x):
    return 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))


@bench("chain", "x / (1.0 + exp(-x))")
def silu(x):
    return x / (1.0 + np.exp(-x))


@bench("chain", "where(x > 0, x, 0.01 * x) * 2.0 - 1.0")
def leaky_affine(x):
    return np.maximum(x, 0.01 * x) * 2.0 - 1.0


@bench("chain")
def black_scholes(s, k, t):
    r, v = 0.02, 0.3
    sq = np.sqrt(t)
    d1 = (np.log(s / k) + (r + 0.5 * v * v) * t) / (v * sq)
    d2 = d1 - v * sq
    nd1 = 0.5 * (1.0 + np.tanh(0.7978845608 * d1))
    nd2 = 0.5 * (1.0 + np.tanh(0.7978845608 * d2))
    return s * nd1 - k * np.exp(-r * t) * nd2


@bench("chain")
def haversine(lat1, lon1, lat2, lon2):
    dlat = lat2 - lat1
    dlon = lon2 - lon1
    a = np.sin(dlat * 0.5) ** 2 + np.cos(lat1) * np.cos(lat2) * np.sin(dlon * 0.5) ** 2
    return 12742.0 * np.arcsin(np.sqrt(a))


@bench("chain", "sqrt(x * x + y * y + z * z)")
def norm3(x, y, z):
    return np.sqrt(x * x + y * y + z * z)


@bench("chain")
def adam_update(p, g, m, v):
    m2 = 0.9 * m + 0.1 * g
    v2 = 0.999 * v + 0.001 * g * g
    mh = m2 / (1.0 - 0.9 ** 10)
    vh = v2 / (1.0 - 0.999 ** 10)
    return p - 0.001 * mh / (np.sqrt(vh) + 1e-8), m2, v2


@bench("chain", "exp(-(x * x + y * y) / 2.0) * cos(3.0 * x) * sin(2.0 * y)")
def gabor(x, y):
    return np.exp(-(x * x + y * y) / 2.0) * np.cos(3.0 * x) * np.sin(2.0 * y)


@bench("chain")
def mandelbrot_step(zr, zi, cr, ci):
    zr2 = zr * zr - zi * zi + cr
    zi2 = 2.0 * zr * zi + ci
    return zr2, zi2, zr2 * zr2 + zi2 * zi2 < 4.0


@bench("chain", "where(x < lo, lo, where(x > hi, hi, x)) * scale + shift")
def clip_scale(x):
    return np.minimum(np.maximum(x, -1.0), 1.0) * 3.0 + 0.5


@bench("chain", "log1p(exp(x)) - 0.5 * x")
def softplus_center(x):
    return np.log1p(np.exp(x)) - 0.5 * x


@bench("chain")
def float32_chain(a, b):
    return (a * np.float32(1.5) + b) * (a - b) + np.float32(0.25)


# --- with reductions or views: fused where elementwise, NumPy elsewhere ---------------------------------


@bench("mixed")
def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@bench("mixed")
def layernorm(x):
    mu = x.mean(axis=-1, keepdims=True)
    d = x - mu
    var = (d * d).mean(axis=-1, keepdims=True)
    return d / np.sqrt(var + 1e-5) * 1.5 + 0.1


@bench("mixed")
def logistic_step(w, x, y):
    p = 1.0 / (1.0 + np.exp(-(x @ w)))
    return w - 0.1 * (x.T @ (p - y)) / y.shape[0]


@bench("mixed")
def stencil_2d(u):
    return u[1:-1, 1:-1] + 0.1 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4.0 * u[1:-1, 1:-1])


@bench("mixed")
def stencil_3d(u):
    c = u[1:-1, 1:-1, 1:-1]
    return c + 0.05 * (u[:-2, 1:-1, 1:-1] + u[2:, 1:-1, 1:-1] + u[1:-1, :-2, 1:-1] + u[1:-1, 2:, 1:-1]
                       + u[1:-1, 1:-1, :-2] + u[1:-1, 1:-1, 2:] - 6.0 * c)


@bench("mixed")
def kmeans_step(x, c):
    d = (x * x).sum(axis=1)[:, None] - 2.0 * (x @ c.T) + (c * c).sum(axis=1)[None, :]
    return d.argmin(axis=1)


@bench("mixed")
def nbody_step(px, py, vx, vy, m):
    dx = px[None, :] - px[:, None]
    dy = py[None, :] - py[:, None]
    r2 = dx * dx + dy * dy + 0.01
    inv = m[None, :] / (r2 * np.sqrt(r2))
    ax = (dx * inv).sum(axis=1)
    ay = (dy * inv).sum(axis=1)
    return px + 0.01 * (vx + 0.01 * ax), py + 0.01 * (vy + 0.01 * ay)


# --- single ops and library calls -----------------------------------------------------------------------


@bench("single", "a + b")
def single_add(a, b):
    return a + b


@bench("single", "exp(a)")
def single_exp(a):
    return np.exp(a)


@bench("library")
def matmul_bias(a, b):
    return a @ b + 1.0


@bench("library")
def attention(q, k, v):
    s = q @ k.T / np.sqrt(q.shape[-1])
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)) @ v


def inputs(name, n, seed=0):
    """The inputs of corpus function ``name`` with about ``n`` elements in its largest arrays."""
    rng = np.random.default_rng(seed)
    if name in ("axpy", "poly_chain", "single_add"):
        return vec(n, 2, seed)
    if name in ("gelu", "silu", "leaky_affine", "clip_scale", "softplus_center", "single_exp"):
        return vec(n, 1, seed)
    if name == "black_scholes":
        return vec(n, 1, seed, 50.0, 150.0) + vec(n, 1, seed + 1, 50.0, 150.0) + vec(n, 1, seed + 2, 0.1, 2.0)
    if name == "haversine":
        return vec(n, 4, seed, -1.5, 1.5)
    if name in ("norm3",):
        return vec(n, 3, seed)
    if name == "adam_update":
        p, g, m = vec(n, 3, seed)
        return p, g, m, np.abs(vec(n, 1, seed + 3)[0])
    if name == "gabor":
        return vec(n, 2, seed)
    if name == "mandelbrot_step":
        return vec(n, 4, seed, -1.0, 1.0)
    if name == "float32_chain":
        return tuple(v.astype(np.float32) for v in vec(n, 2, seed))
    if name in ("softmax", "layernorm"):
        return rows(n, 1024, 1, seed)
    if name == "logistic_step":
        d = 64
        x = rng.standard_normal((max(1, n // d), d))
        return rng.standard_normal(d), x, (rng.random(x.shape[0]) > 0.5).astype(np.float64)
    if name == "stencil_2d":
        s = max(4, int(n ** 0.5))
        return (rng.standard_normal((s, s)),)
    if name == "stencil_3d":
        s = max(4, round(n ** (1 / 3)))
        return (rng.standard_normal((s, s, s)),)
    if name == "kmeans_step":
        d = 16
        return rng.standard_normal((max(1, n // d), d)), rng.standard_normal((8, d))
    if name == "nbody_step":
        b = max(2, int(n ** 0.5))
        return tuple(rng.standard_normal(b) for _ in range(4)) + (rng.uniform(0.5, 1.5, b),)
    if name == "matmul_bias":
        s = max(2, int(n ** 0.5))
        return rng.standard_normal((s, s)), rng.standard_normal((s, s))
    if name == "attention":
        t, d = max(2, int(n ** 0.5)), 64
        return tuple(rng.standard_normal((t, d)) for _ in range(3))
    raise KeyError(name)
