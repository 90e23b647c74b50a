"""The loop corpus (loop_corpus.py) translated against plain CPython, and against numba's ``njit`` of the same
source and ``jax.jit`` where they are importable (the peers environment, .venv/peers), in one run.

    PYTHONPATH=build/python .venv/kernel/bin/python3 tests/bench/bench_loop_corpus.py [--only a,b] [--repeat N]
        [--json FILE]

For each program at its small and large size: the best of ``--repeat`` timings of a call (fresh copies of the
inputs for each, made outside the timing: several programs write into their inputs; calls under 0.2 ms timed in
batches of up to 200, ``best_of``) of plain, ours (``sot.jit``, the
translation's own time: adaptive hits off unless --adaptive, tier B's kernels and tier C's loops compiled before the
timing), numba (compiled before the timing; "-" where it does not compile the program) and jax.jit (of the same
source with jax.numpy for np, on the whole-array time steps and iterations; "-" where it does not trace). Ours must equal plain (exact types; floats within
1e-9 relative): a difference is printed and counted. ``whole`` says whether the first call's translation held
the whole function in graphs (graphs, no break, nothing run as is). The summary: per size, the geometric mean of
ours / plain, the programs slower than 1.05x plain, and ours against numba on the programs both ran."""

import argparse
import copy
import json
import math
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import loop_corpus  # noqa: E402

import sot  # noqa: E402
from sot import capture as cap  # noqa: E402



def best_of(fn, make_args, repeat):
    """The best of ``repeat`` timings of one call. A call under 0.2 ms is timed in a batch of calls (each on fresh
    inputs, made before the batch) that lasts about 0.2 ms, the batch's time divided by its count: a single call of
    a few microseconds is at the clock's and the machine's noise (one untimed call sizes the batch)."""
    args = make_args()
    start = time.perf_counter()
    fn(*args)
    once = time.perf_counter() - start
    count = max(1, min(200, int(2e-4 / max(once, 1e-7))))
    best = math.inf
    for _ in range(repeat):
        batch = [make_args() for _ in range(count)]
        start = time.perf_counter()
        for args in batch:
            fn(*args)
        best = min(best, (time.perf_counter() - start) / count)
    return best


cap.mark_do_not_translate(best_of)


def same(a, b):
    if type(a) is not type(b):
        return False
    if isinstance(a, tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray):
        if a.dtype != b.dtype or a.shape != b.shape:
            return False
        if a.dtype.kind in "fc":
            return bool(np.allclose(a, b, rtol=1e-9, atol=1e-12, equal_nan=True))
        return bool(np.array_equal(a, b))
    if isinstance(a, (float, np.floating)):
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)
    return a == b


def numba_of(fn):
    try:
        import numba
    except ImportError:
        return None
    return numba.njit(cache=False)(fn)


# jax.jit of the same source, its ``np`` bound to jax.numpy and its arrays made jax arrays: only the programs of
# whole-array time steps and iterations are expressible so (the others write single elements or slices in place,
# which jax arrays refuse, or trace a Python loop of thousands of scalar steps); trip counts stay Python ints.
JAX_KINDS = ("steps", "iterate")
JAX_SECONDS = 60


def jax_of(fn):
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    import types

    jax.config.update("jax_enable_x64", True)
    source = types.FunctionType(fn.__code__, {**fn.__globals__, "np": jnp}, fn.__name__, fn.__defaults__,
                                fn.__closure__)
    compiled = {}  # by the positions of the Python-number arguments (static: loop counts)

    def call(*args):
        numbers = tuple(i for i, a in enumerate(args) if not isinstance(a, np.ndarray))
        if numbers not in compiled:
            compiled[numbers] = jax.jit(source, static_argnums=numbers)
        out = compiled[numbers](*[jnp.asarray(a) if isinstance(a, np.ndarray) else a for a in args])
        return jax.block_until_ready(out)

    return call


def run_one(entry, n, repeat, use_numba, warm=0, use_jax=False):
    fn, make = entry["fn"], entry["make"]
    base = make(n)

    def fresh():
        return copy.deepcopy(base)

    row = {"name": entry["name"], "kind": entry["kind"], "n": n}
    want = fn(*fresh())
    report = sot.explain(fn, *fresh())
    row["whole"] = report.graph_count > 0 and report.graph_break_count == 0 and not report.fallbacks
    row["breaks"] = [b.reason for b in report.break_reasons][:2]
    jitted = sot.jit(fn)
    got = jitted(*fresh())
    sot._sot.graph.wait_for_kernels()
    got = jitted(*fresh())
    for _ in range(warm):  # (adaptive hits: past the first round, at the 64th hit)
        jitted(*fresh())
    row["correct"] = same(want, got)
    row["plain"] = best_of(fn, fresh, repeat)
    row["ours"] = best_of(jitted, fresh, repeat)
    row["numba"] = None
    if use_numba:
        compiled = numba_of(fn)
        try:
            compiled(*fresh())
            row["numba"] = best_of(compiled, fresh, repeat)
        except Exception as exc:  # noqa: BLE001 (numba's typing errors and the like)
            row["numba_error"] = f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:100]}"
    row["jax"] = None
    if use_jax and entry["kind"] in JAX_KINDS:
        row["jax"], row["jax_error"] = jax_in_child(entry["name"], n, repeat)
    return row


def jax_timing(name, n, repeat):
    """(best time, error) of jax.jit of program ``name`` at size ``n`` (run in a spawned child)."""
    entry = next(e for e in loop_corpus.CORPUS if e["name"] == name)
    base = entry["make"](n)
    compiled = jax_of(entry["fn"])
    try:
        compiled(*copy.deepcopy(base))  # (compiled for these shapes and Python numbers)
        return best_of(compiled, lambda: copy.deepcopy(base), repeat), None
    except Exception as exc:  # noqa: BLE001 (tracer errors: not expressible so)
        return None, f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:100]}"


def jax_in_child(name, n, repeat, timeout=JAX_SECONDS):
    """jax_timing in a spawned process, given up after ``timeout`` seconds (XLA compiles a traced loop of
    hundreds of steps for minutes)."""
    import multiprocessing

    with multiprocessing.get_context("spawn").Pool(1) as pool:
        job = pool.apply_async(jax_timing, (name, n, repeat))
        try:
            return job.get(timeout=timeout)
        except multiprocessing.TimeoutError:
            pool.terminate()
            return None, f"not compiled within {timeout} s"


def geomean(values):
    values = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--json", default="")
    ap.add_argument("--no-numba", action="store_true")
    ap.add_argument("--no-jax", action="store_true")
    ap.add_argument("--adaptive", action="store_true",
                    help="adaptive hits on, 96 calls before the timing (the user's time once the first round"
                    " has chosen the faster code)")
    opts = ap.parse_args()
    sot.config.adaptive = opts.adaptive  # off: the translation's own time
    only = set(opts.only.split(",")) if opts.only else None
    use_numba = not opts.no_numba and numba_of(lambda: 0) is not None
    use_jax = not opts.no_jax and jax_of(lambda: 0) is not None
    print(f"python {sys.version.split()[0]}, numpy {np.__version__}, sot backend {sot.config.backend}, "
          f"numba {'yes' if use_numba else 'not importable'}, jax {'yes' if use_jax else 'not importable'}; "
          f"best of {opts.repeat} timings (calls under 0.2 ms in batches)")
    print(f"{'program':22} {'kind':8} {'n':>7} {'plain ms':>9} {'ours ms':>9} {'ours/plain':>10} "
          f"{'numba ms':>9} {'jax ms':>9} {'whole':>6}")
    rows = []
    for entry in loop_corpus.CORPUS:
        if only and entry["name"] not in only:
            continue
        for n in entry["sizes"]:
            row = run_one(entry, n, opts.repeat, use_numba, warm=96 if opts.adaptive else 0, use_jax=use_jax)
            rows.append(row)
            numba = f"{row['numba'] * 1e3:9.3f}" if row["numba"] else f"{'-':>9}"
            jaxt = f"{row['jax'] * 1e3:9.3f}" if row["jax"] else f"{'-':>9}"
            flag = "" if row["correct"] else "  DIFFERS"
            print(f"{row['name']:22} {row['kind']:8} {n:7} {row['plain'] * 1e3:9.3f} {row['ours'] * 1e3:9.3f} "
                  f"{row['ours'] / row['plain']:10.2f} {numba} {jaxt} {'yes' if row['whole'] else 'no':>6}{flag}",
                  flush=True)
    for size, label in ((0, "small"), (1, "large")):
        sized = [r for r in rows if r["n"] == next(e for e in loop_corpus.CORPUS if e["name"] == r["name"])
                 ["sizes"][size]]
        if not sized:
            continue
        ratio = geomean([r["ours"] / r["plain"] for r in sized])
        slower = [r["name"] for r in sized if r["ours"] > 1.05 * r["plain"]]
        both = [r for r in sized if r["numba"]]
        print(f"{label}: ours/plain geometric mean {ratio:.2f} over {len(sized)} programs; slower than 1.05x plain: "
              f"{len(slower)} {slower}")
        if both:
            print(f"  on the {len(both)} numba runs: ours/plain {geomean([r['ours'] / r['plain'] for r in both]):.2f}, "
                  f"numba/plain {geomean([r['numba'] / r['plain'] for r in both]):.2f}; ours faster on "
                  f"{sum(r['ours'] < r['numba'] for r in both)}")
        with_jax = [r for r in sized if r.get("jax")]
        if with_jax:
            print(f"  on the {len(with_jax)} jax runs: ours/plain "
                  f"{geomean([r['ours'] / r['plain'] for r in with_jax]):.2f}, jax/plain "
                  f"{geomean([r['jax'] / r['plain'] for r in with_jax]):.2f}; ours faster on "
                  f"{sum(r['ours'] < r['jax'] for r in with_jax)}")
    print(f"whole functions in graphs: {sum(r['whole'] for r in rows)} of {len(rows)} runs; "
          f"results differing from plain: {sum(not r['correct'] for r in rows)}")
    if opts.json:
        with open(opts.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0 if all(r["correct"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
