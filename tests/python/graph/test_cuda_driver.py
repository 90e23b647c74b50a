"""The CUDA driver as the CUDA backend finds it: loaded at run time, and where there is no driver library, no
working driver or no device, a clean "no CUDA device: <why>" instead of an import failure or a crash."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import sot
from sot import capture as cap

STUB = "/usr/local/cuda/lib64/stubs/libcuda.so"  # the toolkit's link-time stub: loads, but cuInit fails


def status_with(libcuda):
    code = "import sot, json; print(json.dumps(sot._sot.graph.cuda_status()))"
    env = dict(os.environ, SOT_LIBCUDA=libcuda)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_status_is_a_device_list_or_the_reason():
    s = sot._sot.graph.cuda_status()
    if s["available"]:
        assert s["devices"] and all(d["arch"].startswith("sm_") and d["memory_bytes"] > 0 for d in s["devices"])
    else:
        assert s["reason"].startswith("no CUDA device: ") and s["devices"] == []


def test_a_missing_driver_library_is_reported_with_its_name(tmp_path):
    s = status_with(str(tmp_path / "libcuda-missing.so"))
    assert not s["available"] and "libcuda-missing.so" in s["reason"] and "cannot be loaded" in s["reason"]


@pytest.mark.skipif(not os.path.exists(STUB), reason="no CUDA toolkit stub library here")
def test_a_driver_that_cannot_start_is_reported():
    s = status_with(STUB)
    assert not s["available"] and s["reason"].startswith("no CUDA device: cuInit failed")


def chain(a, b):
    return np.sqrt(a * a + b) - 1.0


@pytest.mark.skipif(sot._sot.graph.cuda_status()["available"], reason="a CUDA device is here")
def test_the_cuda_backend_without_a_device_runs_the_function_as_is_with_the_reason():
    assert "cuda" in sot._sot.graph.backends()
    sot.reset()
    f = sot.jit(chain, backend="cuda")
    for n in (4, 7):
        a, b = np.linspace(0, 1, n), np.linspace(1, 2, n)
        got = f(a, b)
        assert type(got) is np.ndarray and np.array_equal(got, chain(a, b))
    stats = cap.stats(chain)
    assert stats["reasons"][0].startswith("no CUDA device: ") and stats["reasons"][0].endswith("(backend 'cuda')")
    assert stats["gave_up"].endswith(stats["reasons"][0])  # and it stops asking: the reason stays
    sot.reset()


def test_the_report_reads_the_cuda_plan():
    # the one plan schema of the grouped runner (graph/exec/grouped_runner.hpp), as the cuda backend fills it:
    # the report reads its names, never the backend's own keys (str(sot.explain(...)) once raised KeyError
    # 'tier_a_runs' on a GPU)
    names = {"backend": "cuda", "kernel_label": "on the device", "paths": ["device"], "fallback": "host",
             "status_name": "cuda", "pooled_bytes": 0}
    fused = {"kind": "fused", "op_names": ["exp", "add"], "why": "", "runs": 3, "hoisted": [], "seconds": 0.0,
             "kernel": "k0 ...", "path_runs": [2], "fallback_runs": 1, "usable": True, "status": "compiled",
             "last_fallback": "inputs not aligned", "device_runs": 2, "host_runs": 1, "on_device": True,
             "cuda": "compiled", "compile_seconds": 0.1, "source": "..."}
    library = {"kind": "library", "op_names": ["matmul"], "why": "a library op", "runs": 3, "hoisted": [],
               "seconds": 0.0}
    plan = dict(names, groups=[fused, library])
    assert sot.report.plan_summary(plan) == "cuda: 2 groups, 1 on the device (device 2 runs, host 1)"
    assert sot.report.plan_lines(plan, kernels=False) == [
        "group 0 fused: exp, add - device 2, host 1 (last: inputs not aligned)",
        "group 1 library: matmul - a library op"]
    assert sot.report.plan_lines(plan)[1:3] == ["  cuda: compiled", "  k0 ..."]
    # a kernel that never runs says why, before its runs
    gone = dict(fused, path_runs=[0], fallback_runs=3, usable=False, status="the device run failed: x",
                last_fallback="the device run failed: x")
    plan = dict(names, groups=[gone, library])
    assert sot.report.plan_summary(plan) == "cuda: 2 groups, 0 on the device (device 0 runs, host 3)"
    assert sot.report.plan_lines(plan, kernels=False)[0] == (
        "group 0 fused: exp, add - the device run failed: x, device 0, host 3 (last: the device run failed: x)")


def test_explain_of_a_jitted_function_uses_its_backend():
    # sot.explain(g, ...) of g = sot.jit(f, backend=...) translates with g's backend (it once showed the default
    # backend's plan whatever g's was)
    a, b = np.linspace(0, 1, 5), np.linspace(1, 2, 5)
    for backend in ("numpy", "cpu"):
        e = sot.explain(sot.jit(chain, backend=backend), a, b)
        assert [g["compiled"].plan()["backend"] for g in e.graphs] == [backend]
        assert np.array_equal(e.value, chain(a, b))
    e = sot.explain(sot.jit(chain, backend="cuda"), a, b)
    if sot._sot.graph.cuda_status()["available"]:
        assert [g["compiled"].plan()["backend"] for g in e.graphs] == ["cuda"]
    else:  # the reason the cuda backend has no device, where explain() shows it
        assert e.graphs == [] and len(e.fallbacks) == 1 and "no CUDA device: " in e.fallbacks[0]
        assert "runs as is: chain: no CUDA device" in str(e)
    assert np.array_equal(e.value, chain(a, b))
    sot.reset()
