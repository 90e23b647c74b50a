"""The CUDA backend's first steps one at a time, each announced before it runs (flushed), so that a crash on a
GPU machine shows which step it was in; run it under cuda-gdb for the native stack:

    cuda-gdb -batch -ex run -ex bt --args python3 tests/device/cuda_diag.py
"""
import faulthandler
import sys

import numpy as np

import sot

faulthandler.enable()


def step(text):
    print("--", text, flush=True)


def f(x, y):
    return np.exp(x - 1.0) * y + np.sqrt(np.abs(x))


def main():
    g = sot._sot.graph
    step(f"status {g.cuda_status()} nvrtc {g.nvrtc_version()}")
    step("nvrtc compile of an empty kernel")
    r = g.cuda_compile('extern "C" __global__ void k() {}')
    step(f"compiled: {sorted(r) if isinstance(r, dict) else r!r}"[:400])
    jf = sot.jit(f, backend="cuda")
    x, y = np.random.default_rng(0).standard_normal((2, 64, 33))
    for i in range(3):
        step(f"call {i}")
        got = jf(x, y)
        step(f"call {i} max error {float(np.max(np.abs(got - f(x, y))))}")
    graphs = sot.explain(f, x, y).graphs
    c = graphs[0]["compiled"] if graphs else None
    keys = ("op_names", "status", "path_runs", "fallback_runs")
    step("no graph" if c is None else str([[gr.get(k) for k in keys] for gr in c.plan()["groups"]]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
