"""The GPU benchmark: ours (`sot.jit(fn, backend="cuda")`) against eager NumPy on the CPU and the GPU peers, in one
run on the GPU machine, with the device's measured copy bandwidths beside them.

    python3 tests/device/gpu_bench.py [--elements N] [--budget S] [--out results.json]

Columns, per function of the cpu corpus (tests/bench/cpu_corpus.py, chains at --elements float64 elements per
array, 32M = 256 MB by default; library functions at --library-elements) and per loop program:

- ``numpy``: eager NumPy on the host (one run after a warm-up; the arrays are large);
- ``ours``: the cuda backend on host arrays (what it takes today), first call (translation + NVRTC) and the best
  of --repeats calls;
- ``cupy``: CuPy eager on device arrays, the corpus function with ``np`` bound to ``cupy``;
- ``fuse``: ``cupy.fuse`` of the same (where it accepts the function);
- ``jax``: ``jax.jit`` on device arrays, ``np`` bound to ``jax.numpy`` (x64 enabled, so float64 stays float64);
- ``torch``: ``torch.compile`` on device tensors, ``np`` bound to ``torch`` (where torch's names and semantics
  match NumPy's), for the functions named by --torch (``all``: every one). (The NumPy function itself under
  ``torch.device("cuda")`` on host arrays failed in torch 2.11: "Dynamo failed to run FX node with fake tensors".)

Device timings synchronise the device around each call (best of --repeats after a warm-up). A function that fails
in a tool is recorded as "error: ..." for it. --budget stops starting new functions after that many seconds, so
the run fits a lease. Writes a table to stdout and every figure to --out.
"""

import argparse
import json
import math
import os
import sys
import time
import types

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "bench"))

import cpu_corpus  # noqa: E402


def rebind(fn, module):
    """fn with its global ``np`` bound to ``module``."""
    scope = dict(fn.__globals__)
    scope["np"] = module
    return types.FunctionType(fn.__code__, scope, fn.__name__, fn.__defaults__, fn.__closure__)


def best_time(call, sync, repeats):
    call()
    sync()
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        sync()
        best = min(best, time.perf_counter() - start)
    return best


class Tools:
    def __init__(self, torch_names):
        self.torch_names = torch_names
        self.cp = self.jax = self.jnp = self.torch = None
        try:
            import cupy
            self.cp = cupy
        except Exception as exc:  # noqa: BLE001
            print("no cupy:", exc)
        try:
            import jax
            jax.config.update("jax_enable_x64", True)
            import jax.numpy as jnp
            self.jax, self.jnp = jax, jnp
        except Exception as exc:  # noqa: BLE001
            print("no jax:", exc)
        try:
            import torch
            self.torch = torch if torch.cuda.is_available() else None
        except Exception as exc:  # noqa: BLE001
            print("no torch:", exc)

    def sync_cp(self):
        self.cp.cuda.Device().synchronize()


def attempt(results, key, thunk):
    try:
        results[key] = thunk()
    except Exception as exc:  # noqa: BLE001
        results[key] = f"error: {type(exc).__name__}: {str(exc)[:160]}"


def bandwidth(tools, out):
    cp = tools.cp
    if cp is None:
        return
    n = 1 << 27  # 1 GiB of float64
    a = cp.ones(n)
    b = cp.empty_like(a)
    t = best_time(lambda: cp.copyto(b, a), tools.sync_cp, 5)
    out["d2d_copy_GBps"] = 2 * a.nbytes / t / 1e9
    host = np.ones(n // 4)
    t = best_time(lambda: cp.asarray(host), tools.sync_cp, 3)
    out["h2d_pageable_GBps"] = host.nbytes / t / 1e9
    pinned_mem = cp.cuda.alloc_pinned_memory(host.nbytes)
    pinned = np.frombuffer(pinned_mem, np.float64, host.size)
    pinned[:] = 1.0
    dev = cp.empty(host.size)
    t = best_time(lambda: dev.set(pinned), tools.sync_cp, 3)
    out["h2d_pinned_GBps"] = host.nbytes / t / 1e9
    t = best_time(lambda: dev.get(out=pinned), tools.sync_cp, 3)
    out["d2h_pinned_GBps"] = host.nbytes / t / 1e9
    del a, b, dev


def moved_bytes(args, result):
    flat = list(args) + (list(result) if isinstance(result, tuple) else [result])
    return sum(getattr(x, "nbytes", 0) for x in flat)


def max_error(want, got):
    """The largest difference of got from want relative to want's largest magnitude (tuples elementwise)."""
    if isinstance(want, tuple):
        return max(max_error(w, g) for w, g in zip(want, got))
    want, got = np.asarray(want, np.float64), np.asarray(got, np.float64)
    scale = max(float(np.max(np.abs(want), initial=0.0)), 1e-300)
    return float(np.max(np.abs(want - got), initial=0.0)) / scale


def ours_summary(row, sot, fn, args, want, got):
    """Whether ours captured graphs (else it ran the function as is) and how far its result is from NumPy's."""
    report = sot.explain(fn, *args)
    row["ours_graphs"] = len(report.graphs)
    row["ours_breaks"] = report.graph_break_count
    row["ours_error"] = max_error(want, got)
    runs = {"device_runs": 0, "host_runs": 0, "compile_seconds": 0.0}
    for graph in report.graphs:
        compiled = graph.get("compiled")
        for group in (compiled.plan().get("groups", []) if compiled is not None else []):
            for key in runs:
                runs[key] += type(runs[key])(group.get(key) or 0)
    row.update(runs)
    row["fallbacks"] = report.fallbacks


def run_function(tools, name, fn, args, repeats, sot):
    want = fn(*args)
    row = {"name": name, "bytes": moved_bytes(args, want)}
    row["numpy"] = best_time(lambda: fn(*args), lambda: None, 1)
    jitted = sot.jit(fn, backend="cuda")

    def ours_first():
        start = time.perf_counter()
        jitted(*args)
        return time.perf_counter() - start
    attempt(row, "ours_first", ours_first)
    attempt(row, "ours", lambda: best_time(lambda: jitted(*args), lambda: None, repeats))
    attempt(row, "ours_check", lambda: ours_summary(row, sot, fn, args, want, jitted(*args)))
    cp = tools.cp
    if cp is not None:
        dev = [cp.asarray(a) for a in args]
        cfn = rebind(fn, cp)
        attempt(row, "cupy", lambda: best_time(lambda: cfn(*dev), tools.sync_cp, repeats))
        fused = cp.fuse(cfn)
        attempt(row, "fuse", lambda: best_time(lambda: fused(*dev), tools.sync_cp, repeats))
        del dev
    if tools.jax is not None:
        jdev = [tools.jnp.asarray(a) for a in args]
        jfn = tools.jax.jit(rebind(fn, tools.jnp))
        attempt(row, "jax", lambda: best_time(lambda: tools.jax.block_until_ready(jfn(*jdev)), lambda: None,
                                              repeats))
        del jdev
    if tools.torch is not None and (name in tools.torch_names or "all" in tools.torch_names):
        torch = tools.torch
        tdev = [torch.as_tensor(a, device="cuda") for a in args]
        tfn = torch.compile(rebind(fn, torch))
        attempt(row, "torch", lambda: best_time(lambda: tfn(*tdev), torch.cuda.synchronize, repeats))
        del tdev
    return row


def heat(u, steps):
    for _ in range(steps):
        u[1:-1] = u[1:-1] + 0.1 * (u[2:] - 2 * u[1:-1] + u[:-2])
    return u


def wave(u0, steps):
    u_prev = u0.copy()
    u = u0.copy()
    u_next = np.zeros_like(u0)
    for _ in range(steps):
        u_next[1:-1] = 2 * u[1:-1] - u_prev[1:-1] + 0.25 * (u[2:] - 2 * u[1:-1] + u[:-2])
        u_prev, u, u_next = u, u_next, u_prev
    return u


def jacobi(u, steps):
    for _ in range(steps):
        new = u.copy()
        new[1:-1] = 0.5 * (u[2:] + u[:-2])
        u = new
    return u


def jacobi_until(u0, steps):
    # a while loop on a convergence test (never met here: `steps` steps), its test read from the device each step
    u = u0.copy()
    err = 1.0
    it = 0
    while err > 1e-300 and it < steps:
        new = u.copy()
        new[1:-1] = 0.5 * (u[2:] + u[:-2])
        err = np.sqrt(((new - u) ** 2).sum())
        u = new
        it += 1
    return u


def jax_heat(jax, jnp):
    def step(_, u):
        return u.at[1:-1].set(u[1:-1] + 0.1 * (u[2:] - 2 * u[1:-1] + u[:-2]))
    return jax.jit(lambda u, steps: jax.lax.fori_loop(0, steps, step, u), static_argnums=1)


def moved(sot, call):
    """What one call copied each way (the residency's arrays, not the groups' flag words)."""
    counts = sot._sot.graph.cuda_transfer_counts
    counts(reset=True)
    call()
    c = counts(reset=True)
    return f"{c['arrays_in']} in {c['bytes_in'] >> 10} KB, {c['arrays_out']} out {c['bytes_out'] >> 10} KB"


def run_loop(tools, name, fn, n, steps, repeats, sot):
    base = np.random.default_rng(0).standard_normal(n)
    row = {"name": f"{name} {n} x {steps}", "bytes": 2 * base.nbytes}
    row["numpy"] = best_time(lambda: fn(base.copy(), steps), lambda: None, 1)
    jitted = sot.jit(fn, backend="cuda")

    def ours_first():
        start = time.perf_counter()
        jitted(base.copy(), steps)
        return time.perf_counter() - start
    attempt(row, "ours_first", ours_first)
    attempt(row, "ours", lambda: best_time(lambda: jitted(base.copy(), steps), lambda: None, repeats))
    attempt(row, "ours_check", lambda: ours_summary(row, sot, fn, (base.copy(), steps), fn(base.copy(), steps),
                                                    jitted(base.copy(), steps)))
    attempt(row, "moved", lambda: moved(sot, lambda: jitted(base.copy(), steps)))
    if tools.cp is not None:
        dev = tools.cp.asarray(base)
        cfn = rebind(fn, tools.cp)
        attempt(row, "cupy", lambda: best_time(lambda: cfn(dev.copy(), steps), tools.sync_cp, repeats))
    if tools.jax is not None and name == "heat":
        jfn = jax_heat(tools.jax, tools.jnp)
        jdev = tools.jnp.asarray(base)
        attempt(row, "jax", lambda: best_time(lambda: tools.jax.block_until_ready(jfn(jdev, steps)),
                                              lambda: None, repeats))
    return row


COLUMNS = ["numpy", "ours_first", "ours", "cupy", "fuse", "jax", "torch"]


def show(row):
    cells = []
    for key in COLUMNS:
        value = row.get(key)
        if value is None:
            cells.append(f"{'-':>10}")
        elif isinstance(value, str):
            cells.append(f"{'error':>10}")
        else:
            cells.append(f"{value * 1e3:10.3f}")
    ours = row.get("ours")
    gbps = f"{row['bytes'] / ours / 1e9:7.1f}" if isinstance(ours, float) else f"{'-':>7}"
    check = f" {row.get('ours_graphs', '?')}g {row.get('ours_breaks', '?')}b err {row.get('ours_error', -1):.1e}" \
        f" dev/host runs {row.get('device_runs', '?')}/{row.get('host_runs', '?')}" \
        f" nvrtc {row.get('compile_seconds', 0.0) * 1e3:.0f} ms" + (f" moved {row['moved']}" if "moved" in row else "")
    print(f"{row['name'][:24]:24} " + " ".join(cells) + f" {gbps}" + check, flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--elements", type=int, default=1 << 25)
    parser.add_argument("--library-elements", type=int, default=1 << 22)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--budget", type=float, default=150.0)
    parser.add_argument("--only", default="")
    parser.add_argument("--torch", default="axpy,gelu,softmax")
    parser.add_argument("--out", default="")
    opts = parser.parse_args()
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # (JAX takes 75% of the device otherwise)
    os.environ.setdefault("SOT_BACKEND", "cuda")  # (before sot is imported: explain() translates with it)
    import sot
    start = time.perf_counter()
    tools = Tools(set(opts.torch.split(",")) if opts.torch else set())
    report = {"numpy": np.__version__, "python": sys.version.split()[0], "elements": opts.elements, "rows": []}
    bandwidth(tools, report)
    print({k: round(v, 1) for k, v in report.items() if k.endswith("GBps")}, flush=True)
    print(f"{'function (ms)':24} " + " ".join(f"{c:>10}" for c in COLUMNS) + " ours GB/s  graphs, breaks, error", flush=True)
    only = set(opts.only.split(",")) if opts.only else None
    loops = [("heat", heat, 1 << 20, 100), ("wave", wave, 1 << 20, 100), ("heat", heat, 1 << 16, 500),
             ("jacobi", jacobi, 1 << 20, 100), ("jacobi_until", jacobi_until, 1 << 20, 100)]
    for name, fn, n, steps in loops:
        if only and name not in only:
            continue
        row = run_loop(tools, name, fn, n, steps, opts.repeats, sot)
        report["rows"].append(row)
        show(row)
    for entry in cpu_corpus.CORPUS:
        name = entry["name"]
        if only and name not in only:
            continue
        if time.perf_counter() - start > opts.budget:
            print(f"budget of {opts.budget} s spent: stopped before {name}", flush=True)
            break
        n = opts.library_elements if entry["kind"] == "library" else opts.elements
        row = run_function(tools, name, entry["fn"], cpu_corpus.inputs(name, n), opts.repeats, sot)
        row["kind"] = entry["kind"]
        report["rows"].append(row)
        show(row)
    errors = {r["name"]: {k: v for k, v in r.items() if isinstance(v, str) and v.startswith("error")}
              for r in report["rows"]}
    for name, errs in errors.items():
        for key, text in errs.items():
            print(f"{name} {key}: {text}")
    report["seconds"] = time.perf_counter() - start
    if opts.out:
        with open(opts.out, "w") as fh:
            json.dump(report, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
