"""Loop ops: the translation time and graph size of a time loop as its step count grows (the body is simulated
once, so both stay flat), and the run time per step of the captured loop against eager NumPy, in the same run.

    PYTHONPATH=build/python .venv/kernel/bin/python3 tests/bench/bench_loops.py [--repeat N]

Times are the median of N fresh translations (each a new translator, so nothing comes from the cache) and the
best of N runs at a cache hit."""

import argparse
import statistics
import sys
import time

import numpy as np

import sot
from sot import capture as cap


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


def translate_once(fn, args):
    cap.clear(fn)  # (translations are kept per code object, whichever translator made them)
    translator = sot.translate.new_translator(records=True)
    start = time.perf_counter()
    with cap.capture(translator):
        fn(*args)
    first = time.perf_counter() - start
    records = translator.records()
    graphs = [g for r in records if r["transformed"] is not None for g in r["graphs"]]
    seconds = sum(r["seconds"] for r in records)  # the translations alone (decode, simulate, codegen, compile)
    return seconds, graphs, sum(r["simulated"] for r in records), translator


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    opts = parser.parse_args()
    n = 4096
    base = np.random.default_rng(0).standard_normal(n)
    print(f"python {sys.version.split()[0]}, numpy {np.__version__}, backend {sot.config.backend}, "
          f"arrays of {n} float64")
    print(f"{'program':8} {'steps':>7} {'translate ms':>13} {'simulated':>10} {'graph ops':>10} {'hit ms':>9} "
          f"{'eager ms':>9} {'hit/eager':>10}")
    for fn in (heat, wave):
        for steps in (100, 1000, 10_000):
            firsts, ops = [], None
            for _ in range(opts.repeat):
                first, graphs, simulated, translator = translate_once(fn, (base.copy(), steps))
                firsts.append(first)
                ops = [g["ops"] for g in graphs]
            hits, eagers = [], []
            for _ in range(opts.repeat):
                u = base.copy()
                start = time.perf_counter()
                with cap.capture(translator):
                    fn(u, steps)
                hits.append(time.perf_counter() - start)
                u = base.copy()
                start = time.perf_counter()
                fn(u, steps)
                eagers.append(time.perf_counter() - start)
            hit, eager = min(hits), min(eagers)
            print(f"{fn.__name__:8} {steps:>7} {statistics.median(firsts) * 1e3:>13.2f} {simulated:>10} {str(ops):>10} "
                  f"{hit * 1e3:>9.2f} {eager * 1e3:>9.2f} {hit / eager:>10.2f}")


if __name__ == "__main__":
    main()
