"""A loop's steps replayed on the device (graph/backends/cuda/step_replay.hpp), on the simulated device: a step that
queued nothing but launches, the same as the step before on the very same values, is queued again for each step left
without the body's graph call, 32 steps at a time as one device graph. What changes from step to step (a scalar, a new array, a step on the host) keeps the
steps as they were. Each case compares with plain NumPy, on new values each call."""

import shutil

import numpy as np
import pytest

import sot
from sot import capture as cap
from sot.report import plan_lines

G = sot._sot.graph
pytestmark = [pytest.mark.skipif(shutil.which("c++") is None, reason="no C++ compiler for the simulated device"),
              pytest.mark.skipif(sot.config.backend != "cpu", reason="the same programs as the default run's"),
              pytest.mark.usefixtures("cuda_device")]


def heat(u, steps):
    for _ in range(steps):
        u[1:-1] = u[1:-1] + 0.1 * (u[2:] - 2.0 * u[1:-1] + u[:-2])
    return u


def timed_heat(u, steps):
    for i in range(steps):  # the loop variable in a kernel's scalar: each step's launches differ
        u[1:-1] = u[1:-1] + 1e-4 * i * (u[2:] - u[:-2])
    return u


def sorted_steps(u, steps):
    for _ in range(steps):  # a step on the host each time
        u[1:-1] = np.sort(u[1:-1] * 0.5)
    return u


def outer_inner(u, rounds, steps):
    for _ in range(rounds):
        for _ in range(steps):
            u[1:-1] = u[1:-1] + 0.1 * (u[2:] - 2.0 * u[1:-1] + u[:-2])
        u *= 0.5
    return u


def fresh(x, steps):
    for _ in range(steps):  # a new array each step
        x = x * 0.5 + 1.0
    return x


def floats(seed, n):
    return np.random.default_rng(seed).standard_normal(n)


def replayed_by(fn, *args):
    """``fn`` compiled for the cuda backend, run three times on new values of ``args[0]``'s shape (each compared with
    plain NumPy, bit for bit, in place too); the loop steps its runs replayed and the arrays they copied."""
    compiled = sot.explain(sot.jit(fn, backend="cuda"), args[0].copy(), *args[1:]).graphs[0]["compiled"]
    for k in range(3):
        x = floats(100 + k, args[0].size)
        u, plain_u = x.copy(), x.copy()
        got = compiled(u)
        plain = fn(plain_u, *args[1:])
        assert np.array_equal(u, plain_u), k
        if got is not None:
            assert np.array_equal(got, plain), k
    resident = compiled.plan()["resident"]
    return resident.get("replayed_steps", 0), resident["arrays_out"]


def test_a_heat_loop_replays_its_steps():
    replayed, out = replayed_by(heat, floats(1, 4096), 500)
    # each run from the second (the first runs each group on the host first): two steps' graph calls to compare,
    # one more before the steps repeat on the same launches, the rest replayed
    assert replayed == 3 * 497, replayed
    assert out == 4  # (the explained run's, then one a run)


def test_a_heat_loop_replays_with_the_same_launches():
    f = sot.jit(heat, backend="cuda")
    x = floats(2, 1000)
    f(x.copy(), 200)
    G.cuda_simulated_counts(reset=True)
    u, plain = x.copy(), x.copy()
    assert f(u, 200) is u
    heat(plain, 200)
    assert np.array_equal(u, plain)
    c = G.cuda_simulated_counts()
    assert (c["launches"], c["synchronizations"], c["bad_accesses"]) == (400, 1, 0)
    # 197 steps replayed: six runs of a device graph of 32 steps, then 5 one by one; the graph is made once
    assert (c["graph_runs"], c["graphs_made"]) == (6, 1)
    f(x.copy(), 200)
    assert (G.cuda_simulated_counts()["graph_runs"], G.cuda_simulated_counts()["graphs_made"]) == (12, 1)


@pytest.mark.parametrize("fn,args", [(timed_heat, (300,)), (sorted_steps, (40,))])
def test_steps_that_differ_or_run_on_the_host_are_not_replayed(fn, args):
    replayed, out = replayed_by(fn, floats(3, 2048), *args)
    assert replayed == 0
    if fn is timed_heat:
        # the loop variable times a constant is Python's arithmetic: the array never leaves the device for it
        assert out == 4


def test_an_inner_loop_replays_inside_an_outer_one():
    replayed, _ = replayed_by(outer_inner, floats(4, 512), 6, 50)
    assert replayed > 0


def two_new(x, y, steps):
    for _ in range(steps):  # two arrays made anew each step
        x, y = x * 0.5 + y, y * 0.25 - 1.0
    return x + y


def in_place_and_new(u, v, steps):
    for _ in range(steps):  # one array changed in place (the caller's), one made anew
        u[1:-1] = u[1:-1] + 0.1 * v[1:-1]
        v = v * 0.5 + u
    return v


@pytest.mark.parametrize("steps", [36, 37, 100])
@pytest.mark.parametrize("fn,arrays", [(fresh, 1), (two_new, 2), (in_place_and_new, 2)])
def test_a_loop_making_new_arrays_each_step_replays_the_two_blocks_in_turn(fn, arrays, steps):
    """A carried array made anew each step swaps two blocks (the pool hands back the one freed last): the steps
    replay in a cycle of two, and the result is the block the last replayed step wrote (an odd or even count)."""
    f = sot.jit(fn, backend="cuda")
    for k in range(3):
        args = [floats(20 + 3 * k + a, 500) for a in range(arrays)]
        plain = [a.copy() for a in args]
        G.cuda_simulated_counts(reset=True)
        got = f(*args, steps)
        want = fn(*plain, steps)
        assert np.array_equal(got, want), k
        assert all(np.array_equal(a, p) for a, p in zip(args, plain)), k
        if k > 0:  # (each group's first run is the host's)
            assert G.cuda_simulated_counts()["graph_runs"] == (steps - 4) // 32, k


def column_relax(x, steps):
    for _ in range(steps):  # a reduction along an axis each step: its kernel is replayed too
        x[1:] = x[1:] * 0.5 + 0.5 * x.mean(axis=0)
    return x


def test_a_reduction_along_an_axis_replays_with_the_step():
    x = floats(8, 40 * 300).reshape(40, 300)
    f = sot.jit(column_relax, backend="cuda")
    f(x.copy(), 20)
    for k in range(2):
        u, plain = floats(9 + k, x.size).reshape(x.shape), None
        plain = u.copy()
        assert f(u, 20) is u
        column_relax(plain, 20)
        assert np.array_equal(u, plain), k
    compiled = sot.explain(sot.jit(column_relax, backend="cuda"), x.copy(), 20).graphs[0]["compiled"]
    compiled(x.copy())
    # steps 0-3 through the graph (the temporaries swap blocks each step: a cycle of two), 16 replayed
    assert compiled.plan()["resident"]["replayed_steps"] == 16


def test_replays_can_be_turned_off():
    before = sot.config.cuda_replay
    sot.config.cuda_replay = False
    try:
        replayed, _ = replayed_by(heat, floats(10, 1024), 100)
    finally:
        sot.config.cuda_replay = before
    assert replayed == 0


def test_graphs_are_made_again_once_their_kernels_are_unloaded():
    """A device graph names its kernels' function handles: once a module is unloaded (its graphs dropped by
    sot.reset()), a handle may be another module's, so the graphs kept are dropped and made again."""
    x = floats(11, 1000)
    for k in range(2):
        sot.reset()
        f = sot.jit(heat, backend="cuda")
        f(x.copy(), 100)
        G.cuda_simulated_counts(reset=True)
        u, plain = x.copy(), x.copy()
        f(u, 100)
        heat(plain, 100)
        assert np.array_equal(u, plain)
        assert G.cuda_simulated_counts()["graphs_made"] == 1, k


def test_the_report_shows_the_loop_body_with_its_kernels_and_launches():
    """A loop op's group holds its body's plan (graph/exec/grouped_runner.cpp), shown under the loop's line: the
    body's fused group, its device runs and launches, its kernel. The first call checks the group's dtypes with one
    step on the host, so it leaves the run's optimism: no replays, a flag word read per step; the next two calls
    run three steps each through the body's graph and replay 37."""
    translator = sot.translate.new_translator(records=True, backend="cuda")
    cap.clear(heat)
    u0 = floats(30, 4096)
    with cap.capture(translator):
        for _ in range(3):
            heat(u0.copy(), 40)
    (graph,) = [g for r in translator.records() for g in r["graphs"]]
    plan = graph["compiled"].plan()
    assert plan["resident"]["replayed_steps"] == 74
    lines = plan_lines(plan, kernels=False)
    at = [k for k, line in enumerate(lines) if line.startswith("group ") and "loop" in line]
    assert len(at) == 1, lines
    body = lines[at[0] + 1:]
    assert body[0] == "  loop body: cuda: 5 groups, 1 on the device (device 45 runs, host 1)", lines
    fused = [line for line in body if line.startswith("    group ") and " fused: " in line]
    assert len(fused) == 1 and "device 45, host 1" in fused[0] and "45 launches" in fused[0], lines
    with_kernels = plan_lines(plan)
    assert any(line.strip().startswith("kernel k0 over [4094]") for line in with_kernels), with_kernels
