"""The CPU backend against eager NumPy, the reference backend and the peers, on the corpus of cpu_corpus.py at
two sizes (cache-resident and >= 64 MB per array), with the memory-bandwidth floor measured in the same run.

Every time is the best of several runs (one warm-up call first: translation and compilation are not timed); the
rounds of each sot column alternate with rounds of eager NumPy, whose time is the best of all its rounds.
Columns: ``sot-numpy`` (the reference backend), ``sot-cpu-A`` (the cpu backend with tier B off), ``sot-cpu`` (tier
B where emitted, after its background compile finished; ``B:k/n`` after a row: k of its n fused kernels on tier B).
Ratios are speedups over eager NumPy (> 1: faster). The floor is the bytes the function must move (its input
and output arrays once) at the bandwidth of ``np.add(b, c, out=a)`` on 64 MB arrays. Results are also checked:
the cpu backend's must equal eager NumPy's bit for bit.

    python tests/bench/bench_cpu.py [--small N] [--large N] [--repeat K] [--only NAME,...] [--peers]
        [--json FILE]

``--peers`` adds numba (``njit(parallel=True)``, or plain ``njit`` where the parallel form does not compile), jax.jit
(CPU) and torch.compile (inductor, CPU) where importable (numexpr is always tried).
"""

import argparse
import json
import math
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import cpu_corpus  # noqa: E402

import sot  # noqa: E402

# The backends' own times: no hit runs the function's original code because it ran faster (adaptive hits,
# SOT_ADAPTIVE), which would make every slower column read as eager NumPy.
sot.config.adaptive = False
from sot import capture as cap  # noqa: E402


def calls_per_round(fn, min_time):
    """How many calls of fn take at least `min_time` (after one warm-up call)."""
    fn()
    n = 1
    while True:
        t = time.perf_counter()
        for _ in range(n):
            fn()
        if time.perf_counter() - t >= min_time or n >= 1 << 16:
            return n
        n *= 4


def round_time(fn, n):
    t = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t) / n


def best(fn, repeat, min_time=0.02):
    """Best time of one call, over `repeat` rounds of enough calls to take `min_time`."""
    n = calls_per_round(fn, min_time)
    return min(round_time(fn, n) for _ in range(repeat))


def best_with_eager(fn, eager, repeat, min_time=0.02):
    """Best times of fn and of eager over `repeat` rounds of each, taken in turn: on a noisy machine
    the ratio of the two then compares the same stretch of time."""
    n = calls_per_round(eager, min_time)
    times, eager_times = [], []
    for _ in range(repeat):
        eager_times.append(round_time(eager, n))
        times.append(round_time(fn, n))
    return min(times), min(eager_times)


def bandwidth(repeat):
    n = 8 * 1024 * 1024
    a, b, c = np.empty(n), np.ones(n), np.ones(n)
    t = best(lambda: np.add(b, c, out=a), repeat)
    return 3 * n * 8 / t


def arrays_of(value):
    if isinstance(value, np.ndarray):
        return [value]
    if isinstance(value, (tuple, list)):
        return [a for v in value for a in arrays_of(v)]
    return []


def same(a, b):
    if isinstance(a, tuple):
        return isinstance(b, tuple) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray):
        return (isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape
                and bool(np.array_equal(a, b, equal_nan=True)))
    return type(a) is type(b) and (a == b or (a != a and b != b))


def translated(fn, backend, tier_b=False):
    # Translations are cached per code object whatever translator made them: forget the other backend's.
    sot.reset()
    sot.config.cpu_tier_b = tier_b
    t = sot.translate.new_translator(backend=backend, records=True)
    # the callable sot.jit makes (the capture scope opened in C), with this translator
    run = cap.jit_function(fn, lambda _name: t, sot.config, backend)
    run.translator = t
    return run


def tier_b_state(run):
    """(kernels ready on tier B, kernels not emitted, compile seconds of those compiled now)."""
    ready = not_emitted = 0
    seconds = []
    for r in run.translator.records():
        for g in r["graphs"]:
            for group in g["compiled"].plan().get("groups", []):
                status = group.get("tier_b", "")
                if status.startswith("ready"):
                    ready += 1
                    if "compiled in" in status:
                        seconds.append(float(status.split("compiled in ")[1].split(" s")[0]))
                elif status.startswith("not emitted"):
                    not_emitted += 1
    return ready, not_emitted, seconds


def peer_runners(entry, args, peers):
    out = {}
    if entry["numexpr"] is not None:
        try:
            import numexpr as ne
            names = entry["fn"].__code__.co_varnames[:len(args)]
            local = dict(zip(names, args))
            expr = entry["numexpr"]
            if "lo" in expr:
                local.update(lo=-1.0, hi=1.0, scale=3.0, shift=0.5)
            ne.evaluate(expr, local_dict=local)
            # evaluate() parses its string at each call; re_evaluate() reruns the last expression compiled
            # (this one: `best` calls it right after), as numexpr users with a hot expression do.
            out["numexpr"] = lambda: ne.re_evaluate(local_dict=local)
        except Exception:  # noqa: BLE001 - a peer that cannot run this function is left out
            pass
    if "numba" in peers:
        try:
            import numba
            for options in ({"parallel": True}, {}):
                try:
                    nfn = numba.njit(**options)(entry["fn"])
                    nfn(*args)
                    break
                except Exception:  # noqa: BLE001 - try the next form
                    nfn = None
            if nfn is not None:
                out["numba"] = lambda: nfn(*args)
        except Exception:  # noqa: BLE001
            pass
    if "jax" in peers:
        try:
            import jax
            import jax.numpy as jnp
            jax.config.update("jax_enable_x64", True)
            src = entry["fn"]
            g = dict(src.__globals__, np=jnp)
            jfn = jax.jit(type(src)(src.__code__, g, src.__name__, src.__defaults__, src.__closure__))
            jargs = [jnp.asarray(a) for a in args]
            jax.block_until_ready(jfn(*jargs))
            out["jax.jit"] = lambda: jax.block_until_ready(jfn(*jargs))
        except Exception:  # noqa: BLE001
            pass
    if "torch" in peers:
        try:
            import torch
            import torch._dynamo
            torch.set_num_threads(os.cpu_count())
            torch._dynamo.config.cache_size_limit = 64
            # NumPy in, NumPy out: dynamo traces the NumPy calls into torch ops and inductor compiles them.
            cfn = torch.compile(entry["fn"], backend="inductor")
            cfn(*args)
            out["torch.compile"] = lambda: cfn(*args)
        except Exception:  # noqa: BLE001
            pass
    return out


def measure(entry, n, repeat, peers, bw):
    args = cpu_corpus.inputs(entry["name"], n)
    fn = entry["fn"]
    expected = fn(*args)
    row = {"name": entry["name"], "kind": entry["kind"], "n": max(a.size for a in args)}
    eager = best(lambda: fn(*args), repeat)
    for column, backend, tier_b in (("sot-numpy", "numpy", False), ("sot-cpu-A", "cpu", False),
                                    ("sot-cpu", "cpu", True)):
        run = translated(fn, backend, tier_b)
        got = run(*args)
        if tier_b:
            sot._sot.graph.wait_for_kernels()  # the compile runs in the background; timed runs are warm
            row["tier-b"] = tier_b_state(run)
        row[f"{column}-exact"] = same(got, expected) and same(run(*args), expected)
        row[column], eager_now = best_with_eager(lambda: run(*args), lambda: fn(*args), repeat)
        eager = min(eager, eager_now)
    row["eager"] = eager
    sot.reset()
    sot.config.cpu_tier_b = True
    for name, run in peer_runners(entry, args, peers).items():
        row[name] = best(run, repeat)
    moved = sum(a.nbytes for a in args) + sum(a.nbytes for a in arrays_of(expected))
    row["floor"] = moved / bw
    return row


def table(rows, columns):
    head = f"{'function':18s} {'kind':8s} {'elements':>10s} {'eager ms':>9s} " + " ".join(
        f"{c:>13s}" for c in columns) + f" {'floor/cpu':>9s}"
    lines = [head, "-" * len(head)]
    for r in rows:
        cells = []
        for c in columns:
            cells.append(f"{r['eager'] / r[c]:12.2f}x" if c in r else f"{'-':>13s}")
        exact = all(r.get(f"{c}-exact", True) for c in ("sot-numpy", "sot-cpu-A", "sot-cpu"))
        mark = "" if exact else "  NOT EXACT"
        ready, not_emitted, _ = r.get("tier-b", (0, 0, []))
        mark += f"  B:{ready}/{ready + not_emitted}" if ready + not_emitted else ""
        lines.append(f"{r['name']:18s} {r['kind']:8s} {r['n']:10d} {r['eager'] * 1e3:9.3f} " + " ".join(cells)
                     + f" {r['floor'] / r['sot-cpu']:9.2f}{mark}")
    return "\n".join(lines)


def geomean(values):
    values = list(values)
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def summary(rows, columns):
    out = []
    chains = [r for r in rows if r["kind"] == "chain"]
    for c in columns:
        have = [r for r in chains if c in r]
        if have:
            out.append(f"  chains, geometric mean speedup over eager: {c} {geomean(r['eager'] / r[c] for r in have):.2f}x"
                       f" ({len(have)} functions)")
    fl = [r["floor"] / r["sot-cpu"] for r in chains]
    if fl:
        out.append(f"  chains, sot-cpu time / floor: geometric mean {1 / geomean(fl):.2f}x the floor")
    singles = [r for r in rows if r["kind"] in ("single", "library")]
    if singles:
        worst = min(singles, key=lambda r: r["eager"] / r["sot-cpu"])
        out.append(f"  single ops and library-bound: worst sot-cpu ratio {worst['eager'] / worst['sot-cpu']:.2f}x"
                   f" ({worst['name']})")
    compiles = [s for r in rows for s in r.get("tier-b", (0, 0, []))[2]]
    if compiles:
        out.append(f"  tier B cold compiles: {len(compiles)}, median {sorted(compiles)[len(compiles) // 2]:.2f} s, "
                   f"max {max(compiles):.2f} s (0 when the kernel came from the disk cache)")
    inexact = [r["name"] for r in rows
               if not all(r.get(f"{c}-exact", True) for c in ("sot-numpy", "sot-cpu-A", "sot-cpu"))]
    out.append("  sot results (numpy, cpu tier A, cpu) bit-exact with eager NumPy: "
               + ("all" if not inexact else "NOT " + ", ".join(inexact)))
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", type=int, default=1 << 14)
    ap.add_argument("--large", type=int, default=1 << 23)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--only", default="")
    ap.add_argument("--peers", action="store_true")
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    peers = ("numba", "jax", "torch") if a.peers else ()
    only = set(filter(None, a.only.split(",")))
    bw = bandwidth(a.repeat)
    print(f"NumPy {np.__version__}, {os.cpu_count()} cores; np.add(b, c, out=a) on 64 MB arrays: "
          f"{bw / 1e9:.1f} GB/s (the floor's bandwidth)")
    results = {}
    for label, n in (("cache-resident", a.small), (">= 64 MB per array", a.large)):
        rows = []
        for entry in cpu_corpus.CORPUS:
            if only and entry["name"] not in only:
                continue
            rows.append(measure(entry, n, a.repeat, peers, bw))
        columns = ["sot-numpy", "sot-cpu-A", "sot-cpu"] + sorted({k for r in rows for k in r} & {
            "numexpr", "numba", "jax.jit", "torch.compile"})
        print(f"\n== {label}: about {n} elements (speedup over eager NumPy, best of {a.repeat})")
        print(table(rows, columns))
        print(summary(rows, columns))
        results[label] = rows
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"bandwidth": bw, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
