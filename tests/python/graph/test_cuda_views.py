"""Views of device arrays with ``None`` (new axes) and ``...`` (DeviceArray.__getitem__, basic_view), on the simulated
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
