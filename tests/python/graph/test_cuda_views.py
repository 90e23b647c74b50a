"""Views of device arrays with ``None`` (new axes) and ``...`` (DeviceArray.__getitem__, basic_view), and reshapes,
transposes and ravels (device_views.hpp), on the simulated
device: ``pos[None, :, :] - pos[:, None, :]``, ``m[None, :, None]``, ``y[..., 0]`` are views of the device's memory, as
NumPy's (shapes, strides, values); before, each copied its array out, so an n-body step moved its arrays out and back
in (207 in and 103 out per call of the corpus' leapfrog). An Ellipsis leaving no axis gives NumPy's 0-d array, from
the host."""

import shutil

import numpy as np
import pytest

import sot

G = sot._sot.graph
pytestmark = [pytest.mark.skipif(shutil.which("c++") is None, reason="no C++ compiler for the simulated device"),
              pytest.mark.skipif(sot.config.backend != "cpu", reason="the same programs as the default run's"),
              pytest.mark.usefixtures("cuda_device")]


def moved():
    c = G.cuda_transfer_counts(reset=True)
    return c["arrays_in"], c["arrays_out"]


def views(x, m):
    y = x * 1.0  # (device values)
    z = m * 1.0
    a = y[None, :, :] - y[:, None, :]
    b = z[None, :, None] * a
    z[..., 2] = 5.0
    return a, b, y[..., 0], y[0, ..., None], z[..., 1], y[None], y[:, None, 1:3], z, y[..., 1:, None], y[None, ...]


def test_new_axes_and_ellipses_are_numpys_views():
    f = sot.jit(views, backend="cuda")
    for k in range(3):
        x, m = np.random.default_rng(k).standard_normal((6, 3)), np.random.default_rng(k + 9).standard_normal(6)
        got, plain = f(x, m), views(x, m)
        for g, p in zip(got, plain):
            assert type(g) is type(p) and g.shape == p.shape and g.strides == p.strides, (g.shape, p.shape)
            assert np.array_equal(g, p)


def accelerations(pos, mass):
    d = pos[None, :, :] - pos[:, None, :]
    r2 = (d ** 2).sum(axis=-1) + 0.01
    inv = 1.0 / (r2 * np.sqrt(r2))  # (r2 ** -1.5 through pow: not correctly rounded, so not bit for bit everywhere)
    return (d * (mass[None, :, None] * inv[:, :, None])).sum(axis=1)


def leapfrog(pos, vel, mass, dt, steps):
    pos = pos.copy()
    vel = vel.copy()
    acc = accelerations(pos, mass)
    for _ in range(steps):
        vel += 0.5 * dt * acc
        pos += dt * vel
        acc = accelerations(pos, mass)
        vel += 0.5 * dt * acc
    return pos, vel


@pytest.mark.parametrize("steps", [10, 11])
def test_an_n_body_step_keeps_its_arrays_on_the_device(steps):
    f = sot.jit(leapfrog, backend="cuda")
    rng = np.random.default_rng(4)
    f(rng.standard_normal((12, 3)), rng.standard_normal((12, 3)), rng.random(12) + 0.5, 0.01, steps)
    for k in range(2):
        pos, vel, mass = rng.standard_normal((12, 3)), rng.standard_normal((12, 3)), rng.random(12) + 0.5
        moved()
        got, plain = f(pos, vel, mass, 0.01, steps), leapfrog(pos, vel, mass, 0.01, steps)
        assert all(np.array_equal(g, p) for g, p in zip(got, plain)), k
        assert moved() == (3, 2), k


def reshapes(x):
    y = x * 2.0
    z = y.reshape(4, -1)
    w = np.reshape(y, (2, 2, -1))
    t = z.T
    z[1] = -1.0  # (through the view, into y)
    return (z, w.transpose(2, 0, 1), np.transpose(w), np.ravel(y), y.ravel(), t @ z, y.sum(axis=1), z.reshape(-1),
            y.transpose(1, 0).sum(axis=0), np.reshape(y, -1))


def test_reshapes_transposes_and_ravels_are_numpys_views_on_the_device():
    # each made from the device's memory, as NumPy's views; before, each copied its array out
    f = sot.jit(reshapes, backend="cuda")
    f(np.random.default_rng(1).standard_normal((8, 6)))
    for k in range(2):
        x = np.random.default_rng(2 + k).standard_normal((8, 6))
        moved()
        got, plain = f(x), reshapes(x)
        # x in; out, each block the results are views of once (y's, the product's and the two sums')
        assert moved() == (1, len({id(p if p.base is None else p.base) for p in plain})) == (1, 4), k
        for g, p in zip(got, plain):
            assert type(g) is type(p) and g.shape == p.shape and g.strides == p.strides, (g.shape, p.shape)
            assert np.array_equal(g, p)


def reshape_by(x, shape):
    return (x * 1.0).reshape(shape)


def test_shapes_numpy_refuses_raise_as_numpy():
    f = sot.jit(reshape_by, backend="cuda")
    x = np.ones((4, 6))
    f(x, (3, 8))
    f(x, (3, 8))
    for shape in ((5, 5), (-1, -1), (7, -1), (0, -1)):
        with pytest.raises(ValueError) as plain:
            reshape_by(x, shape)
        with pytest.raises(ValueError) as got:
            f(x, shape)
        assert str(got.value) == str(plain.value), shape


def relax_flat(x, steps):
    n = x.shape[0]
    for _ in range(steps):
        g = x.reshape(n, -1)
        g[1:-1, 1:-1] = 0.25 * (g[:-2, 1:-1] + g[2:, 1:-1] + g[1:-1, :-2] + g[1:-1, 2:])
        x = g.reshape(-1) * 1.0
    return x.reshape(n, -1)


def test_a_loop_reshaping_its_array_each_step_moves_it_once():
    f = sot.jit(relax_flat, backend="cuda")
    f(np.random.default_rng(5).standard_normal((12, 10)).reshape(12, 10), 4)
    for k in range(2):
        x = np.random.default_rng(6 + k).standard_normal((12, 10))
        mine, theirs = x.copy(), x.copy()
        moved()
        got, plain = f(mine, 20), relax_flat(theirs, 20)
        assert np.array_equal(got, plain) and got.strides == plain.strides, k
        # the first step writes the caller's array through its view, as NumPy's does
        assert np.array_equal(mine, theirs) and not np.array_equal(mine, x), k
        # x in once and out once (written), the result out
        assert moved() == (1, 2), k


def test_a_reshape_of_a_strided_view_runs_on_the_host():
    def g(x):
        return (x * 1.0)[:, ::2].reshape(-1) + 1.0

    f = sot.jit(g, backend="cuda")
    f(np.ones((6, 8)))
    for k in range(2):
        x = np.random.default_rng(k).standard_normal((6, 8))
        got, plain = f(x), g(x)
        assert np.array_equal(got, plain) and got.strides == plain.strides, k
