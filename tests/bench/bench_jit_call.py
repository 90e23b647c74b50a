"""What a call of a ``sot.jit`` function costs at a cache hit, against the plain call in the same run: a trivial
3-argument function (no graph: the entry, the frame hook and the guards), a 16-element and a 16K-element ``a + b``
(one graph op on the default backend), and a ``with sot.capture(...)`` scope around a plain call for scale. Each
figure is the best of 9 runs of 20000 calls, the plain and jit runs taken in turn.

    python tests/bench/bench_jit_call.py
"""

import time

import numpy as np

import sot
from sot import capture as cap


def trivial(a, b, c):
    return a


def add(a, b):
    return a + b


def best_per_call_pair(plain, jitted, args, calls=20000, runs=9):
    def run(fn):
        start = time.perf_counter()
        for _ in range(calls):
            fn(*args)
        return (time.perf_counter() - start) / calls

    plain_times, jit_times = [], []
    for _ in range(runs):
        plain_times.append(run(plain))
        jit_times.append(run(jitted))
    return min(plain_times), min(jit_times)


def main():
    cap.mark_do_not_translate(best_per_call_pair)  # the timing loop runs as is
    sot.reset()
    cases = [("trivial(a, b, c): no graph", trivial, (1, 2.0, "x"))]
    for n in (16, 16384):
        a, b = np.random.default_rng(0).random((2, n))
        cases.append((f"a + b, {n} float64 ({sot.config.backend})", add, (a, b)))
    print(f"per call at a cache hit, best of 9 x 20000 calls (Python {'.'.join(map(str, __import__('sys').version_info[:3]))}, "
          f"NumPy {np.__version__})")
    for label, fn, args in cases:
        jitted = sot.jit(fn)
        jitted(*args)
        jitted(*args)
        plain, jit = best_per_call_pair(fn, jitted, args)
        assert cap.stats(fn)["hits"] > 0
        print(f"  {label:34s} plain {plain * 1e9:8.0f} ns   jit {jit * 1e9:8.0f} ns   +{(jit - plain) * 1e9:5.0f} ns "
              f"({plain / jit:.2f}x)")


if __name__ == "__main__":
    main()
