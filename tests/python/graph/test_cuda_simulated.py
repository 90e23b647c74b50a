"""The cuda backend on the simulated device (graph/runtime/cuda/simulated_device.hpp), where there is no GPU: device
memory is host memory, each module's CUDA C++ is compiled for the host against a shim of CUDA's built-ins, launches
run in order, and what moves is counted. Its results are NumPy's (the ops here are exact ones: + - * / sqrt, sums in
NumPy's order, max/min); its counts say what the backend moves today: each fused group copies its inputs in and its
outputs out (issue 35's residency will make these counts fall)."""

import shutil
import warnings

import numpy as np
import pytest

import sot
from sot import capture as cap
from sot.report import plan_lines

G = sot._sot.graph
pytestmark = [pytest.mark.skipif(shutil.which("c++") is None, reason="no C++ compiler for the simulated device"),
              pytest.mark.skipif(sot.config.backend != "cpu", reason="the same programs as the default run's")]


@pytest.fixture(autouse=True)
def simulated():
    before = G.cuda_simulate(True)
    sot.reset()
    G.cuda_simulated_counts(reset=True)
    yield
    G.cuda_simulate(before)
    sot.reset()


def chain(a, b):
    return (a * 2.0 + b) / 3.0 - np.sqrt(np.abs(b))


def broadcast(a, row):
    return a * row + 1.0


def row_sums(a):
    return (a * a).sum(axis=1), (a + 1.0).mean(axis=1)


def total(a):
    return (a * 0.5 - 1.0).sum()


def row_max(a):
    return (a - 1.0).max(axis=1)


def floats(seed, *shape):
    return np.random.default_rng(seed).standard_normal(shape)


CASES = [
    (chain, lambda k: (floats(k, 300), floats(k + 1, 300))),
    (chain, lambda k: (floats(k, 40, 70), floats(k + 1, 40, 70))),
    (broadcast, lambda k: (floats(k, 30, 50), floats(k + 1, 50))),
    (row_sums, lambda k: (floats(k, 20, 1000 + 37 * k),)),
    (total, lambda k: (floats(k, 5000 + 11 * k),)),
    (row_max, lambda k: (floats(k, 9, 300),)),
]


@pytest.mark.parametrize("fn,args_of", CASES, ids=[f"{c[0].__name__}-{i}" for i, c in enumerate(CASES)])
def test_results_on_the_simulated_device_are_numpys(fn, args_of):
    f = sot.jit(fn, backend="cuda")
    for k in range(3):  # (the first run of a group is the host's: it checks the kernel's dtypes)
        args = args_of(k)
        plain = fn(*args)
        got = f(*args)
        plain, got = (plain, got) if isinstance(plain, tuple) else ((plain,), (got,))
        for p, g in zip(plain, got):
            assert type(p) is type(g)
            assert np.array_equal(p, g), (k, p, g)
    counts = G.cuda_simulated_counts()
    assert counts["launches"] > 0 and counts["bad_accesses"] == 0
    assert cap.stats(fn)["hits"] >= 1


def test_each_group_moves_its_inputs_in_and_its_outputs_out():
    """One fused group of two inputs and one output, run on the device: per run its two inputs are copied in,
    its output and the flag word out, the flag word zeroed, one launch and one synchronisation; memory is the
    pool's (allocated once, kept)."""
    f = sot.jit(chain, backend="cuda")
    a, b = floats(1, 256), floats(2, 256)
    f(a, b)  # (the host's run)
    f(a, b)
    G.cuda_simulated_counts(reset=True)
    for _ in range(5):
        assert np.array_equal(f(a, b), chain(a, b))
    c = G.cuda_simulated_counts()
    assert (c["to_device"], c["to_device_bytes"]) == (10, 10 * 2048)
    assert (c["to_host"], c["to_host_bytes"]) == (10, 5 * (2048 + 4))
    assert (c["zeroed"], c["launches"], c["synchronizations"]) == (5, 5, 5)
    assert c["allocs"] == 0 and c["bad_accesses"] == 0


def test_a_floating_point_error_runs_again_on_the_host_and_warns_as_numpy():
    def divide(a, b):
        return a / b + 1.0

    f = sot.jit(divide, backend="cuda")
    a, b = floats(3, 64), floats(4, 64)
    f(a, b)
    f(a, b)
    b[5] = 0.0
    with warnings.catch_warnings(record=True) as got_w:
        warnings.simplefilter("always")
        got = f(a, b)
    with warnings.catch_warnings(record=True) as plain_w:
        warnings.simplefilter("always")
        plain = divide(a, b)
    assert np.array_equal(got, plain)
    assert [str(w.message) for w in got_w] == [str(w.message) for w in plain_w] != []
    assert G.cuda_simulated_counts()["launches"] >= 2


def test_the_plan_says_the_groups_ran_on_the_device():
    f = sot.jit(chain, backend="cuda")
    a, b = floats(5, 128), floats(6, 128)
    for _ in range(3):
        f(a, b)
    translator = sot.translate.new_translator(records=True, backend="cuda")
    cap.clear(chain)
    with cap.capture(translator):
        for _ in range(3):
            chain(a, b)
    groups = [g for r in translator.records() for graph in r["graphs"] for g in graph["compiled"].plan()["groups"]]
    fused = [g for g in groups if g.get("on_device") is not None]
    assert fused and all(g["on_device"] and g["cuda"] == "compiled" for g in fused), fused
    assert sum(g["device_runs"] for g in fused) == 2 and sum(g["host_runs"] for g in fused) == 1
    # what the two device runs moved: two 1 KB inputs in, the 1 KB result and the 4-byte flag word out
    assert [(g["bytes_in"], g["bytes_out"], g["launches"]) for g in fused] == [(4096, 2 * 1028, 2)]
    lines = [line for graph in (g for r in translator.records() for g in r["graphs"])
             for line in plan_lines(graph["compiled"].plan(), kernels=False)]
    assert any("moved 4.0 KB in, 2.0 KB out, 2 launches" in line for line in lines), lines
