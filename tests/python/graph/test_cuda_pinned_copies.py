"""Host memory copied through page-locked buffers (issue 35, item 4; runtime/cuda/pinned_copies.hpp): a copy to the
device is cut into chunks, each queued from one of two page-locked buffers in turn, and the host goes on; a copy to the
host queues two chunks ahead. The simulated device runs a queued copy only when something waits for it, as late as a
GPU may: a buffer written again before its copy ran is a bad access, and a buffer a copy to the host is queued into
holds garbage until then. So a chunk taken out of order changes values here, as it would on a GPU."""

import os
import shutil

import numpy as np
import pytest

import sot

G = sot._sot.graph
REAL = os.environ.get("SOT_CUDA_REAL") == "1"
pytestmark = [pytest.mark.skipif(shutil.which("c++") is None and not REAL,
                                 reason="no C++ compiler for the simulated device"),
              pytest.mark.skipif(sot.config.backend != "cpu", reason="the same programs as the default run's"),
              pytest.mark.usefixtures("cuda_device")]

CHUNK = 4096  # bytes: small, so that small arrays take many chunks
TO_HOST_LEAST = 64 << 10  # a copy to the host of fewer bytes goes straight (one wait either way)


@pytest.fixture
def chunk():
    before = G.cuda_staging(CHUNK)
    yield CHUNK
    G.cuda_staging(before)


def counts():
    c = G.cuda_simulated_counts(reset=True)
    return c["staged_to_device"], c["staged_to_host"], c["bad_accesses"]


def heat(u, steps):
    for _ in range(steps):
        u = u + 0.1 * (np.roll(u, 1) - 2.0 * u + np.roll(u, -1))
    return u


def chain(a, b):
    return np.sqrt(np.abs(a * b)) + a / 3.0


@pytest.mark.parametrize("n", [1, 511, 512, 513, 3 * 512 + 5, 9_000, 20_000])
def test_arrays_round_trip_through_the_chunks(chunk, n):
    for k, dtype in enumerate((np.float64, np.float32, np.int64)):
        a = (np.random.default_rng(n + k).standard_normal(n) * 1000).astype(dtype)
        counts()
        d = sot.to_device(a)
        back = np.asarray(d)
        assert back.dtype == a.dtype and np.array_equal(back, a), (n, dtype)
        if not REAL:
            to_device, to_host, bad = counts()
            assert to_device == -(-a.nbytes // chunk) and bad == 0, (n, dtype, to_device, bad)
            assert to_host == (-(-a.nbytes // chunk) if a.nbytes >= TO_HOST_LEAST else 0), (n, dtype, to_host)


@pytest.mark.parametrize("n,steps", [(3000, 7), (20_000, 12), (9_001, 30)])
def test_loops_and_chains_give_the_plain_values_through_the_chunks(chunk, n, steps):
    rng = np.random.default_rng(n)
    f, g = sot.jit(heat, backend="cuda"), sot.jit(chain, backend="cuda")
    for k in range(3):  # first call (run on the host), from the cache, other values and trip counts
        u = rng.standard_normal(n)
        a, b = rng.standard_normal((2, n // 2))
        assert np.array_equal(f(u, steps + k), heat(u, steps + k)), k
        assert np.array_equal(g(a, b), chain(a, b)), k
    if not REAL:
        to_device, to_host, bad = counts()
        assert bad == 0 and to_device > 0 and (to_host > 0 or n * 8 < TO_HOST_LEAST), (to_device, to_host, bad)


def test_no_staging_copies_straight_and_gives_the_same_values(chunk):
    u = np.random.default_rng(3).standard_normal(20_000)
    staged = sot.jit(heat, backend="cuda")(u, 5)
    G.cuda_staging(0)
    counts()
    sot.reset()
    straight = sot.jit(heat, backend="cuda")(u, 5)
    assert np.array_equal(staged, straight) and np.array_equal(straight, heat(u, 5))
    if not REAL:
        assert counts() == (0, 0, 0)


def test_host_inputs_may_change_at_once_after_the_call_that_copied_them(chunk):
    """The copy to the device is queued, but from the page-locked buffers: the caller's array is free at once."""
    f = sot.jit(chain, backend="cuda", device_results=True)
    a, b = np.random.default_rng(5).standard_normal((2, 9_000))
    want = chain(a, b)
    out = f(a, b)
    a[:] = 0.0
    b[:] = 1.0
    assert np.array_equal(np.asarray(out), want)


def test_the_staging_setting_is_checked():
    with pytest.raises(ValueError, match="chunk_bytes must be >= 0"):
        G.cuda_staging(-1)
