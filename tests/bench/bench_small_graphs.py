"""What a call of a small-array function costs translated, against plain and against numba in the same run:
functions with no loop (a kick-drift step with reductions, a softmax, a clipped blend, a 3-op chain) on arrays of
3, 64 and 1,024 items, and one called with a new float on every call. The translated function is warmed up until
its graph is hot and its choice between tier C and tier B's groups is made (300 calls, a pause for the background
compile, 3,000 calls). Each figure is the best of 7 runs of 5,000 calls.

    python tests/bench/bench_small_graphs.py [--json FILE]
"""

import argparse
import json
import time

import numpy as np

import sot
from sot import capture as cap

try:
    import numba
except ImportError:  # (the kernel's environment has no numba: its column is empty)
    numba = None


def kick_drift(x, v, m, dt):
    r = x - x.mean()
    d = np.sqrt((r * r).sum() + 0.01)
    a = -r / (d * d * d) * m
    v = v + a * dt
    x = x + v * dt
    e = 0.5 * m * (v * v).sum() - m / d
    return x, v, e


def softmax(x):
    e = np.exp(x - x.max())
    return e / e.sum()


def clipped_blend(a, b, w):
    mixed = w * a + (1.0 - w) * b
    return np.minimum(np.maximum(mixed, -1.0), 1.0) + np.abs(a - b) * 0.5


def chain3(a, b):
    return a * b + a - b


def args_of(name, n, k=0):
    x = np.linspace(-1.0, 1.0, n)
    v = np.cos(x)
    return {"kick_drift": (x, v, 1.5, 0.01 * (1 + k % 7)), "softmax": (x,), "clipped_blend": (x, v, 0.25),
            "chain3": (x, v)}[name]


PROGRAMS = {"kick_drift": kick_drift, "softmax": softmax, "clipped_blend": clipped_blend, "chain3": chain3}


def best_per_call(fn, arg_sets, calls=5000, runs=7):
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        for k in range(calls):
            fn(*arg_sets[k % len(arg_sets)])
        best = min(best, (time.perf_counter() - start) / calls)
    return best


def main():
    cap.mark_do_not_translate(best_per_call)
    parser = argparse.ArgumentParser()
    parser.add_argument("--json")
    opts = parser.parse_args()
    rows = []
    for name, fn in PROGRAMS.items():
        for n in (3, 64, 1024):
            for varied in ((False, True) if name == "kick_drift" else (False,)):
                arg_sets = [args_of(name, n, k if varied else 0) for k in range(7)]
                jitted = sot.jit(fn)
                for k in range(300):
                    jitted(*arg_sets[k % 7])
                time.sleep(1.5)
                for k in range(3000):
                    jitted(*arg_sets[k % 7])
                plain = best_per_call(fn, arg_sets)
                ours = best_per_call(jitted, arg_sets)
                peer = None
                if numba is not None:
                    nb = numba.njit(fn)
                    nb(*arg_sets[0])
                    peer = best_per_call(nb, arg_sets)
                label = f"{name}{' (new dt per call)' if varied else ''}"
                rows.append({"program": label, "n": n, "plain_us": plain * 1e6, "ours_us": ours * 1e6,
                             "numba_us": None if peer is None else peer * 1e6})
                nb_text = "-" if peer is None else f"{peer * 1e6:7.2f} us ({peer / plain:.2f}x)"
                print(f"{label:34s} {n:5d}  plain {plain * 1e6:7.2f} us  ours {ours * 1e6:7.2f} us "
                      f"({ours / plain:.2f}x)  numba {nb_text}", flush=True)
    ratios = [r["ours_us"] / r["plain_us"] for r in rows]
    print(f"geometric mean ours / plain: {float(np.exp(np.mean(np.log(ratios)))):.2f}; "
          f"slower than 1.05x plain: {sum(r > 1.05 for r in ratios)} of {len(ratios)}")
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
