import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))  # harness.py

# SOT_TEST_NUMPY_PROMOTION=weak runs the NumPy tests under NEP 50 (NumPy 2's promotion), which NumPy 1.24
# offers as an experimental state: the translator reads the state and must follow it.
if os.environ.get("SOT_TEST_NUMPY_PROMOTION") == "weak":
    try:
        import numpy

        if hasattr(numpy, "_set_promotion_state"):
            numpy._set_promotion_state("weak")
    except ImportError:
        pass


# SOT_CUDA_CHECK=1: the CUDA backend's compile check over this whole corpus. Every kernel the cpu backend lowers
# is also emitted as CUDA C++ and compiled by NVRTC to an sm_90 cubin; the session fails when one does not compile
# or spills registers. Where NVRTC cannot be loaded the check says so and is skipped. (Turned on when this conftest
# is imported, before the first test: a conftest below the root gets no sessionstart call.)
if os.environ.get("SOT_CUDA_CHECK") == "1":
    import sot as _sot_for_check

    _sot_for_check._sot.graph.cuda_check(True)


_WORKER_REPORTS = []  # the CUDA check's reports of pytest-xdist's workers, read by the controlling process


def _merged_reports(reports):
    """One CUDA check report of the workers' reports (their kernels, sources and compiles added up)."""
    merged = dict(reports[0])
    merged["failed"], merged["spilling"], merged["compile_seconds"], merged["not_emitted"] = [], [], [], {}
    for key in ("kernels", "emitted", "sources", "compiled", "from_disk"):
        merged[key] = sum(r[key] for r in reports)
    merged["max_registers"] = max(r["max_registers"] for r in reports)
    for r in reports:
        merged["failed"] += r["failed"]
        merged["spilling"] += r["spilling"]
        merged["compile_seconds"] += r["compile_seconds"]
        for why, n in r["not_emitted"].items():
            merged["not_emitted"][why] = merged["not_emitted"].get(why, 0) + n
    return merged


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """Under pytest-xdist (make test runs the suites with -n 2): a worker's CUDA check report, kept to be merged."""
    report = getattr(node, "workeroutput", {}).get("cuda_check")
    if report is not None:
        _WORKER_REPORTS.append(report)


def pytest_sessionfinish(session, exitstatus):
    if os.environ.get("SOT_CUDA_CHECK") != "1":
        return
    import sot

    if hasattr(session.config, "workeroutput"):  # a pytest-xdist worker: the controlling process reports
        session.config.workeroutput["cuda_check"] = sot._sot.graph.cuda_check_report()
        return
    report = _merged_reports(_WORKER_REPORTS) if _WORKER_REPORTS else sot._sot.graph.cuda_check_report()
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    write = reporter.write_line if reporter is not None else print
    if not report["nvrtc"][:1].isdigit():
        write(f"CUDA compile check skipped: {report['nvrtc']}")
        return
    seconds = sorted(report["compile_seconds"])
    median = seconds[len(seconds) // 2] if seconds else 0.0
    workers = f" ({len(_WORKER_REPORTS)} workers, their counts added)" if _WORKER_REPORTS else ""
    write(f"CUDA compile check (NVRTC {report['nvrtc']}, {report['arch']}){workers}: {report['kernels']} kernels, "
          f"{report['emitted']} emitted as CUDA, {report['sources']} distinct sources, {report['compiled']} compiled "
          f"({report['from_disk']} sources from the disk cache), {len(report['failed'])} failed, "
          f"{len(report['spilling'])} spilling; at most {report['max_registers']} registers; "
          f"compile median {median * 1e3:.0f} ms, max {(seconds[-1] if seconds else 0) * 1e3:.0f} ms")
    for why, n in sorted(report["not_emitted"].items(), key=lambda kv: -kv[1]):
        write(f"  not emitted ({n}): {why}")
    for f in report["failed"][:5]:
        write(f"FAILED to compile:\n{f['kernel']}\n{f['log']}\n{f['source']}")
    for s in report["spilling"][:5]:
        write(f"SPILLS {s['bytes']} bytes:\n{s['kernel']}")
    if report["failed"] or report["spilling"] or report["compiled"] != report["emitted"]:
        session.exitstatus = 1


@pytest.fixture
def tier_c_sync():
    """Tier C (the cpu backend's native loops) compiled before each loop's first run during the test (``sync``), so
    that every run is native; elsewhere nothing."""
    import sot

    if sot.config.backend != "cpu":
        yield
        return
    before = sot._sot.graph.tier_c()
    sot._sot.graph.tier_c("sync")
    yield
    sot._sot.graph.tier_c(before)


@pytest.fixture
def cuda_device():
    """The cuda backend's device for the test: the simulated one, or the real one where SOT_CUDA_REAL=1 (on a GPU,
    tests/device/cuda_check.sh); every translation reset before and after, the simulated device's counts reset."""
    import sot

    graph = sot._sot.graph
    simulate = os.environ.get("SOT_CUDA_REAL") != "1"
    before = graph.cuda_simulate(simulate)
    sot.reset()
    if simulate:
        graph.cuda_simulated_counts(reset=True)
    yield
    graph.cuda_simulate(before)
    sot.reset()
