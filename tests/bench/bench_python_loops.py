"""Loops of Python numbers (no arrays in them) under ``sot.jit`` against plain CPython: each program's best of
``--repeat`` calls at cache hits, plain and translated in turns, and the ratio (translated / plain time: > 1 is
slower). These are the loops a loop op would make slower than CPython (a graph call per step from Python
objects): the translator leaves them to CPython or unrolls them (docs/translator.md, "Loops").

    python tests/bench/bench_python_loops.py [--repeat 7]
"""

import argparse
import time

import sot


def counter(n):
    s = 0
    for i in range(n):
        s += i * i
    return s


def while_float(n):
    k = 0
    s = 0.0
    while k < n:
        s += k * 0.5
        k += 1
    return s


def escape(cr, ci, max_iter):
    zr = zi = 0.0
    n = 0
    while n < max_iter and zr * zr + zi * zi <= 4.0:
        zr, zi = zr * zr - zi * zi + cr, 2 * zr * zi + ci
        n += 1
    return n


def escape_rows(w):
    out = 0
    for i in range(w):
        out += escape(-0.5 + i * 0.001, 0.1, 50)
    return out


def ema(values):
    s = 0.0
    for x in values:
        s = 0.9 * s + 0.1 * x
    return s


def tiny(a):
    return a + 1


def tiny_calls(n):
    s = 0
    for _ in range(n):
        s = tiny(s)
    return s


def short_fold():
    total = 0
    for i in range(20):
        total += i * i
    return total


PROGRAMS = [
    ("counter: for i in range(10000): s += i * i", counter, (10000,)),
    ("while k < n: float sum, 10000 steps", while_float, (10000,)),
    ("escape-time while helper called 2000 times", escape_rows, (2000,)),
    ("exponential moving average over a list", ema, ([i / 10000 for i in range(10000)],)),
    ("a one-line helper called 100000 times, a new int each call", tiny_calls, (100000,)),
    ("a 20-step loop on constants (folds)", short_fold, ()),
]


def best(fn, args, repeat):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t)
    return min(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    a = ap.parse_args()
    print(f"{'program':62s} {'plain ms':>9s} {'jit ms':>9s} {'jit/plain':>10s}")
    for label, fn, args in PROGRAMS:
        jit = sot.jit(fn)
        assert jit(*args) == fn(*args)
        for _ in range(3):  # translations, failures and abandonment settle
            jit(*args)
        plain_times, jit_times = [], []
        for _ in range(3):  # in turns
            plain_times.append(best(fn, args, a.repeat))
            jit_times.append(best(jit, args, a.repeat))
        tp, tj = min(plain_times), min(jit_times)
        print(f"{label:62s} {tp * 1e3:9.3f} {tj * 1e3:9.3f} {tj / tp:9.2f}x")


if __name__ == "__main__":
    main()
