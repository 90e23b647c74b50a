"""Two builds of sot on the CPU corpus, in turns: each round runs every function at every size once per build, in
a fresh process per build (build A, then B), and the table gives, per case, the median over the rounds of each
build's speedup over eager NumPy (best of 9 rounds of calls, sot and eager in turns, in the same process), then
B / A and the geometric mean of B / A. On a noisy machine, alternating the builds compares the same stretches of
time.

    python tests/bench/bench_builds.py BUILD_A BUILD_B --only single_add,axpy --sizes 262144,1048576 [--rounds 3]

BUILD_A and BUILD_B are folders holding a built ``sot`` package (``build/python``, or a copy of an older one).
The functions run on the ``cpu`` backend with tier B (its background compiles waited for before timing).
"""

import argparse
import json
import math
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def measure(names, sizes):
    """In the child: {"name@size": speedup over eager}."""
    sys.path.insert(0, HERE)
    import bench_cpu as bc
    import cpu_corpus
    from sot import _sot

    by_name = {e["fn"].__name__: e for e in cpu_corpus.CORPUS}
    out = {}
    for name in names:
        fn = by_name[name]["fn"]
        for n in sizes:
            args = cpu_corpus.inputs(name, n)
            run = bc.translated(fn, "cpu", tier_b=True)
            run(*args)
            _sot.graph.wait_for_kernels()
            run(*args)
            t, eager = bc.best_with_eager(lambda: run(*args), lambda: fn(*args), 9)  # noqa: B023
            out[f"{name}@{n}"] = eager / t
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build_a")
    ap.add_argument("build_b")
    ap.add_argument("--only", required=True, help="corpus functions, comma-separated")
    ap.add_argument("--sizes", required=True, help="elements, comma-separated")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    names, sizes = a.only.split(","), [int(s) for s in a.sizes.split(",")]
    if a.child:
        print(json.dumps(measure(names, sizes)))
        return
    runs = {"A": [], "B": []}
    for _ in range(a.rounds):
        for which, path in (("A", a.build_a), ("B", a.build_b)):
            # (SOT_ADAPTIVE=0: each build's own times, no hit running the original because it ran faster)
            env = dict(os.environ, PYTHONPATH=os.path.abspath(path), SOT_ADAPTIVE="0")
            made = subprocess.run([sys.executable, __file__, a.build_a, a.build_b, "--only", a.only, "--sizes",
                                   a.sizes, "--child"], env=env, capture_output=True, text=True, check=True)
            runs[which].append(json.loads(made.stdout.strip().splitlines()[-1]))
    print(f"{'case':28s} {'A (median)':>11s} {'B (median)':>11s}   B / A")
    logs = []
    for case in runs["A"][0]:
        ra = statistics.median(r[case] for r in runs["A"])
        rb = statistics.median(r[case] for r in runs["B"])
        logs.append(math.log(rb / ra))
        print(f"{case:28s} {ra:10.2f}x {rb:10.2f}x   {rb / ra:5.2f}")
    print(f"geometric mean of B / A over {len(logs)} cases: {math.exp(sum(logs) / len(logs)):.3f} "
          f"({a.rounds} rounds, medians)")


if __name__ == "__main__":
    main()
