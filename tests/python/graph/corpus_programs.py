"""A corpus of realistic NumPy programs (issue 20), written the way a user writes them: plain module-level
functions with loops over time steps, in-place slice stores, helpers, small classes, dicts of parameters, prints.

Each program is registered in ``PROGRAMS`` with its category, whether it prints, and an argument builder:
``build(v)`` gives the arguments of variant ``v`` - 0 the program's own, 1 a varied set of the same types (other
values, other lengths or shapes where the program allows, other step counts), so that a guard missing in a
translation shows. No program draws random numbers itself (the builders do, seeded), every result is
deterministic, and each call is cheap in plain NumPy (arrays of at most a few thousand elements).

    from corpus_programs import PROGRAMS
    for p in PROGRAMS:
        p.fn(*p.build(0))

The thirty programs of corpus_programs_wild.py (issue 36: written as people write them) are added to
``PROGRAMS`` at the end of this module.

Used by test_corpus.py (the differential check, counts pinned) and corpus_report.py (a table of what the
translator does with each)."""

import dataclasses
import math

import numpy as np

# ---------------------------------------------------------------------------------------------------------------
# Time-stepped simulations
# ---------------------------------------------------------------------------------------------------------------


def heat_1d(u, alpha, steps):
    """Explicit heat equation; the rod's interior is updated in place, its ends held."""
    for t in range(steps):
        u[1:-1] = u[1:-1] + alpha * (u[2:] - 2 * u[1:-1] + u[:-2])
    return u


def heat_2d(u0, alpha, steps):
    u = u0.copy()
    for _ in range(steps):
        lap = u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:] + u[1:-1, :-2] - 4.0 * u[1:-1, 1:-1]
        u[1:-1, 1:-1] += alpha * lap
    return u, u.mean()


def wave_1d(u0, c, steps):
    """Leapfrog in time: three levels, the newest made each step and the older two swapped."""
    c2 = c * c
    u_prev = u0.copy()
    u = u0.copy()
    for _ in range(steps):
        u_next = np.empty_like(u)
        u_next[1:-1] = 2.0 * u[1:-1] - u_prev[1:-1] + c2 * (u[2:] - 2.0 * u[1:-1] + u[:-2])
        u_next[0] = 0.0
        u_next[-1] = 0.0
        u_prev, u = u, u_next
    return u


def advection_upwind(q, courant, steps):
    for _ in range(steps):
        q = q - courant * (q - np.roll(q, 1))
    return q


def game_of_life(board, steps):
    for _ in range(steps):
        n = sum(np.roll(np.roll(board, dy, axis=0), dx, axis=1)
                for dy in (-1, 0, 1) for dx in (-1, 0, 1) if (dy, dx) != (0, 0))
        board = ((n == 3) | ((board == 1) & (n == 2))).astype(board.dtype)
    return board, int(board.sum())


def jacobi_relaxation(u0, tol, max_iter):
    u = u0.copy()
    err = tol + 1.0
    it = 0
    while err > tol and it < max_iter:
        new = u.copy()
        new[1:-1, 1:-1] = 0.25 * (u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:] + u[1:-1, :-2])
        err = np.abs(new - u).max()
        u = new
        it += 1
    return u, it


def gauss_seidel(A, b, sweeps):
    n = len(b)
    x = np.zeros_like(b)
    for _ in range(sweeps):
        for i in range(n):
            s = A[i, :i] @ x[:i] + A[i, i + 1:] @ x[i + 1:]
            x[i] = (b[i] - s) / A[i, i]
    return x, np.linalg.norm(A @ x - b)


def _accelerations(pos, mass, soft):
    d = pos[None, :, :] - pos[:, None, :]
    r2 = (d ** 2).sum(axis=-1) + soft
    inv = r2 ** -1.5
    return (d * (mass[None, :, None] * inv[:, :, None])).sum(axis=1)


def nbody_leapfrog(pos, vel, mass, dt, steps):
    pos = pos.copy()
    vel = vel.copy()
    acc = _accelerations(pos, mass, 0.01)
    for _ in range(steps):
        vel += 0.5 * dt * acc
        pos += dt * vel
        acc = _accelerations(pos, mass, 0.01)
        vel += 0.5 * dt * acc
    kinetic = 0.5 * (mass * (vel ** 2).sum(axis=1)).sum()
    return pos, vel, kinetic


def logistic_map(r, x0, steps):
    x = np.full_like(r, x0)
    for _ in range(steps):
        x = r * x * (1.0 - x)
    return x


def lotka_volterra(prey, pred, params, dt, steps):
    a, b, c, d = params
    x, y = prey.copy(), pred.copy()
    history = np.empty((steps, 2))
    for t in range(steps):
        dx = a * x - b * x * y
        dy = d * x * y - c * y
        x = x + dt * dx
        y = y + dt * dy
        history[t, 0] = x.sum()
        history[t, 1] = y.sum()
    return x, y, history


def sir_model(s, i, beta, gamma, dt, steps):
    r = np.zeros_like(s)
    infected = []
    for _ in range(steps):
        new_inf = beta * s * i * dt
        new_rec = gamma * i * dt
        s = s - new_inf
        i = i + new_inf - new_rec
        r = r + new_rec
        infected.append(i.max())
    return s, i, r, np.array(infected)


def random_walk_reflect(noise, drift):
    """Walkers in [-1, 1], reflected at the walls; the noise is drawn by the caller."""
    x = np.zeros(noise.shape[1])
    path = np.empty_like(noise)
    for t in range(noise.shape[0]):
        x = x + drift + noise[t]
        x = np.where(x > 1.0, 2.0 - x, x)
        x = np.where(x < -1.0, -2.0 - x, x)
        path[t] = x
    return path, path.std(axis=0)


def mandelbrot(c, iters):
    z = np.zeros_like(c)
    count = np.zeros(c.shape, dtype=np.int64)
    for _ in range(iters):
        m = np.abs(z) <= 2.0
        z[m] = z[m] ** 2 + c[m]
        count[m] += 1
    return count


def shallow_water_1d(h, u, g, dt, dx, steps):
    """Lax-Friedrichs on a periodic channel."""
    hu = h * u
    for _ in range(steps):
        f1 = hu
        f2 = hu * hu / h + 0.5 * g * h * h
        h = 0.5 * (np.roll(h, 1) + np.roll(h, -1)) - dt / (2 * dx) * (np.roll(f1, -1) - np.roll(f1, 1))
        hu = 0.5 * (np.roll(hu, 1) + np.roll(hu, -1)) - dt / (2 * dx) * (np.roll(f2, -1) - np.roll(f2, 1))
    return h, hu / h


def burgers(u0, nu, dt, dx, steps):
    u = u0.copy()
    for _ in range(steps):
        un = u.copy()
        u[1:-1] = (un[1:-1] - dt / dx * un[1:-1] * (un[1:-1] - un[:-2])
                   + nu * dt / dx ** 2 * (un[2:] - 2 * un[1:-1] + un[:-2]))
        u[0] = u[-2]
        u[-1] = u[1]
    return u


def rule30(cells, steps):
    rows = [cells]
    for _ in range(steps):
        left = np.roll(cells, 1)
        right = np.roll(cells, -1)
        cells = left ^ (cells | right)
        rows.append(cells)
    return np.stack(rows)


def ising_checkerboard(spins, uniforms, beta):
    """Metropolis sweeps over the two sublattices; the uniforms are drawn by the caller, one set per half sweep."""
    s = spins.copy()
    ii, jj = np.indices(s.shape)
    masks = [(ii + jj) % 2 == 0, (ii + jj) % 2 == 1]
    for t in range(uniforms.shape[0]):
        for parity in range(2):
            nb = np.roll(s, 1, 0) + np.roll(s, -1, 0) + np.roll(s, 1, 1) + np.roll(s, -1, 1)
            d_e = 2.0 * s * nb
            flip = (uniforms[t, parity] < np.exp(-beta * d_e)) & masks[parity]
            s = np.where(flip, -s, s)
    return s, s.mean()


def damped_oscillators(x, v, k, damping, dt, steps):
    energy = np.empty(steps)
    for t in range(steps):
        a = -k * x - damping * v
        v = v + dt * a
        x = x + dt * v
        energy[t] = 0.5 * (v @ v) + 0.5 * (k * x) @ x
    return x, v, energy


# ---------------------------------------------------------------------------------------------------------------
# Linear algebra
# ---------------------------------------------------------------------------------------------------------------


def power_iteration(A, v, k):
    for _ in range(k):
        v = A @ v
        v = v / np.linalg.norm(v)
    return v, v @ A @ v


def conjugate_gradient(A, b, iters):
    x = np.zeros_like(b)
    r = b - A @ x
    p = r.copy()
    rs_old = r @ r
    for _ in range(iters):
        Ap = A @ p
        alpha = rs_old / (p @ Ap)
        x = x + alpha * p
        r = r - alpha * Ap
        rs_new = r @ r
        p = r + (rs_new / rs_old) * p
        rs_old = rs_new
    return x, np.sqrt(rs_old)


def least_squares_normal(X, y, ridge):
    d = X.shape[1]
    w = np.linalg.solve(X.T @ X + ridge * np.eye(d), X.T @ y)
    residual = y - X @ w
    return w, (residual ** 2).mean()


def gram_schmidt(A):
    n = A.shape[1]
    Q = np.zeros_like(A)
    R = np.zeros((n, n))
    for j in range(n):
        v = A[:, j].copy()
        for i in range(j):
            R[i, j] = Q[:, i] @ A[:, j]
            v -= R[i, j] * Q[:, i]
        R[j, j] = np.linalg.norm(v)
        Q[:, j] = v / R[j, j]
    return Q, R


def cholesky_solve(A, b):
    L = np.linalg.cholesky(A)
    y = np.linalg.solve(L, b)
    x = np.linalg.solve(L.T, y)
    return x, np.abs(A @ x - b).max()


def pca(X, k):
    Xc = X - X.mean(axis=0)
    C = np.cov(Xc, rowvar=False)
    w, V = np.linalg.eigh(C)
    order = np.argsort(w)[::-1][:k]
    return Xc @ V[:, order], w[order] / w.sum()


def triangular_parts(A):
    lower = np.tril(A, -1)
    upper = np.triu(A, 1)
    diag = np.diag(np.diag(A))
    return lower @ upper + diag, np.trace(A), lower.sum() - upper.sum()


def lu_doolittle(A):
    """LU without pivoting, in place on a copy (the matrix is diagonally dominant)."""
    A = A.copy()
    n = A.shape[0]
    for k in range(n - 1):
        A[k + 1:, k] /= A[k, k]
        A[k + 1:, k + 1:] -= np.outer(A[k + 1:, k], A[k, k + 1:])
    L = np.tril(A, -1) + np.eye(n)
    U = np.triu(A)
    return L, U


def expm_taylor(A, terms):
    result = np.eye(A.shape[0])
    term = np.eye(A.shape[0])
    for k in range(1, terms):
        term = term @ A / k
        result = result + term
    return result


def newton_schulz_inverse(A, iters):
    n = A.shape[0]
    X = A.T / (np.abs(A).sum(axis=0).max() * np.abs(A).sum(axis=1).max())
    two = 2.0 * np.eye(n)
    for _ in range(iters):
        X = X @ (two - A @ X)
    return X, np.abs(A @ X - np.eye(n)).max()


def polynomial_fit(x, y, deg):
    V = np.vander(x, deg + 1)
    coef = np.linalg.lstsq(V, y, rcond=None)[0]
    return coef, np.polyval(coef, x)


# ---------------------------------------------------------------------------------------------------------------
# Machine learning
# ---------------------------------------------------------------------------------------------------------------


def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def logistic_regression_gd(X, y, lr, epochs):
    n, d = X.shape
    w = np.zeros(d)
    b = 0.0
    for _ in range(epochs):
        p = _sigmoid(X @ w + b)
        err = p - y
        w = w - lr * (X.T @ err) / n
        b = b - lr * err.mean()
    p = _sigmoid(X @ w + b)
    loss = -(y * np.log(p) + (1 - y) * np.log(1 - p)).mean()
    return w, b, loss


def mlp_sgd_step(X, Y, W1, b1, W2, b2, lr):
    """One step of a two-layer MLP: forward, softmax cross-entropy, backward, SGD on the parameters in place."""
    n = X.shape[0]
    h_pre = X @ W1 + b1
    h = np.maximum(h_pre, 0.0)
    logits = h @ W2 + b2
    logits = logits - logits.max(axis=1, keepdims=True)
    p = np.exp(logits)
    p /= p.sum(axis=1, keepdims=True)
    loss = -np.log(p[np.arange(n), Y]).mean()
    d_logits = p.copy()
    d_logits[np.arange(n), Y] -= 1.0
    d_logits /= n
    dW2 = h.T @ d_logits
    db2 = d_logits.sum(axis=0)
    dh = d_logits @ W2.T
    dh[h_pre <= 0] = 0.0
    dW1 = X.T @ dh
    db1 = dh.sum(axis=0)
    W1 -= lr * dW1
    b1 -= lr * db1
    W2 -= lr * dW2
    b2 -= lr * db2
    return loss


def softmax_cross_entropy(logits, labels):
    m = logits.max(axis=1, keepdims=True)
    logp = logits - m - np.log(np.exp(logits - m).sum(axis=1, keepdims=True))
    n = logits.shape[0]
    loss = -logp[np.arange(n), labels].mean()
    grad = np.exp(logp)
    grad[np.arange(n), labels] -= 1.0
    return loss, grad / n


def kmeans(X, centers, iters):
    C = centers.copy()
    for _ in range(iters):
        d = ((X[:, None, :] - C[None, :, :]) ** 2).sum(axis=-1)
        labels = d.argmin(axis=1)
        for k in range(C.shape[0]):
            members = X[labels == k]
            if len(members) > 0:
                C[k] = members.mean(axis=0)
    return C, labels


def layer_norm(x, gamma, beta, eps):
    mu = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * gamma + beta


def causal_attention(q, k, v):
    T = q.shape[0]
    scores = q @ k.T / np.sqrt(q.shape[1])
    mask = np.triu(np.ones((T, T), dtype=bool), k=1)
    scores = np.where(mask, -np.inf, scores)
    scores = scores - scores.max(axis=1, keepdims=True)
    w = np.exp(scores)
    w = w / w.sum(axis=1, keepdims=True)
    return w @ v, w


def adam_quadratic(w0, target, lr, steps):
    """Adam on a quadratic bowl centred at ``target``."""
    b1, b2, eps = 0.9, 0.999, 1e-8
    w = w0.copy()
    m = np.zeros_like(w)
    v = np.zeros_like(w)
    for t in range(1, steps + 1):
        g = 2.0 * (w - target)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        m_hat = m / (1 - b1 ** t)
        v_hat = v / (1 - b2 ** t)
        w = w - lr * m_hat / (np.sqrt(v_hat) + eps)
    return w, ((w - target) ** 2).sum()


def batch_norm_train(x, gamma, beta, running_mean, running_var, momentum):
    mu = x.mean(axis=0)
    var = x.var(axis=0)
    x_hat = (x - mu) / np.sqrt(var + 1e-5)
    running_mean *= 1 - momentum
    running_mean += momentum * mu
    running_var *= 1 - momentum
    running_var += momentum * var
    return gamma * x_hat + beta


def one_hot_accuracy(labels, logits, num_classes):
    onehot = np.eye(num_classes)[labels]
    pred = logits.argmax(axis=1)
    acc = (pred == labels).mean()
    confusion = onehot.T @ np.eye(num_classes)[pred]
    return onehot, acc, confusion


def rnn_unrolled(x, h0, Wx, Wh, b):
    h = h0
    hs = []
    for t in range(x.shape[0]):
        h = np.tanh(x[t] @ Wx + h @ Wh + b)
        hs.append(h)
    return np.stack(hs), h


def minibatch_linear_sgd(X, y, lr, epochs, batch):
    n, d = X.shape
    w = np.zeros(d)
    for _ in range(epochs):
        for start in range(0, n, batch):
            xb = X[start:start + batch]
            yb = y[start:start + batch]
            grad = 2.0 * xb.T @ (xb @ w - yb) / len(yb)
            w -= lr * grad
    return w


def knn_classify(train, train_labels, test, k, num_classes):
    d = ((test[:, None, :] - train[None, :, :]) ** 2).sum(axis=-1)
    nearest = np.argsort(d, axis=1, kind="stable")[:, :k]
    votes = np.eye(num_classes)[train_labels[nearest]].sum(axis=1)
    return votes.argmax(axis=1)


def gelu_mlp_inference(x, W1, W2):
    h = x @ W1
    h = 0.5 * h * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (h + 0.044715 * h ** 3)))
    return h @ W2


# ---------------------------------------------------------------------------------------------------------------
# Signal and image processing
# ---------------------------------------------------------------------------------------------------------------


def conv1d_sliding(x, kernel):
    n, k = len(x), len(kernel)
    out = np.zeros(n - k + 1)
    for j in range(k):
        out += kernel[j] * x[j:j + n - k + 1]
    return out


def moving_average(x, w):
    c = np.cumsum(np.insert(x, 0, 0.0))
    return (c[w:] - c[:-w]) / w


def fir_filter(x, taps):
    y = np.zeros_like(x)
    for i, h in enumerate(taps):
        y[i:] += h * x[:len(x) - i]
    return y


def power_spectrum(x, fs):
    n = len(x)
    X = np.fft.rfft(x * np.hanning(n))
    p = np.abs(X) ** 2 / n
    freqs = np.fft.rfftfreq(n, 1.0 / fs)
    return freqs[p.argmax()], p


def blur_3x3(img):
    out = img.copy()
    acc = np.zeros_like(img[1:-1, 1:-1])
    for dy in (-1, 0, 1):
        for dx in (-1, 0, 1):
            acc += img[1 + dy:img.shape[0] - 1 + dy, 1 + dx:img.shape[1] - 1 + dx]
    out[1:-1, 1:-1] = acc / 9.0
    return out


def sobel_edges(img, threshold):
    gx = (img[:-2, 2:] + 2 * img[1:-1, 2:] + img[2:, 2:]) - (img[:-2, :-2] + 2 * img[1:-1, :-2] + img[2:, :-2])
    gy = (img[2:, :-2] + 2 * img[2:, 1:-1] + img[2:, 2:]) - (img[:-2, :-2] + 2 * img[:-2, 1:-1] + img[:-2, 2:])
    mag = np.hypot(gx, gy)
    return mag, mag > threshold


def histogram_equalize(img, bins):
    hist, _ = np.histogram(img.ravel(), bins=bins, range=(0.0, 1.0))
    cdf = hist.cumsum()
    cdf = cdf / cdf[-1]
    idx = np.clip((img * bins).astype(np.int64), 0, bins - 1)
    return cdf[idx]


def normalize_gamma(img, gamma):
    lo, hi = img.min(), img.max()
    n = (img - lo) / (hi - lo)
    out = n ** gamma
    return np.clip(out * 255.0, 0, 255).astype(np.uint8)


def bilinear_resample(img, out_h, out_w):
    h, w = img.shape
    rows = np.linspace(0, h - 1, out_h)
    cols = np.linspace(0, w - 1, out_w)
    r0 = np.floor(rows).astype(np.intp)
    c0 = np.floor(cols).astype(np.intp)
    r1 = np.minimum(r0 + 1, h - 1)
    c1 = np.minimum(c0 + 1, w - 1)
    fr = (rows - r0)[:, None]
    fc = (cols - c0)[None, :]
    top = img[r0[:, None], c0[None, :]] * (1 - fc) + img[r0[:, None], c1[None, :]] * fc
    bottom = img[r1[:, None], c0[None, :]] * (1 - fc) + img[r1[:, None], c1[None, :]] * fc
    return top * (1 - fr) + bottom * fr


def denoise_clip(x, thresh, lo, hi):
    smooth = x.copy()
    smooth[1:-1] = (x[:-2] + x[1:-1] + x[2:]) / 3.0
    spikes = np.abs(x - smooth) > thresh
    cleaned = np.where(spikes, smooth, x)
    return np.clip(cleaned, lo, hi), int(spikes.sum())


def autocorrelation(x, max_lag):
    x = x - x.mean()
    n = len(x)
    denom = (x * x).sum()
    ac = np.empty(max_lag)
    for lag in range(max_lag):
        ac[lag] = (x[:n - lag] * x[lag:]).sum() / denom
    return ac


def goertzel(x, k):
    """The power of one DFT bin by the Goertzel recurrence, a sample at a time."""
    n = len(x)
    coeff = 2.0 * np.cos(2.0 * np.pi * k / n)
    s_prev = 0.0
    s_prev2 = 0.0
    for sample in x:
        s = sample + coeff * s_prev - s_prev2
        s_prev2 = s_prev
        s_prev = s
    return s_prev2 ** 2 + s_prev ** 2 - coeff * s_prev * s_prev2


def peak_detect(x, min_height):
    is_peak = (x[1:-1] > x[:-2]) & (x[1:-1] >= x[2:]) & (x[1:-1] > min_height)
    idx = np.nonzero(is_peak)[0] + 1
    return idx, x[idx]


# ---------------------------------------------------------------------------------------------------------------
# Plain-Python-flavoured code around arrays
# ---------------------------------------------------------------------------------------------------------------


def weighted_sum_genexpr(ws, xs):
    total = sum(w * x for w, x in zip(ws, xs))
    return total, max(float(x.max()) for x in xs)


def sgd_dict_params(params, grads, lr):
    for name, p in params.items():
        p -= lr * grads[name]
    return {name: np.linalg.norm(p) for name, p in params.items()}


def dict_params_replace(params, grads, lr, decay):
    for name in params:
        params[name] = params[name] * (1.0 - decay) - lr * grads[name]
    return sorted(params)


def row_iteration(X):
    total = np.zeros(X.shape[1])
    count = 0
    for row in X:
        if row.sum() > 0:
            total += row * row
            count += 1
    return np.sqrt(total), count


def unpack_coordinates(pos):
    x, y, z = pos.T
    r = np.sqrt(x ** 2 + y ** 2 + z ** 2)
    a, b = pos[:2]
    return r, a @ b, np.arctan2(y, x)


class Particles:
    def __init__(self, pos, vel, mass):
        self.pos = pos.copy()
        self.vel = vel.copy()
        self.mass = mass

    def step(self, dt, gravity):
        self.vel[:, 1] -= gravity * dt
        self.pos += dt * self.vel
        below = self.pos[:, 1] < 0.0
        self.pos[below, 1] = -self.pos[below, 1]
        self.vel[below, 1] = -self.vel[below, 1]

    def energy(self, gravity):
        return (0.5 * self.mass * (self.vel ** 2).sum(axis=1) + self.mass * gravity * self.pos[:, 1]).sum()


def particles_class(pos, vel, mass, dt, steps):
    ps = Particles(pos, vel, mass)
    for _ in range(steps):
        ps.step(dt, 9.81)
    return ps.pos, ps.energy(9.81)


@dataclasses.dataclass
class Box:
    lo: np.ndarray
    hi: np.ndarray

    def contains(self, points):
        return np.all((points >= self.lo) & (points <= self.hi), axis=1)

    def volume(self):
        return float(np.prod(self.hi - self.lo))


def dataclass_box(points, margin):
    box = Box(points.min(axis=0) + margin, points.max(axis=0) - margin)
    inside = box.contains(points)
    return inside, inside.mean(), box.volume()


def _smooth(v):
    out = v.copy()
    out[1:-1] = 0.25 * v[:-2] + 0.5 * v[1:-1] + 0.25 * v[2:]
    return out


def helper_in_loop(x, steps):
    for _ in range(steps):
        x = _smooth(x)
    return x


def sqrt_of_shape(X):
    n = X.shape[0]
    scaled = X / math.sqrt(n)
    side = int(np.sqrt(X.size))
    return scaled, side, np.sqrt(X.shape[1])


def try_solve(A, b):
    try:
        x = np.linalg.solve(A, b)
        how = "solve"
    except np.linalg.LinAlgError:
        x = np.linalg.lstsq(A, b, rcond=None)[0]
        how = "lstsq"
    return x, how


def list_comprehension_stats(arrays):
    means = [a.mean() for a in arrays]
    longest = max(len(a) for a in arrays)
    padded = np.zeros((len(arrays), longest))
    for i, a in enumerate(arrays):
        padded[i, :len(a)] = a
    return np.array(means), padded


def keyword_defaults(x, *, scale=2.0, clip=None, center=True):
    if center:
        x = x - x.mean()
    x = x * scale
    if clip is not None:
        x = np.clip(x, -clip, clip)
    return x


def closure_factory(x, scales):
    def make_scaler(s):
        return lambda v: v * s + s

    fs = [make_scaler(s) for s in scales]
    out = x
    for f in fs:
        out = f(out)
    return out


def summary_string(x):
    return f"mean={x.mean():.4f} std={x.std():.4f} n={x.size}", x.argmax()


def running_stats_welford(samples):
    mean = np.zeros(samples.shape[1])
    m2 = np.zeros(samples.shape[1])
    for n, x in enumerate(samples, start=1):
        delta = x - mean
        mean += delta / n
        m2 += delta * (x - mean)
    return mean, m2 / (len(samples) - 1)


# ---------------------------------------------------------------------------------------------------------------
# Programs that print (counted separately)
# ---------------------------------------------------------------------------------------------------------------


def train_with_progress(X, y, lr, epochs):
    w = np.zeros(X.shape[1])
    for epoch in range(epochs):
        err = X @ w - y
        w = w - lr * X.T @ err / len(y)
        if epoch % 50 == 0:
            print(f"epoch {epoch}: loss {(err ** 2).mean():.6f}")
    return w


def simulate_and_log(u, alpha, steps):
    u = u.copy()
    for t in range(steps):
        u[1:-1] += alpha * (u[2:] - 2 * u[1:-1] + u[:-2])
    print("steps", steps, "max", u.max(), "min", u.min())
    return u


def print_summary_table(data):
    print("column   mean     std")
    for j in range(data.shape[1]):
        col = data[:, j]
        print(f"{j:6d} {col.mean():7.3f} {col.std():7.3f}")
    return data.mean(axis=0)


# ---------------------------------------------------------------------------------------------------------------
# Argument builders: build(v) for v = 0 (the program's own arguments) and 1 (varied): a tuple of positional
# arguments, or a Call with keyword arguments too
# ---------------------------------------------------------------------------------------------------------------


class Call:
    def __init__(self, *args, **kwargs):
        self.args = args
        self.kwargs = kwargs


def call_args(program, v):
    """``(args, kwargs)`` of ``program``'s variant ``v``."""
    built = program.build(v)
    if isinstance(built, Call):
        return built.args, built.kwargs
    return tuple(built), {}


def _rng(name, v):
    return np.random.default_rng([sum(map(ord, name)), v])


def _spd(rng, n):
    M = rng.standard_normal((n, n))
    return M @ M.T + n * np.eye(n)


def _b_heat_1d(v):
    rng = _rng("heat_1d", v)
    return rng.random((64, 81)[v]), (0.25, 0.2)[v], (200, 150)[v]


def _b_heat_2d(v):
    rng = _rng("heat_2d", v)
    n = (24, 31)[v]
    return rng.random((n, n + v)), (0.2, 0.15)[v], (60, 45)[v]


def _b_wave_1d(v):
    n = (80, 97)[v]
    xs = np.linspace(0.0, 1.0, n)
    return np.exp(-((xs - (0.5, 0.3)[v]) ** 2) / 0.01), (0.5, 0.4)[v], (300, 220)[v]


def _b_advection_upwind(v):
    n = (100, 128)[v]
    xs = np.linspace(0.0, 1.0, n, endpoint=False)
    return np.where(np.abs(xs - 0.3) < 0.1, 1.0, 0.0) + (0.0, 0.5)[v] * np.sin(2 * np.pi * xs), (0.4, 0.7)[v], \
        (400, 300)[v]


def _b_game_of_life(v):
    rng = _rng("game_of_life", v)
    n = (24, 30)[v]
    return (rng.random((n, n)) < 0.35).astype(np.int8), (20, 15)[v]


def _b_jacobi_relaxation(v):
    n = (20, 26)[v]
    u = np.zeros((n, n))
    u[0, :] = 1.0
    u[:, 0] = (0.0, 0.5)[v]
    return u, (1e-3, 5e-4)[v], (300, 400)[v]


def _b_gauss_seidel(v):
    rng = _rng("gauss_seidel", v)
    n = (12, 15)[v]
    return _spd(rng, n), rng.standard_normal(n), (10, 8)[v]


def _b_nbody_leapfrog(v):
    rng = _rng("nbody_leapfrog", v)
    n = (16, 21)[v]
    return rng.standard_normal((n, 3)), 0.1 * rng.standard_normal((n, 3)), rng.uniform(0.5, 1.5, n), \
        (0.01, 0.005)[v], (50, 40)[v]


def _b_logistic_map(v):
    n = (200, 257)[v]
    return np.linspace((2.5, 2.8)[v], 4.0, n), (0.5, 0.3)[v], (1000, 800)[v]


def _b_lotka_volterra(v):
    rng = _rng("lotka_volterra", v)
    n = (16, 25)[v]
    return rng.uniform(5, 15, n), rng.uniform(2, 8, n), ((1.1, 0.4, 0.4, 0.1), (1.0, 0.3, 0.5, 0.12))[v], \
        (0.01, 0.02)[v], (500, 300)[v]


def _b_sir_model(v):
    n = (30, 41)[v]
    i = np.linspace(0.001, 0.02, n)
    return 1.0 - i, i, (0.3, 0.5)[v], (0.1, 0.2)[v], (0.5, 0.25)[v], (300, 200)[v]


def _b_random_walk_reflect(v):
    rng = _rng("random_walk_reflect", v)
    return 0.2 * rng.standard_normal(((200, 150)[v], (32, 45)[v])), (0.01, -0.02)[v]


def _b_mandelbrot(v):
    n = (40, 51)[v]
    re = np.linspace(-2.0, (0.6, 0.8)[v], n)
    im = np.linspace(-1.2, 1.2, n + v)
    return re[None, :] + 1j * im[:, None], (30, 24)[v]


def _b_shallow_water_1d(v):
    n = (100, 120)[v]
    xs = np.linspace(0.0, 1.0, n, endpoint=False)
    return 1.0 + (0.1, 0.2)[v] * np.exp(-((xs - 0.5) ** 2) / 0.005), np.zeros(n), 9.81, (0.001, 0.0008)[v], \
        1.0 / n, (200, 150)[v]


def _b_burgers(v):
    n = (101, 81)[v]
    xs = np.linspace(0.0, 2.0, n)
    return np.where((xs > 0.5) & (xs < 1.0), 2.0, 1.0), (0.07, 0.05)[v], (0.002, 0.003)[v], 2.0 / (n - 1), \
        (300, 200)[v]


def _b_rule30(v):
    n = (64, 80)[v]
    cells = np.zeros(n, dtype=np.uint8)
    cells[n // 2 - v] = 1
    return cells, (100, 70)[v]


def _b_ising_checkerboard(v):
    rng = _rng("ising_checkerboard", v)
    n = (16, 20)[v]
    return np.where(rng.random((n, n)) < 0.5, -1.0, 1.0), rng.random(((20, 15)[v], 2, n, n)), (0.4, 0.6)[v]


def _b_damped_oscillators(v):
    rng = _rng("damped_oscillators", v)
    n = (20, 27)[v]
    return rng.standard_normal(n), np.zeros(n), rng.uniform(0.5, 2.0, n), (0.05, 0.1)[v], (0.01, 0.02)[v], \
        (500, 350)[v]


def _b_power_iteration(v):
    rng = _rng("power_iteration", v)
    n = (30, 37)[v]
    return _spd(rng, n), np.ones(n), (100, 80)[v]


def _b_conjugate_gradient(v):
    rng = _rng("conjugate_gradient", v)
    n = (30, 36)[v]
    return _spd(rng, n), rng.standard_normal(n), (25, 20)[v]


def _b_least_squares_normal(v):
    rng = _rng("least_squares_normal", v)
    n, d = (200, 150)[v], (8, 11)[v]
    X = rng.standard_normal((n, d))
    return X, X @ rng.standard_normal(d) + 0.1 * rng.standard_normal(n), (0.1, 1.0)[v]


def _b_gram_schmidt(v):
    rng = _rng("gram_schmidt", v)
    return (rng.standard_normal((20, 10)), rng.standard_normal((25, 13)))[v],


def _b_cholesky_solve(v):
    rng = _rng("cholesky_solve", v)
    n = (20, 27)[v]
    return _spd(rng, n), rng.standard_normal(n)


def _b_pca(v):
    rng = _rng("pca", v)
    n, d = (100, 130)[v], (6, 8)[v]
    return rng.standard_normal((n, d)) @ rng.standard_normal((d, d)), (2, 3)[v]


def _b_triangular_parts(v):
    rng = _rng("triangular_parts", v)
    n = (12, 17)[v]
    return rng.standard_normal((n, n)),


def _b_lu_doolittle(v):
    rng = _rng("lu_doolittle", v)
    n = (16, 21)[v]
    return rng.standard_normal((n, n)) + n * np.eye(n),


def _b_expm_taylor(v):
    rng = _rng("expm_taylor", v)
    n = (8, 11)[v]
    return 0.3 * rng.standard_normal((n, n)), (20, 15)[v]


def _b_newton_schulz_inverse(v):
    rng = _rng("newton_schulz_inverse", v)
    n = (12, 15)[v]
    return rng.standard_normal((n, n)) + n * np.eye(n), (30, 25)[v]


def _b_polynomial_fit(v):
    rng = _rng("polynomial_fit", v)
    n = (50, 73)[v]
    x = np.linspace(-1.0, 1.0, n)
    return x, np.sin(3 * x) + 0.05 * rng.standard_normal(n), (5, 4)[v]


def _b_logistic_regression_gd(v):
    rng = _rng("logistic_regression_gd", v)
    n, d = (100, 120)[v], (5, 7)[v]
    X = rng.standard_normal((n, d))
    y = (X @ rng.standard_normal(d) > 0).astype(np.float64)
    return X, y, (0.5, 0.2)[v], (200, 150)[v]


def _b_mlp_sgd_step(v):
    rng = _rng("mlp_sgd_step", v)
    n, d, h, c = (32, 40)[v], (10, 12)[v], (16, 20)[v], (4, 5)[v]
    return rng.standard_normal((n, d)), rng.integers(0, c, n), 0.3 * rng.standard_normal((d, h)), np.zeros(h), \
        0.3 * rng.standard_normal((h, c)), np.zeros(c), (0.1, 0.05)[v]


def _b_softmax_cross_entropy(v):
    rng = _rng("softmax_cross_entropy", v)
    n, c = (32, 45)[v], (10, 7)[v]
    return 3.0 * rng.standard_normal((n, c)), rng.integers(0, c, n)


def _b_kmeans(v):
    rng = _rng("kmeans", v)
    k = (4, 5)[v]
    means = 4.0 * rng.standard_normal((k, 2))
    X = (means[:, None, :] + rng.standard_normal((k, (50, 40)[v], 2))).reshape(-1, 2)
    return X, X[rng.choice(len(X), k, replace=False)], (10, 8)[v]


def _b_layer_norm(v):
    rng = _rng("layer_norm", v)
    n, d = (16, 9)[v], (32, 48)[v]
    return rng.standard_normal((n, d)), rng.uniform(0.5, 1.5, d), rng.standard_normal(d), (1e-5, 1e-3)[v]


def _b_causal_attention(v):
    rng = _rng("causal_attention", v)
    t, d = (16, 21)[v], (8, 12)[v]
    return rng.standard_normal((t, d)), rng.standard_normal((t, d)), rng.standard_normal((t, d))


def _b_adam_quadratic(v):
    rng = _rng("adam_quadratic", v)
    n = (50, 63)[v]
    return rng.standard_normal(n), rng.standard_normal(n), (0.05, 0.02)[v], (100, 150)[v]


def _b_batch_norm_train(v):
    rng = _rng("batch_norm_train", v)
    n, d = (32, 20)[v], (16, 24)[v]
    return rng.standard_normal((n, d)) * 2 + 1, np.ones(d), np.zeros(d), np.zeros(d), np.ones(d), (0.1, 0.01)[v]


def _b_one_hot_accuracy(v):
    rng = _rng("one_hot_accuracy", v)
    n, c = (40, 55)[v], (5, 8)[v]
    return rng.integers(0, c, n), rng.standard_normal((n, c)), c


def _b_rnn_unrolled(v):
    rng = _rng("rnn_unrolled", v)
    t, d, h = (50, 40)[v], (8, 6)[v], (16, 12)[v]
    return rng.standard_normal((t, d)), np.zeros(h), 0.3 * rng.standard_normal((d, h)), \
        0.3 * rng.standard_normal((h, h)), 0.1 * rng.standard_normal(h)


def _b_minibatch_linear_sgd(v):
    rng = _rng("minibatch_linear_sgd", v)
    n, d = (96, 100)[v], (6, 8)[v]
    X = rng.standard_normal((n, d))
    return X, X @ rng.standard_normal(d), (0.05, 0.02)[v], (5, 4)[v], (16, 24)[v]


def _b_knn_classify(v):
    rng = _rng("knn_classify", v)
    n, m, c = (60, 75)[v], (20, 15)[v], (3, 4)[v]
    train = rng.standard_normal((n, 2))
    return train, rng.integers(0, c, n), rng.standard_normal((m, 2)), (5, 3)[v], c


def _b_gelu_mlp_inference(v):
    rng = _rng("gelu_mlp_inference", v)
    n, d, h = (16, 24)[v], (12, 10)[v], (32, 40)[v]
    return rng.standard_normal((n, d)), 0.3 * rng.standard_normal((d, h)), 0.3 * rng.standard_normal((h, 3))


def _b_conv1d_sliding(v):
    rng = _rng("conv1d_sliding", v)
    return rng.standard_normal((500, 377)[v]), np.hanning((9, 13)[v])


def _b_moving_average(v):
    rng = _rng("moving_average", v)
    return np.cumsum(rng.standard_normal((1000, 731)[v])), (20, 7)[v]


def _b_fir_filter(v):
    rng = _rng("fir_filter", v)
    return rng.standard_normal((400, 513)[v]), np.sinc(np.linspace(-2, 2, (15, 21)[v])) / 4


def _b_power_spectrum(v):
    rng = _rng("power_spectrum", v)
    n, fs, f0 = (512, 600)[v], (100.0, 250.0)[v], (12.5, 40.0)[v]
    t = np.arange(n) / fs
    return np.sin(2 * np.pi * f0 * t) + 0.3 * rng.standard_normal(n), fs


def _b_blur_3x3(v):
    rng = _rng("blur_3x3", v)
    return rng.random(((32, 40)[v], (32, 27)[v])),


def _b_sobel_edges(v):
    rng = _rng("sobel_edges", v)
    n = (32, 45)[v]
    img = np.zeros((n, n))
    img[n // 4:3 * n // 4, n // 3:] = 1.0
    return img + 0.05 * rng.standard_normal((n, n)), (0.5, 1.0)[v]


def _b_histogram_equalize(v):
    rng = _rng("histogram_equalize", v)
    return rng.beta(2.0, 5.0, ((32, 32), (40, 28))[v]), (64, 32)[v]


def _b_normalize_gamma(v):
    rng = _rng("normalize_gamma", v)
    return rng.random(((32, 32), (20, 45))[v]) * 3 + 1, (2.2, 0.5)[v]


def _b_bilinear_resample(v):
    rng = _rng("bilinear_resample", v)
    return rng.random(((16, 16), (12, 20))[v]), (40, 25)[v], (30, 51)[v]


def _b_denoise_clip(v):
    rng = _rng("denoise_clip", v)
    n = (300, 411)[v]
    x = np.sin(np.linspace(0, 6, n))
    x[rng.integers(1, n - 1, 10)] += 3.0
    return x, (0.5, 0.8)[v], (-1.0, -0.5)[v], (1.0, 2.0)[v]


def _b_autocorrelation(v):
    rng = _rng("autocorrelation", v)
    return rng.standard_normal((300, 450)[v]).cumsum(), (40, 60)[v]


def _b_goertzel(v):
    n = (256, 300)[v]
    return np.cos(2 * np.pi * (10, 17)[v] * np.arange(n) / n), (10, 17)[v]


def _b_peak_detect(v):
    rng = _rng("peak_detect", v)
    n = (400, 333)[v]
    return np.sin(np.linspace(0, (20, 31)[v], n)) + 0.1 * rng.standard_normal(n), (0.5, 0.8)[v]


def _b_weighted_sum_genexpr(v):
    rng = _rng("weighted_sum_genexpr", v)
    k, n = (5, 7)[v], (16, 23)[v]
    return [float(w) for w in rng.random(k)], [rng.standard_normal(n) for _ in range(k)]


def _b_sgd_dict_params(v):
    rng = _rng("sgd_dict_params", v)
    shapes = ({"w1": (8, 16), "b1": (16,), "w2": (16, 4)}, {"w1": (6, 10), "b1": (10,), "w2": (10, 3), "b2": (3,)})[v]
    params = {k: rng.standard_normal(s) for k, s in shapes.items()}
    grads = {k: rng.standard_normal(s) for k, s in shapes.items()}
    return params, grads, (0.1, 0.05)[v]


def _b_dict_params_replace(v):
    params, grads, lr = _b_sgd_dict_params(v)
    return params, grads, lr, (0.01, 0.001)[v]


def _b_row_iteration(v):
    rng = _rng("row_iteration", v)
    return rng.standard_normal(((40, 6), (55, 9))[v]),


def _b_unpack_coordinates(v):
    rng = _rng("unpack_coordinates", v)
    return rng.standard_normal(((30, 50)[v], 3)),


def _b_particles_class(v):
    rng = _rng("particles_class", v)
    n = (20, 27)[v]
    return rng.uniform(0, 5, (n, 2)), rng.standard_normal((n, 2)), rng.uniform(0.5, 2.0, n), (0.01, 0.02)[v], \
        (100, 70)[v]


def _b_dataclass_box(v):
    rng = _rng("dataclass_box", v)
    return rng.standard_normal(((100, 3), (150, 2))[v]), (0.5, 0.2)[v]


def _b_helper_in_loop(v):
    rng = _rng("helper_in_loop", v)
    return rng.standard_normal((100, 143)[v]), (100, 60)[v]


def _b_sqrt_of_shape(v):
    rng = _rng("sqrt_of_shape", v)
    return rng.standard_normal(((16, 16), (25, 9))[v]),


def _b_try_solve(v):
    rng = _rng("try_solve", v)
    n = (8, 10)[v]
    A = rng.standard_normal((n, n))
    if v:
        A[-1] = A[0]  # singular: the except branch
    return A, rng.standard_normal(n)


def _b_list_comprehension_stats(v):
    rng = _rng("list_comprehension_stats", v)
    return [rng.standard_normal(n) for n in ((5, 9, 3, 7), (4, 11, 6))[v]],


def _b_keyword_defaults(v):
    rng = _rng("keyword_defaults", v)
    return Call(rng.standard_normal((50, 61)[v]), scale=(2.0, 0.5)[v], clip=(None, 1.0)[v])


def _b_closure_factory(v):
    rng = _rng("closure_factory", v)
    return rng.standard_normal((20, 33)[v]), ((0.5, 2.0, 1.5), (3.0, 0.25))[v]


def _b_summary_string(v):
    rng = _rng("summary_string", v)
    return rng.standard_normal((100, 77)[v]),


def _b_running_stats_welford(v):
    rng = _rng("running_stats_welford", v)
    return rng.standard_normal(((100, 4), (80, 6))[v]) + v,


def _b_train_with_progress(v):
    rng = _rng("train_with_progress", v)
    X = rng.standard_normal(((50, 4), (60, 5))[v])
    return X, X @ rng.standard_normal(X.shape[1]), (0.1, 0.05)[v], (200, 120)[v]


def _b_simulate_and_log(v):
    rng = _rng("simulate_and_log", v)
    return rng.random((50, 63)[v]), (0.25, 0.1)[v], (100, 80)[v]


def _b_print_summary_table(v):
    rng = _rng("print_summary_table", v)
    return rng.standard_normal(((20, 4), (30, 6))[v]),


# ---------------------------------------------------------------------------------------------------------------
# The registry
# ---------------------------------------------------------------------------------------------------------------

SIMULATION, LINALG, ML, SIGNAL, PYTHON = "simulation", "linalg", "ml", "signal", "python"
CATEGORIES = (SIMULATION, LINALG, ML, SIGNAL, PYTHON)


@dataclasses.dataclass(frozen=True)
class Program:
    name: str
    fn: object
    category: str
    build: object  # build(v) -> the argument tuple of variant v (0: the program's own, 1: varied)
    prints: bool = False  # prints (a "print/IO" program, counted separately)


def _program(fn, category, prints=False):
    return Program(fn.__name__, fn, category, globals()[f"_b_{fn.__name__}"], prints)


PROGRAMS = [
    _program(heat_1d, SIMULATION),
    _program(heat_2d, SIMULATION),
    _program(wave_1d, SIMULATION),
    _program(advection_upwind, SIMULATION),
    _program(game_of_life, SIMULATION),
    _program(jacobi_relaxation, SIMULATION),
    _program(gauss_seidel, SIMULATION),
    _program(nbody_leapfrog, SIMULATION),
    _program(logistic_map, SIMULATION),
    _program(lotka_volterra, SIMULATION),
    _program(sir_model, SIMULATION),
    _program(random_walk_reflect, SIMULATION),
    _program(mandelbrot, SIMULATION),
    _program(shallow_water_1d, SIMULATION),
    _program(burgers, SIMULATION),
    _program(rule30, SIMULATION),
    _program(ising_checkerboard, SIMULATION),
    _program(damped_oscillators, SIMULATION),
    _program(simulate_and_log, SIMULATION, prints=True),
    _program(power_iteration, LINALG),
    _program(conjugate_gradient, LINALG),
    _program(least_squares_normal, LINALG),
    _program(gram_schmidt, LINALG),
    _program(cholesky_solve, LINALG),
    _program(pca, LINALG),
    _program(triangular_parts, LINALG),
    _program(lu_doolittle, LINALG),
    _program(expm_taylor, LINALG),
    _program(newton_schulz_inverse, LINALG),
    _program(polynomial_fit, LINALG),
    _program(logistic_regression_gd, ML),
    _program(mlp_sgd_step, ML),
    _program(softmax_cross_entropy, ML),
    _program(kmeans, ML),
    _program(layer_norm, ML),
    _program(causal_attention, ML),
    _program(adam_quadratic, ML),
    _program(batch_norm_train, ML),
    _program(one_hot_accuracy, ML),
    _program(rnn_unrolled, ML),
    _program(minibatch_linear_sgd, ML),
    _program(knn_classify, ML),
    _program(gelu_mlp_inference, ML),
    _program(train_with_progress, ML, prints=True),
    _program(conv1d_sliding, SIGNAL),
    _program(moving_average, SIGNAL),
    _program(fir_filter, SIGNAL),
    _program(power_spectrum, SIGNAL),
    _program(blur_3x3, SIGNAL),
    _program(sobel_edges, SIGNAL),
    _program(histogram_equalize, SIGNAL),
    _program(normalize_gamma, SIGNAL),
    _program(bilinear_resample, SIGNAL),
    _program(denoise_clip, SIGNAL),
    _program(autocorrelation, SIGNAL),
    _program(goertzel, SIGNAL),
    _program(peak_detect, SIGNAL),
    _program(weighted_sum_genexpr, PYTHON),
    _program(sgd_dict_params, PYTHON),
    _program(dict_params_replace, PYTHON),
    _program(row_iteration, PYTHON),
    _program(unpack_coordinates, PYTHON),
    _program(particles_class, PYTHON),
    _program(dataclass_box, PYTHON),
    _program(helper_in_loop, PYTHON),
    _program(sqrt_of_shape, PYTHON),
    _program(try_solve, PYTHON),
    _program(list_comprehension_stats, PYTHON),
    _program(keyword_defaults, PYTHON),
    _program(closure_factory, PYTHON),
    _program(summary_string, PYTHON),
    _program(running_stats_welford, PYTHON),
    _program(print_summary_table, PYTHON, prints=True),
]

# The programs written as people write them (issue 36), defined in corpus_programs_wild.py (which imports nothing
# from here): added after this module's own.
import corpus_programs_wild  # noqa: E402

PROGRAMS += [Program(fn.__name__, fn, category, corpus_programs_wild.builder(fn))
             for fn, category in corpus_programs_wild.WILD]
assert all(p.category in CATEGORIES for p in PROGRAMS)

BY_NAME = {p.name: p for p in PROGRAMS}
assert len(BY_NAME) == len(PROGRAMS)
