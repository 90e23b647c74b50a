"""NumPy capture benchmark: a 20-op function (elementwise, reductions, matmul) translated and run from the cache,
against calling it plainly, in the same run; and a 10-op elementwise chain on 4M-element arrays, where the NumPy
reference backend must not be slower than eager NumPy (which elides temporaries; the backend reuses dead
intermediates with ``out=`` instead). Reports:

- translation time of the first call (the translator's own time, from its records) and the first call's wall time;
- per-call time plainly and translated from the cache (guards, the eval-frame hook and the compiled graph call
  included), their ratio, and the compiled graph called alone (so the guards' and hook's share), for small arrays
  (overhead-bound) and larger ones. Times are the best of 7 runs;
- for the chain: eager, the compiled graph alone and the translated call (best of 7), their ratios, and the memory
  traffic rate each reaches against this machine's copy bandwidth (``np.copyto`` of the same size, best of 7).

    python tests/bench/bench_numpy.py
"""

import time

import numpy as np

import sot
from sot import capture as cap


def twenty_ops(x, w, b):
    h = x @ w            # 1
    h = h + b            # 2
    h = np.maximum(h, 0.0)  # 3
    m = h.mean(axis=-1, keepdims=True)  # 4
    c = h - m            # 5
    v = (c * c)          # 6
    v = v.mean(axis=-1, keepdims=True)  # 7
    v = v + 1e-5         # 8
    s = np.sqrt(v)       # 9
    n = c / s            # 10
    e = np.exp(-n)       # 11
    e = e + 1.0          # 12
    g = 1.0 / e          # 13
    y = n * g            # 14
    y = y * 0.5          # 15
    t = np.tanh(y)       # 16
    z = t @ w.T          # 17
    z = z - x            # 18
    q = np.abs(z)        # 19
    return q.sum(axis=1)  # 20


def ten_op_chain(a, b):
    x = a * 2.0          # 1
    x = x + b            # 2
    x = x - 1.0          # 3
    x = x * x            # 4
    x = x / b            # 5
    x = np.abs(x)        # 6
    x = x + a            # 7
    x = np.maximum(x, b)  # 8
    x = x * 0.5          # 9
    return x - b         # 10


def per_call(fn, args, calls):
    """The best of 7 runs of ``calls`` calls (the machine's noise only ever adds time)."""
    times = []
    for _ in range(7):
        start = time.perf_counter()
        for _ in range(calls):
            fn(*args)
        times.append((time.perf_counter() - start) / calls)
    return min(times)


def measure(n, d, calls):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, d))
    w = rng.standard_normal((d, d)) / d
    b = rng.standard_normal(d)
    args = (x, w, b)
    sot.reset()
    cap.clear(twenty_ops)
    translator = sot.translate.new_translator(records=True)
    start = time.perf_counter()
    with cap.capture(translator):
        first = twenty_ops(*args)
    first_wall = time.perf_counter() - start
    records = translator.records()
    translate_s = sum(r["seconds"] for r in records)
    graphs = [g for r in records for g in r["graphs"]]
    assert len(graphs) == 1 and sum(len(r["breaks"]) for r in records) == 0, records
    assert np.array_equal(first, twenty_ops(*args))

    def translated(*a):
        with cap.capture(translator):
            return twenty_ops(*a)

    def plain_in_scope(*a):  # the same context-manager cost, no capture of twenty_ops
        with cap.capture(translator):
            return None

    compiled = graphs[0]["compiled"]
    plain = per_call(twenty_ops, args, calls)
    scope = per_call(plain_in_scope, args, calls)
    warm = per_call(translated, args, calls) - scope
    graph_only = per_call(compiled, args, calls)
    stats = cap.stats(twenty_ops)
    assert stats["translations"] == 1 and stats["fallbacks"] == 0, stats
    print(f"shape ({n}, {d}), {graphs[0]['ops']} ops in one graph:")
    print(f"  translation: {translate_s * 1e3:.2f} ms (first call {first_wall * 1e3:.2f} ms wall)")
    print(f"  per call: plain {plain * 1e6:.1f} us, translated (cache hit) {warm * 1e6:.1f} us, "
          f"ratio {warm / plain:.2f}; the compiled graph alone {graph_only * 1e6:.1f} us, so guards and the "
          f"frame hook cost {(warm - graph_only) * 1e6:.1f} us per call")


def measure_chain(n=4_000_000):
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal(n), rng.random(n) + 1.0
    sot.reset()
    translator = sot.translate.new_translator(records=True)
    with cap.capture(translator):
        first = ten_op_chain(a, b)
    graphs = [g for r in translator.records() for g in r["graphs"]]
    assert len(graphs) == 1 and graphs[0]["ops"] == 10, graphs
    assert np.array_equal(first, ten_op_chain(a, b))

    def translated(*args):
        with cap.capture(translator):
            return ten_op_chain(*args)

    eager = per_call(ten_op_chain, (a, b), 3)
    graph = per_call(graphs[0]["compiled"], (a, b), 3)
    warm = per_call(translated, (a, b), 3)
    out = np.empty_like(a)
    copy = per_call(np.copyto, (out, a), 5)
    copy_rate = 2 * a.nbytes / copy
    # Each op reads one or two arrays and writes one: 10 writes, 15 reads of n float64 values.
    traffic = 25 * a.nbytes
    print(f"10-op elementwise chain on {n} float64 (best of 7):")
    print(f"  eager {eager * 1e3:.1f} ms, compiled graph {graph * 1e3:.1f} ms (ratio {graph / eager:.2f}), "
          f"translated call {warm * 1e3:.1f} ms (ratio {warm / eager:.2f})")
    print(f"  memory traffic: eager {traffic / eager / 1e9:.1f} GB/s, graph {traffic / graph / 1e9:.1f} GB/s; "
          f"np.copyto reaches {copy_rate / 1e9:.1f} GB/s (the bound a fused kernel would approach at "
          f"{3 * a.nbytes / copy_rate * 1e3:.1f} ms)")


if __name__ == "__main__":
    print(f"NumPy {np.__version__}")
    measure(4, 8, 10000)
    measure(256, 256, 30)
    measure_chain()
