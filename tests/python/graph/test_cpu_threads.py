"""The ``cpu`` backend's threads (extension/src/graph/backends/cpu/cpu_threads.hpp): the pool is LLVM's OpenMP
runtime where the build found it; a kernel run on several threads gives the one-thread result bit for bit, on
tier A (whose helpers take the GIL to call NumPy) and tier B (no GIL); a forked child of a process whose pool has
run runs its own (GNU's OpenMP hangs there); two Python threads running kernels at once both get right results.
PYTEST_DONT_REWRITE"""

import os
import signal
import threading
import time

import pytest

import sot
from numpy_differential import same
from sot import capture as cap

np = pytest.importorskip("numpy")

rng = np.random.default_rng(5)
X = rng.standard_normal(300_000)
Y = rng.standard_normal(300_000)


def chain(x, y):
    return np.sqrt(np.abs(x * 2.5 - y)) + np.exp(-x * x) * 0.5


@pytest.fixture(autouse=True)
def small_blocks():
    saved = (sot.config.backend, sot.config.cpu_block, sot.config.cpu_threads, sot.config.cpu_tier_b)
    sot.config.backend, sot.config.cpu_block, sot.config.cpu_threads = "cpu", 4096, 4
    sot.reset()
    yield
    sot.config.backend, sot.config.cpu_block, sot.config.cpu_threads, sot.config.cpu_tier_b = saved
    sot.reset()


def run_translated(x, y):
    t = sot.translate.new_translator(records=True)
    with cap.capture(t):
        value = chain(x, y)
    return value, t


def test_the_pool_is_libomp_where_the_build_has_it():
    options = sot._sot.graph.cpu_options()
    assert options["thread_pool"] in ("libomp", "std::thread")
    if os.path.exists("/usr/lib/llvm-14/lib/libomp.so.5"):  # Debian's libomp-dev: make deps installs it
        assert options["thread_pool"] == "libomp"
    assert options["threads_used"] == 4


@pytest.mark.parametrize("tier_b", [False, True], ids=["tierA", "tierB"])
@pytest.mark.parametrize("threads", [1, 2, 3, 4])
def test_any_thread_count_gives_the_one_thread_result(tier_b, threads):
    sot.config.cpu_tier_b = tier_b
    sot.config.cpu_threads = threads
    plain = chain(X, Y)
    for x, y in ((X, Y), (Y, X), (X[:123_457], Y[:123_457])):  # other values and lengths, same types
        for _ in range(3):  # the first run (dtypes checked on one thread), then cached runs
            got, _ = run_translated(x, y)
            if tier_b:
                sot._sot.graph.wait_for_kernels()
            assert same(got, chain(x, y))
    assert same(run_translated(X, Y)[0], plain)


def test_a_forked_child_runs_its_own_threads():
    sot.config.cpu_tier_b = False
    t = sot.translate.new_translator(records=True)
    with cap.capture(t):
        for _ in range(2):  # the first run checks dtypes on one thread; the second runs on the pool
            got = chain(X, Y)
    (graph,) = [g for r in t.records() for g in r["graphs"]]
    assert graph["compiled"].plan()["groups"][0]["tier_a_runs"] == 2
    assert same(got, chain(X, Y))
    pid = os.fork()
    if pid == 0:  # the child: a threaded run, then out without running the parent's atexit handlers
        ok = False
        try:
            ok = same(run_translated(Y, X)[0], chain(Y, X))
        finally:
            os._exit(0 if ok else 3)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            assert os.waitstatus_to_exitcode(status) == 0
            return
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    pytest.fail("the forked child's threaded run hung")


def test_two_python_threads_run_kernels_at_once():
    results = {}

    def worker(name, x, y):
        try:
            results[name] = all(same(run_translated(x, y)[0], chain(x, y)) for _ in range(5))
        except Exception as e:  # noqa: BLE001 - reported through the assertion below
            results[name] = e

    threads = [threading.Thread(target=worker, args=(n, a, b)) for n, a, b in (("xy", X, Y), ("yx", Y, X))]
    for th in threads:
        th.start()
    for th in threads:
        th.join(120)
    assert results == {"xy": True, "yx": True}
