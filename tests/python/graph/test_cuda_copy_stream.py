"""Host arrays copied in on the device's copy stream (issue 35, item 4), on the simulated device: a copy runs
beside the kernels queued before it, into memory no queued kernel may still use, and the kernels after it wait
for it. The simulated device runs such a copy only when something waits for it, and counts a kernel that reads
memory whose copy it did not wait for, or a copy into memory a kernel not known done may still use, as a bad
access; so a missing wait or a reused block fails these tests. With SOT_CUDA_REAL=1 (tests/device/cuda_check.sh,
with SOT_CUDA_COPY_STREAM=1) they run on the GPU and check values only. PYTEST_DONT_REWRITE"""

import os

import pytest

np = pytest.importorskip("numpy")
sot = pytest.importorskip("sot")
graph = sot._sot.graph

pytestmark = pytest.mark.skipif(not hasattr(graph, "cuda_simulated_counts"), reason="no cuda backend")
REAL = os.environ.get("SOT_CUDA_REAL") == "1"


@pytest.fixture(autouse=True)
def simulated():
    was = graph.cuda_simulate(not REAL)
    yield
    graph.cuda_simulate(was)


def two_groups(a, b):
    # (two groups of other shapes: b's copy in comes after a's group is queued)
    # (exact ops: transcendental functions come from the host's libm here, NumPy's own SIMD loops there)
    x = a * 2.0 + 1.0
    y = b * 3.0 - b
    return x, y


def loop_then_input(a, b, n):
    for _ in range(n):
        a = a * 0.5 + 1.0
    return (a + b,)


def runs(f, fn, args_list):
    counts = []
    for args in args_list:
        graph.cuda_simulated_counts(True)
        got = f(*args)
        c = graph.cuda_simulated_counts()
        want = fn(*args)
        for g, w in zip(got, want):
            assert type(g) is type(w)
            assert np.array_equal(g, w)
        counts.append(c)
    return [] if REAL else counts


def calls(n, rng):
    return [(rng.random(50_000), rng.random((200, 300))) for _ in range(n)]


@pytest.mark.parametrize("on", [True, False])
def test_a_copy_in_runs_beside_the_kernels_queued_before_it(on):
    was = graph.cuda_copy_stream(on)
    try:
        f = sot.jit(two_groups, backend="cuda")
        counts = runs(f, two_groups, calls(4, np.random.default_rng(1)))
    finally:
        graph.cuda_copy_stream(was)
    for c in counts[1:]:  # (the first call is checked on the host)
        assert c["bad_accesses"] == 0, c
        assert c["to_device"] == 2, c
        if on:
            assert c["staged_aside"] >= 2 and c["overlapped"] >= 1, c
        else:
            assert c["staged_aside"] == 0 and c["overlapped"] == 0, c
    assert REAL or counts[-1]["allocs"] == 0, counts[-1]  # (warm calls reuse blocks seen idle)


def test_copies_aside_around_a_loop_are_waited_for():
    # (a's result of the loop's first step, run on the host, and b after the loop are copied in aside; which
    # kept blocks a copy aside may take is tested on its own in tests/cpp/graph/test_cuda_device_pool.cpp)
    f = sot.jit(loop_then_input, backend="cuda")
    rng = np.random.default_rng(2)
    counts = runs(f, loop_then_input, [(rng.random(4000), rng.random(4000), 20) for _ in range(4)])
    for c in counts[1:]:
        assert c["bad_accesses"] == 0, c
        assert c["staged_aside"] == 2 and c["to_device"] == 2, c
