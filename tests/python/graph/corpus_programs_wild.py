"""Programs written as people write them (issue 36): thirty more NumPy programs for the corpus of
corpus_programs.py, in the style of everyday scientific, data and ML code rather than shaped for the translator -
loops over slices and over rows, small helper functions and classes, dataclasses and dicts of parameters, lists
that get appended to, early ``break`` on a tolerance, generator expressions under ``sum``/``all``, ``try/except``
around numeric code, imports inside functions, boolean masks and mask updates, ``np.linalg``, ``np.pad``,
``np.interp``, ``np.convolve``, ``np.percentile``, ``np.searchsorted`` and the like.

As in corpus_programs.py every program is a deterministic function of its arguments (random numbers are drawn by
the builders, seeded) and each has a builder ``_b_<name>(v)``: v=0 the program's own arguments, v=1 a varied set
of the same types. ``WILD`` lists ``(function, category)``; corpus_programs.py imports this module at its end and
adds these programs to its ``PROGRAMS`` (this module imports nothing from it)."""

import dataclasses
import math

import numpy as np

SIMULATION, LINALG, ML, SIGNAL, PYTHON = "simulation", "linalg", "ml", "signal", "python"  # as corpus_programs


def _rng(name, v):
    return np.random.default_rng([sum(map(ord, name)), v, 36])


# ---------------------------------------------------------------------------------------------------------------
# Simulations
# ---------------------------------------------------------------------------------------------------------------


def heat_insulated_until_steady(u0, alpha, tol, max_steps):
    """Explicit heat equation with insulated ends, stepped until the largest change falls under ``tol``."""
    u = u0.astype(float).copy()
    history = []
    for step in range(max_steps):
        old = u.copy()
        u[1:-1] = old[1:-1] + alpha * (old[2:] - 2 * old[1:-1] + old[:-2])
        u[0] = u[1]
        u[-1] = u[-2]
        change = np.max(np.abs(u - old))
        if step % 10 == 0:
            history.append(change)
        if change < tol:
            break
    return u, step + 1, history


def _lj_forces(pos, box, rc):
    n = len(pos)
    forces = np.zeros_like(pos)
    energy = 0.0
    for i in range(n - 1):
        d = pos[i + 1:] - pos[i]
        d[d > box / 2] -= box
        d[d < -box / 2] += box
        r2 = (d ** 2).sum(axis=1)
        mask = r2 < rc * rc
        if not mask.any():
            continue
        inv6 = 1.0 / r2[mask] ** 3
        energy += np.sum(4.0 * (inv6 ** 2 - inv6))
        f = (24.0 * (2.0 * inv6 ** 2 - inv6) / r2[mask])[:, None] * d[mask]
        forces[i] -= f.sum(axis=0)
        forces[i + 1:][mask] += f
    return forces, energy


def periodic_lj_md(pos, vel, box, dt, steps):
    """Lennard-Jones particles in a periodic box (minimum image), velocity Verlet."""
    pos = pos.copy()
    vel = vel.copy()
    rc = 2.0
    forces, pot = _lj_forces(pos, box, rc)
    energies = []
    for step in range(steps):
        vel += 0.5 * dt * forces
        pos += dt * vel
        pos %= box
        forces, pot = _lj_forces(pos, box, rc)
        vel += 0.5 * dt * forces
        kin = 0.5 * np.sum(vel ** 2)
        energies.append(kin + pot)
    return pos, np.array(energies)


def monte_carlo_pi_batches(u, batch, tol):
    """Estimate pi from the caller's uniforms in batches; stop once the running estimate settles."""
    from math import pi

    estimates = []
    inside = 0
    total = 0
    for start in range(0, len(u), batch):
        chunk = u[start:start + batch]
        r2 = chunk[:, 0] ** 2 + chunk[:, 1] ** 2
        inside += int(np.count_nonzero(r2 <= 1.0))
        total += len(chunk)
        est = 4.0 * inside / total
        estimates.append(est)
        if len(estimates) > 3 and abs(estimates[-1] - estimates[-2]) < tol:
            break
    return estimates, abs(estimates[-1] - pi)


def _pendulum_rhs(state, params):
    theta, omega = state
    return np.array([omega, -params["g"] / params["L"] * np.sin(theta) - params["damping"] * omega])


def rk4_pendulum(theta0, omega0, params, dt, steps):
    state = np.array([theta0, omega0])
    traj = [state.copy()]
    for _ in range(steps):
        k1 = _pendulum_rhs(state, params)
        k2 = _pendulum_rhs(state + 0.5 * dt * k1, params)
        k3 = _pendulum_rhs(state + 0.5 * dt * k2, params)
        k4 = _pendulum_rhs(state + dt * k3, params)
        state = state + dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
        traj.append(state)
    traj = np.array(traj)
    energy = 0.5 * params["L"] ** 2 * traj[:, 1] ** 2 + params["g"] * params["L"] * (1 - np.cos(traj[:, 0]))
    return traj[-1], energy.max() - energy.min()


def seir_epidemic(betas, params, days, dt=0.25):
    """SEIR for several transmission rates at once (Euler sub-steps per day); the history kept in a dict."""
    s = np.full_like(betas, 1.0 - params["i0"])
    e = np.zeros_like(betas)
    i = np.full_like(betas, params["i0"])
    r = np.zeros_like(betas)
    history = {"S": [], "E": [], "I": [], "R": []}
    steps_per_day = int(round(1 / dt))
    for day in range(days):
        for _ in range(steps_per_day):
            infection = betas * s * i * dt
            onset = params["sigma"] * e * dt
            recovery = params["gamma"] * i * dt
            s = s - infection
            e = e + infection - onset
            i = i + onset - recovery
            r = r + recovery
        history["S"].append(s)
        history["E"].append(e)
        history["I"].append(i)
        history["R"].append(r)
    infected = np.array(history["I"])
    peak_day = infected.argmax(axis=0)
    return peak_day, infected.max(axis=0), {k: v[-1] for k, v in history.items()}


def traffic_nasch(pos, vel, rand, road_len, vmax, p_slow):
    """Nagel-Schreckenberg traffic on a ring road; the random slow-downs are drawn by the caller."""
    pos = pos.copy()
    vel = vel.copy()
    flow = []
    for t in range(rand.shape[0]):
        order = np.argsort(pos)
        pos = pos[order]
        vel = vel[order]
        gaps = (np.roll(pos, -1) - pos - 1) % road_len
        vel = np.minimum(vel + 1, vmax)
        vel = np.minimum(vel, gaps)
        slow = (rand[t] < p_slow) & (vel > 0)
        vel[slow] -= 1
        pos = (pos + vel) % road_len
        flow.append(vel.mean())
    return np.sort(pos), float(np.mean(flow))


def forest_fire(grid, u_grow, u_light, p_grow, p_light):
    EMPTY, TREE, FIRE = 0, 1, 2
    grid = grid.copy()
    h, w = grid.shape
    burned = []
    for t in range(len(u_grow)):
        padded = np.pad(grid, 1, mode="constant")
        neighbor_fire = np.zeros(grid.shape, dtype=bool)
        for dy, dx in [(-1, 0), (1, 0), (0, -1), (0, 1)]:
            neighbor_fire |= padded[1 + dy:1 + dy + h, 1 + dx:1 + dx + w] == FIRE
        new = grid.copy()
        new[grid == FIRE] = EMPTY
        catch = (grid == TREE) & (neighbor_fire | (u_light[t] < p_light))
        new[catch] = FIRE
        new[(grid == EMPTY) & (u_grow[t] < p_grow)] = TREE
        burned.append(int(catch.sum()))
        grid = new
    return grid, burned


# ---------------------------------------------------------------------------------------------------------------
# Numerical methods and linear algebra
# ---------------------------------------------------------------------------------------------------------------


def newton_system(x0, tol=1e-10, max_iter=50):
    """Newton's method for a circle meeting an exponential curve; a singular Jacobian falls back to a plain step."""
    def F(x):
        return np.array([x[0] ** 2 + x[1] ** 2 - 4.0, np.exp(x[0]) + x[1] - 1.0])

    def J(x):
        return np.array([[2 * x[0], 2 * x[1]], [np.exp(x[0]), 1.0]])

    x = np.asarray(x0, dtype=float)
    norms = []
    for it in range(max_iter):
        fx = F(x)
        norms.append(np.linalg.norm(fx))
        if norms[-1] < tol:
            break
        try:
            dx = np.linalg.solve(J(x), -fx)
        except np.linalg.LinAlgError:
            dx = -fx
        x = x + dx
    return x, it, norms


def _simpson(f, a, b, n):
    if n % 2:
        n += 1
    x = np.linspace(a, b, n + 1)
    y = f(x)
    h = (b - a) / n
    return h / 3 * (y[0] + y[-1] + 4 * y[1:-1:2].sum() + 2 * y[2:-1:2].sum())


def simpson_convergence(a, b, ns):
    """Composite Simpson against a fine reference; the errors per n and the observed order."""
    import math

    def f(x):
        return np.exp(-x ** 2) * np.cos(3 * x)

    reference = _simpson(f, a, b, 2048)
    errors = {}
    for n in ns:
        errors[n] = abs(_simpson(f, a, b, n) - reference)
    errs = np.array([errors[n] for n in ns])
    order = -np.diff(np.log(errs)) / np.diff(np.log(np.array(ns, dtype=float)))
    return errors, order, math.isclose(order[-1], 4.0, rel_tol=0.2)


def qr_eigenvalues(A, tol, max_iter):
    Ak = A.copy()
    for k in range(max_iter):
        Q, R = np.linalg.qr(Ak)
        Ak = R @ Q
        off = np.linalg.norm(np.tril(Ak, -1))
        if off < tol:
            break
    return np.sort(np.diag(Ak)), k + 1


def pca_explained(X, var_target):
    """PCA via the SVD: as many components as explain ``var_target`` of the variance, signs made deterministic."""
    Xc = X - X.mean(axis=0)
    U, S, Vt = np.linalg.svd(Xc, full_matrices=False)
    explained = S ** 2 / np.sum(S ** 2)
    cum = np.cumsum(explained)
    k = int(np.searchsorted(cum, var_target) + 1)
    Z = Xc @ Vt[:k].T
    signs = np.sign(Z[np.abs(Z).argmax(axis=0), range(k)])
    return Z * signs, k, explained[:k]


def ridge_cv(X, y, folds, lambdas):
    """Ridge regression's penalty chosen by cross-validation over the caller's folds (index arrays)."""
    scores = {}
    n, d = X.shape
    for lam in lambdas:
        errs = []
        for test_idx in folds:
            train = np.ones(n, dtype=bool)
            train[test_idx] = False
            Xt, yt = X[train], y[train]
            w = np.linalg.solve(Xt.T @ Xt + lam * np.eye(d), Xt.T @ yt)
            errs.append(np.mean((X[test_idx] @ w - y[test_idx]) ** 2))
        scores[lam] = sum(errs) / len(errs)
    best = min(scores, key=scores.get)
    return best, scores


def inverse_iteration(A, shift, x0, tol, max_iter):
    n = A.shape[0]
    M = A - shift * np.eye(n)
    x = x0 / np.linalg.norm(x0)
    lam = shift
    for it in range(1, max_iter + 1):
        y = np.linalg.solve(M, x)
        x_new = y / np.linalg.norm(y)
        if x_new @ x < 0:
            x_new = -x_new
        lam = x_new @ A @ x_new
        if np.linalg.norm(x_new - x) < tol:
            x = x_new
            break
        x = x_new
    return lam, x, it


# ---------------------------------------------------------------------------------------------------------------
# Machine learning
# ---------------------------------------------------------------------------------------------------------------


def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-np.clip(z, -30, 30)))


def logistic_minibatch(X, y, perms, batch_size, lr, tol):
    """Mini-batch logistic regression; the caller's permutations order each epoch; early stop on the loss."""
    n, d = X.shape
    w = np.zeros(d)
    b = 0.0
    losses = []
    for epoch, perm in enumerate(perms):
        for start in range(0, n, batch_size):
            idx = perm[start:start + batch_size]
            p = _sigmoid(X[idx] @ w + b)
            err = p - y[idx]
            w -= lr * X[idx].T @ err / len(idx)
            b -= lr * err.mean()
        p = _sigmoid(X @ w + b)
        eps = 1e-12
        loss = -np.mean(y * np.log(p + eps) + (1 - y) * np.log(1 - p + eps))
        losses.append(float(loss))
        if len(losses) > 1 and abs(losses[-2] - losses[-1]) < tol:
            break
    return w, b, losses


def knn_regress(X_train, y_train, X_query, k):
    preds = []
    for q in X_query:
        d = np.sqrt(((X_train - q) ** 2).sum(axis=1))
        nearest = np.argsort(d)[:k]
        w = 1.0 / (d[nearest] + 1e-9)
        preds.append(np.sum(w * y_train[nearest]) / np.sum(w))
    return np.array(preds)


class KMeansModel:
    def __init__(self, k, max_iter=20, tol=1e-6):
        self.k = k
        self.max_iter = max_iter
        self.tol = tol
        self.centers = None

    def fit(self, X, init_idx):
        self.centers = X[init_idx].copy()
        for it in range(self.max_iter):
            labels = self.predict(X)
            new = self.centers.copy()
            for j in range(self.k):
                members = X[labels == j]
                if len(members) > 0:
                    new[j] = members.mean(axis=0)
            shift = np.linalg.norm(new - self.centers)
            self.centers = new
            if shift < self.tol:
                break
        self.n_iter_ = it + 1
        return self

    def predict(self, X):
        d = ((X[:, None, :] - self.centers[None, :, :]) ** 2).sum(axis=2)
        return d.argmin(axis=1)

    def inertia(self, X):
        labels = self.predict(X)
        return float(((X - self.centers[labels]) ** 2).sum())


def kmeans_model_fit(X, init_idx, k):
    model = KMeansModel(k).fit(X, init_idx)
    return model.centers, model.n_iter_, model.inertia(X)


def perceptron_train(X, y, max_epochs):
    w = np.zeros(X.shape[1])
    b = 0.0
    mistakes_per_epoch = []
    for epoch in range(max_epochs):
        mistakes = 0
        for xi, yi in zip(X, y):
            if yi * (xi @ w + b) <= 0:
                w += yi * xi
                b += yi
                mistakes += 1
        mistakes_per_epoch.append(mistakes)
        if mistakes == 0:
            break
    return w, b, mistakes_per_epoch


def gaussian_nb(X_train, y_train, X_test):
    """Gaussian naive Bayes: per-class statistics grouped in a dict, log-likelihoods, the argmax class."""
    stats = {}
    for label in np.unique(y_train):
        rows = X_train[y_train == label]
        stats[int(label)] = (rows.mean(axis=0), rows.var(axis=0) + 1e-9, len(rows) / len(y_train))
    classes = sorted(stats)
    scores = np.empty((len(X_test), len(classes)))
    for j, c in enumerate(classes):
        mu, var, prior = stats[c]
        ll = -0.5 * np.sum(np.log(2 * np.pi * var) + (X_test - mu) ** 2 / var, axis=1)
        scores[:, j] = ll + np.log(prior)
    return np.array(classes)[scores.argmax(axis=1)], scores


@dataclasses.dataclass
class SGDConfig:
    lr: float = 0.01
    momentum: float = 0.9
    epochs: int = 100
    clip: float = 10.0


def linreg_momentum(X, y, config):
    """Linear regression by gradient descent with momentum and gradient clipping, its settings a dataclass."""
    w = np.zeros(X.shape[1])
    velocity = np.zeros_like(w)
    losses = []
    for epoch in range(config.epochs):
        resid = X @ w - y
        loss = 0.5 * np.mean(resid ** 2)
        if not math.isfinite(loss):
            break
        losses.append(loss)
        grad = X.T @ resid / len(y)
        norm = np.linalg.norm(grad)
        if norm > config.clip:
            grad = grad * (config.clip / norm)
        velocity = config.momentum * velocity - config.lr * grad
        w = w + velocity
    return w, losses[-1], len(losses)


def softmax_regression(X, y, n_classes, lr, epochs, weight_decay=1e-3):
    n, d = X.shape
    W = np.zeros((d, n_classes))
    Y = np.eye(n_classes)[y]
    for epoch in range(epochs):
        logits = X @ W
        logits -= logits.max(axis=1, keepdims=True)
        P = np.exp(logits)
        P /= P.sum(axis=1, keepdims=True)
        grad = X.T @ (P - Y) / n + weight_decay * W
        W -= lr * grad
    acc = np.mean(np.argmax(X @ W, axis=1) == y)
    return W, acc


# ---------------------------------------------------------------------------------------------------------------
# Signals and images
# ---------------------------------------------------------------------------------------------------------------


def smooth_find_peaks(x, sigma, min_distance, rel_height):
    """Gaussian smoothing by np.convolve, local maxima, then the highest peaks at least ``min_distance`` apart."""
    half = int(3 * sigma)
    t = np.arange(-half, half + 1)
    kernel = np.exp(-0.5 * (t / sigma) ** 2)
    kernel /= kernel.sum()
    s = np.convolve(x, kernel, mode="same")
    cand = np.where((s[1:-1] > s[:-2]) & (s[1:-1] > s[2:]))[0] + 1
    cand = cand[s[cand] > rel_height * s.max()]
    order = cand[np.argsort(s[cand])[::-1]]
    peaks = []
    for c in order:
        if all(abs(c - p) >= min_distance for p in peaks):
            peaks.append(c)
    return sorted(int(p) for p in peaks), s


def median_despike(x, window, n_sigma):
    half = window // 2
    padded = np.pad(x, half, mode="edge")
    med = np.empty_like(x)
    for i in range(len(x)):
        med[i] = np.median(padded[i:i + window])
    resid = x - med
    mad = np.median(np.abs(resid)) * 1.4826
    spikes = np.abs(resid) > n_sigma * mad
    cleaned = x.copy()
    cleaned[spikes] = med[spikes]
    return cleaned, np.flatnonzero(spikes)


def otsu_threshold(img, nbins=64):
    hist, edges = np.histogram(img, bins=nbins, range=(0.0, 1.0))
    centers = 0.5 * (edges[:-1] + edges[1:])
    p = hist / hist.sum()
    w0 = np.cumsum(p)
    w1 = 1.0 - w0
    mu = np.cumsum(p * centers)
    mu_t = mu[-1]
    with np.errstate(divide="ignore", invalid="ignore"):
        between = (mu_t * w0 - mu) ** 2 / (w0 * w1)
    between = np.nan_to_num(between)
    t = centers[np.argmax(between)]
    mask = img > t
    return t, mask.mean(), img[mask].mean()


def gaussian_blur_edges(img, sigma, thresh):
    """A separable Gaussian blur (reflect-padded, a shifted slice per tap), then gradient-magnitude edges."""
    r = max(1, int(math.ceil(2 * sigma)))
    k = np.exp(-np.arange(-r, r + 1) ** 2 / (2 * sigma ** 2))
    k /= k.sum()
    p = np.pad(img, r, mode="reflect")
    h, w = img.shape
    tmp = np.zeros((h + 2 * r, w))
    for i, kv in enumerate(k):
        tmp += kv * p[:, i:i + w]
    out = np.zeros((h, w))
    for i, kv in enumerate(k):
        out += kv * tmp[i:i + h, :]
    gy, gx = np.gradient(out)
    mag = np.hypot(gx, gy)
    edges = mag > thresh * mag.max()
    return out, edges.sum()


def resample_zero_crossings(t, x, dt):
    """Irregular samples interpolated onto a uniform grid; zero crossings located linearly; the mean frequency."""
    grid = np.arange(t[0], t[-1], dt)
    xs = np.interp(grid, t, x)
    xs = xs - xs.mean()
    crossings = np.where(np.diff(np.sign(xs)) != 0)[0]
    times = grid[crossings] - xs[crossings] * dt / (xs[crossings + 1] - xs[crossings])
    periods = np.diff(times[::2])
    freq = 1.0 / periods.mean() if len(periods) else float("nan")
    return times, freq


def rms_segments(x, win, pct):
    """Frame RMS, a percentile threshold, and the active stretches as (start, end) sample ranges."""
    n = len(x) // win
    frames = x[:n * win].reshape(n, win)
    rms = np.sqrt(np.mean(frames ** 2, axis=1))
    thr = np.percentile(rms, pct)
    active = rms > thr
    segments = []
    start = None
    for i, a in enumerate(active):
        if a and start is None:
            start = i
        elif not a and start is not None:
            segments.append((start * win, i * win))
            start = None
    if start is not None:
        segments.append((start * win, n * win))
    return segments, thr


# ---------------------------------------------------------------------------------------------------------------
# Statistics and data wrangling in plain Python around arrays
# ---------------------------------------------------------------------------------------------------------------


def bisection_roots(coeffs, brackets, tol=1e-10, max_iter=100):
    def f(x):
        return np.polyval(coeffs, x)

    roots = []
    for a, b in brackets:
        fa, fb = f(a), f(b)
        if fa * fb > 0:
            roots.append(None)
            continue
        for _ in range(max_iter):
            m = 0.5 * (a + b)
            fm = f(m)
            if fm == 0 or (b - a) / 2 < tol:
                break
            if fa * fm < 0:
                b, fb = m, fm
            else:
                a, fa = m, fm
        roots.append(m)
    return roots


def bootstrap_ci(data, boot_idx, alpha=0.05):
    """Percentile bootstrap intervals of three statistics from the caller's resampling indices."""
    stats = {"mean": [], "median": [], "std": []}
    for idx in boot_idx:
        sample = data[idx]
        stats["mean"].append(sample.mean())
        stats["median"].append(np.median(sample))
        stats["std"].append(sample.std(ddof=1))
    out = {}
    for name, values in stats.items():
        values = np.asarray(values)
        lo, hi = np.percentile(values, [100 * alpha / 2, 100 * (1 - alpha / 2)])
        out[name] = (float(lo), float(hi))
    bias = sum(stats["mean"]) / len(stats["mean"]) - data.mean()
    return out, bias


def groupby_normalize(table, labels):
    """Columns z-scored (a constant column left as is), rows grouped by their string labels, a summary per group."""
    mu = table.mean(axis=0)
    sd = table.std(axis=0)
    sd = np.where(sd == 0, 1.0, sd)
    z = (table - mu) / sd
    groups = {}
    for row, lab in zip(z, labels):
        groups.setdefault(lab, []).append(row)
    summary = {}
    for lab, rows in sorted(groups.items()):
        arr = np.vstack(rows)
        summary[lab] = {"n": len(rows), "mean": arr.mean(axis=0), "max_abs": float(np.abs(arr).max())}
    return summary


def ewma_series(series, spans):
    """An exponentially weighted moving average of each named series, a sample at a time (span 10 by default)."""
    out = {}
    for name, x in series.items():
        span = spans.get(name, 10)
        alpha = 2.0 / (span + 1)
        s = np.empty_like(x)
        s[0] = x[0]
        for i in range(1, len(x)):
            s[i] = alpha * x[i] + (1 - alpha) * s[i - 1]
        out[name] = s[-1]
        out[name + "_dev"] = float(np.max(np.abs(x - s)))
    return out


# ---------------------------------------------------------------------------------------------------------------
# Argument builders
# ---------------------------------------------------------------------------------------------------------------


def _b_heat_insulated_until_steady(v):
    rng = _rng("heat_insulated_until_steady", v)
    n = (40, 53)[v]
    return rng.random(n), (0.4, 0.3)[v], (1e-3, 5e-3)[v], (300, 200)[v]


def _b_periodic_lj_md(v):
    rng = _rng("periodic_lj_md", v)
    side, spacing = (4, 3)[v], (1.2, 1.3)[v]
    g = (np.arange(side) + 0.5) * spacing
    pos = np.stack(np.meshgrid(g, g, indexing="ij"), axis=-1).reshape(-1, 2)
    pos = pos + 0.05 * rng.standard_normal(pos.shape)
    vel = 0.3 * rng.standard_normal(pos.shape)
    return pos, vel - vel.mean(axis=0), side * spacing, (0.002, 0.003)[v], (20, 15)[v]


def _b_monte_carlo_pi_batches(v):
    rng = _rng("monte_carlo_pi_batches", v)
    return rng.random(((2000, 2), (1500, 2))[v]), (100, 128)[v], (0.01, 0.02)[v]


def _b_rk4_pendulum(v):
    params = ({"g": 9.81, "L": 1.0, "damping": 0.0}, {"g": 9.81, "L": 0.5, "damping": 0.1})[v]
    return (0.5, 1.2)[v], (0.0, -0.3)[v], params, (0.01, 0.02)[v], (100, 75)[v]


def _b_seir_epidemic(v):
    rng = _rng("seir_epidemic", v)
    params = ({"i0": 1e-3, "sigma": 0.2, "gamma": 0.1}, {"i0": 1e-2, "sigma": 0.3, "gamma": 0.15})[v]
    betas = rng.uniform(0.5, 1.2, (4, 6)[v])
    if v == 0:
        return betas, params, 45
    return betas, params, 25, 0.5


def _b_traffic_nasch(v):
    rng = _rng("traffic_nasch", v)
    road_len, n_cars, steps = (60, 80)[v], (15, 24)[v], (30, 25)[v]
    pos = np.sort(rng.choice(road_len, n_cars, replace=False))
    vel = rng.integers(0, 3, n_cars)
    return pos, vel, rng.random((steps, n_cars)), road_len, (5, 4)[v], (0.3, 0.2)[v]


def _b_forest_fire(v):
    rng = _rng("forest_fire", v)
    shape, steps = ((24, 24), (20, 31))[v], (20, 15)[v]
    grid = (rng.random(shape) < 0.6).astype(np.int64)
    grid[shape[0] // 2, shape[1] // 2] = 2
    return grid, rng.random((steps,) + shape), rng.random((steps,) + shape), (0.02, 0.05)[v], (1e-3, 5e-3)[v]


def _b_newton_system(v):
    if v == 0:
        return np.array([1.0, -1.7]),
    return np.array([-1.5, 1.2]), 1e-12, 30


def _b_simpson_convergence(v):
    return ((0.0, 2.0, [4, 8, 16, 32, 64]), (-1.0, 1.5, [6, 12, 24, 48]))[v]


def _b_qr_eigenvalues(v):
    rng = _rng("qr_eigenvalues", v)
    n = (5, 6)[v]
    Q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    A = Q @ np.diag(np.arange(1.0, n + 1) * (1.0, 1.5)[v]) @ Q.T
    return (A + A.T) / 2, (1e-8, 1e-6)[v], (300, 200)[v]


def _b_pca_explained(v):
    rng = _rng("pca_explained", v)
    n, d = (60, 45)[v], (6, 8)[v]
    X = rng.standard_normal((n, d)) * np.linspace(3.0, 0.3, d)
    return X, (0.9, 0.75)[v]


def _b_ridge_cv(v):
    rng = _rng("ridge_cv", v)
    n, d, k = (40, 48)[v], (5, 7)[v], (4, 3)[v]
    X = rng.standard_normal((n, d))
    y = X @ rng.standard_normal(d) + 0.5 * rng.standard_normal(n)
    folds = np.array_split(rng.permutation(n), k)
    return X, y, folds, ([0.01, 0.1, 1.0, 10.0], [0.5, 5.0, 50.0])[v]


def _b_inverse_iteration(v):
    rng = _rng("inverse_iteration", v)
    n = (6, 8)[v]
    M = rng.standard_normal((n, n))
    A = (M + M.T) / 2
    return A, (0.3, -0.7)[v], rng.standard_normal(n), (1e-9, 1e-7)[v], (50, 40)[v]


def _b_logistic_minibatch(v):
    rng = _rng("logistic_minibatch", v)
    n, d, epochs = (64, 80)[v], (4, 6)[v], (10, 8)[v]
    X = rng.standard_normal((n, d))
    y = (X @ rng.standard_normal(d) + 0.3 * rng.standard_normal(n) > 0).astype(float)
    perms = np.array([rng.permutation(n) for _ in range(epochs)])
    return X, y, perms, (16, 20)[v], (0.5, 0.3)[v], (1e-4, 1e-3)[v]


def _b_knn_regress(v):
    rng = _rng("knn_regress", v)
    n, m = (50, 70)[v], (15, 12)[v]
    X = rng.uniform(-2, 2, (n, 2))
    return X, np.sin(X[:, 0]) + X[:, 1] ** 2, rng.uniform(-2, 2, (m, 2)), (5, 3)[v]


def _b_kmeans_model_fit(v):
    rng = _rng("kmeans_model_fit", v)
    k = (3, 4)[v]
    centers = 5.0 * rng.standard_normal((k, 2))
    X = (centers[:, None, :] + rng.standard_normal((k, (30, 25)[v], 2))).reshape(-1, 2)
    return X, rng.choice(len(X), k, replace=False), k


def _b_perceptron_train(v):
    rng = _rng("perceptron_train", v)
    n, d = (40, 50)[v], (2, 3)[v]
    w = rng.standard_normal(d)
    X = rng.standard_normal((n, d))
    margin = X @ w
    X = X[np.abs(margin) > 0.05]
    y = np.where(X @ w > 0, 1.0, -1.0)
    return X, y, (20, 15)[v]


def _b_gaussian_nb(v):
    rng = _rng("gaussian_nb", v)
    c, d, n = (3, 4)[v], (4, 3)[v], (60, 80)[v]
    means = 2.0 * rng.standard_normal((c, d))
    y = rng.integers(0, c, n)
    X = means[y] + rng.standard_normal((n, d))
    yt = rng.integers(0, c, (20, 15)[v])
    return X, y, means[yt] + rng.standard_normal((len(yt), d))


def _b_linreg_momentum(v):
    rng = _rng("linreg_momentum", v)
    n, d = (50, 64)[v], (4, 6)[v]
    X = rng.standard_normal((n, d))
    config = (SGDConfig(lr=0.05, epochs=80), SGDConfig(lr=0.02, momentum=0.8, epochs=60, clip=1.0))[v]
    return X, X @ rng.standard_normal(d) + 0.1 * rng.standard_normal(n), config


def _b_softmax_regression(v):
    rng = _rng("softmax_regression", v)
    n, d, c = (48, 60)[v], (5, 4)[v], (3, 4)[v]
    X = rng.standard_normal((n, d))
    y = np.argmax(X @ rng.standard_normal((d, c)), axis=1)
    if v == 0:
        return X, y, c, 0.5, 50
    return X, y, c, 0.3, 40, 1e-2


def _b_smooth_find_peaks(v):
    rng = _rng("smooth_find_peaks", v)
    n = (400, 317)[v]
    t = np.linspace(0, (12, 17)[v], n)
    return np.sin(t) + 0.5 * np.sin(3.1 * t) + 0.3 * rng.standard_normal(n), (3.0, 2.0)[v], (20, 12)[v], \
        (0.2, 0.1)[v]


def _b_median_despike(v):
    rng = _rng("median_despike", v)
    n = (150, 117)[v]
    x = np.sin(np.linspace(0, 8, n)) + 0.05 * rng.standard_normal(n)
    x[rng.choice(n, 6, replace=False)] += rng.choice([-2.0, 2.0], 6)
    return x, (7, 5)[v], (4.0, 3.0)[v]


def _b_otsu_threshold(v):
    rng = _rng("otsu_threshold", v)
    shape = ((32, 32), (24, 40))[v]
    img = np.clip(np.where(rng.random(shape) < 0.4, 0.7, 0.25) + 0.08 * rng.standard_normal(shape), 0.0, 1.0)
    if v == 0:
        return img,
    return img, 32


def _b_gaussian_blur_edges(v):
    rng = _rng("gaussian_blur_edges", v)
    n, m = (32, 28)[v], (32, 41)[v]
    img = np.zeros((n, m))
    img[n // 4:3 * n // 4, m // 3:2 * m // 3] = 1.0
    return img + 0.05 * rng.standard_normal((n, m)), (1.0, 1.6)[v], (0.3, 0.5)[v]


def _b_resample_zero_crossings(v):
    rng = _rng("resample_zero_crossings", v)
    n = (200, 163)[v]
    t = np.sort(rng.uniform(0.0, (10.0, 7.0)[v], n))
    return t, np.sin(2 * np.pi * (1.3, 2.1)[v] * t) + 0.02 * rng.standard_normal(n), (0.01, 0.02)[v]


def _b_rms_segments(v):
    rng = _rng("rms_segments", v)
    n = (1200, 1000)[v]
    env = (np.sin(np.linspace(0, (9, 14)[v], n)) > 0.3) * 1.0 + 0.1
    return env * rng.standard_normal(n), (50, 40)[v], (60.0, 40.0)[v]


def _b_bisection_roots(v):
    if v == 0:
        return np.array([1.0, 0.0, -4.0, 1.0]), [(-3.0, -1.0), (0.0, 1.0), (1.0, 3.0), (5.0, 6.0)]
    return np.array([2.0, -3.0, -3.0, 2.0]), [(-2.0, 0.0), (0.0, 1.0), (1.0, 3.0)], 1e-8, 60


def _b_bootstrap_ci(v):
    rng = _rng("bootstrap_ci", v)
    n, reps = (40, 31)[v], (60, 50)[v]
    data = rng.lognormal(0.0, 0.5, n)
    if v == 0:
        return data, rng.integers(0, n, (reps, n))
    return data, rng.integers(0, n, (reps, n)), 0.1


def _b_groupby_normalize(v):
    rng = _rng("groupby_normalize", v)
    n, d = (40, 33)[v], (4, 5)[v]
    table = rng.standard_normal((n, d)) * 3 + 1
    table[:, -1] = 2.0  # a constant column
    names = (["a", "b", "c"], ["north", "south", "east", "west"])[v]
    return table, [names[i] for i in rng.integers(0, len(names), n)]


def _b_ewma_series(v):
    rng = _rng("ewma_series", v)
    names, n = (("price", "volume", "spread"), ("x", "y"))[v], (50, 37)[v]
    series = {name: rng.standard_normal(n).cumsum() for name in names}
    return series, ({"price": 5, "volume": 20}, {"y": 3})[v]


# ---------------------------------------------------------------------------------------------------------------
# The programs, in the order corpus_programs.PROGRAMS lists them
# ---------------------------------------------------------------------------------------------------------------

WILD = [
    (heat_insulated_until_steady, SIMULATION),
    (periodic_lj_md, SIMULATION),
    (monte_carlo_pi_batches, SIMULATION),
    (rk4_pendulum, SIMULATION),
    (seir_epidemic, SIMULATION),
    (traffic_nasch, SIMULATION),
    (forest_fire, SIMULATION),
    (newton_system, LINALG),
    (simpson_convergence, LINALG),
    (qr_eigenvalues, LINALG),
    (pca_explained, LINALG),
    (ridge_cv, LINALG),
    (inverse_iteration, LINALG),
    (logistic_minibatch, ML),
    (knn_regress, ML),
    (kmeans_model_fit, ML),
    (perceptron_train, ML),
    (gaussian_nb, ML),
    (linreg_momentum, ML),
    (softmax_regression, ML),
    (smooth_find_peaks, SIGNAL),
    (median_despike, SIGNAL),
    (otsu_threshold, SIGNAL),
    (gaussian_blur_edges, SIGNAL),
    (resample_zero_crossings, SIGNAL),
    (rms_segments, SIGNAL),
    (bisection_roots, PYTHON),
    (bootstrap_ci, PYTHON),
    (groupby_normalize, PYTHON),
    (ewma_series, PYTHON),
]


def builder(fn):
    """The argument builder ``_b_<name>`` of a program of ``WILD``."""
    return globals()[f"_b_{fn.__name__}"]
