"""What the translator does with each program of the NumPy corpus (corpus_programs.py, issue 20): a row per
program - its category, whether it prints, the graphs, breaks and fallbacks of its first call, the largest graph's
op count, the first call's time (translation included) against a plain call - then every break and fallback
reason with its line, the summary (how many programs without print/IO run with no break and no fallback), and the
distinct reasons with how many programs each affects.

    PYTHONPATH=build/python .venv/kernel/bin/python3 tests/python/graph/corpus_report.py [--tier-b] [NAME ...]

Each program runs in a forked child (a crash is reported as such and the report goes on). The counts are those
test_corpus.py pins: the first call through a fresh translator with records. As there, the cpu backend's tier B is
off unless ``--tier-b`` (its compiles would dominate the first calls' times)."""

import collections
import contextlib
import io
import json
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
import numpy.fft  # noqa: E402,F401 - as in test_corpus.py: loaded before any translation

import sot  # noqa: E402
from sot import capture as cap  # noqa: E402
from corpus_programs import CATEGORIES, PROGRAMS, call_args  # noqa: E402


_LOCATION = re.compile(r" \([\w./-]+\.py:\d+\)$")  # a fallback reason's file and line

# What makes reasons of one kind differ (a function's name, an object's description, a dtype and shape, a count):
# left out of a reason's family.
_SPECIFICS = [
    (re.compile(r"\(not inlined: .*\)$"), "(not inlined: ...)"),
    (re.compile(r"np\.[\w.]+"), "np.*"),
    (re.compile(r"function [\w.]+\.<locals>\.<genexpr>"), "function <genexpr>"),
    (re.compile(r"<?tuple of \d+>?"), "tuple of N"),
    (re.compile(r"<(?!genexpr>)[^<>]*>"), "<...>"),
    (re.compile(r"\b(bool|u?int\d+|float\d+|complex\d+)(\[[^\]]*\]| scalar)"), "<dtype>"),
    (re.compile(r"\b\d+\b"), "N"),
]


def family(reason):
    """A reason with its specifics left out: ``unsupported numpy function np.roll`` -> ``... np.*``."""
    for pattern, replacement in _SPECIFICS:
        reason = pattern.sub(replacement, reason)
    return reason.strip()


def measure(program, tier_b=False):
    """A dict of what the first translated call of ``program`` did (its own arguments, variant 0)."""
    sot._sot.graph.tier_b(tier_b)
    args, kwargs = call_args(program, 0)
    plain_args, plain_kwargs = call_args(program, 0)
    with contextlib.redirect_stdout(io.StringIO()):
        t0 = time.perf_counter()
        program.fn(*plain_args, **plain_kwargs)
        plain_s = time.perf_counter() - t0
    sot.reset()
    cap.clear(program.fn)
    translator = sot.translate.new_translator(records=True)
    error = None
    with contextlib.redirect_stdout(io.StringIO()):  # outside the capture: only the program is translated
        t0 = time.perf_counter()
        try:
            with cap.capture(translator):
                program.fn(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - reported, as the plain run would have raised it too
            error = f"{type(exc).__name__}: {exc}"
        first_s = time.perf_counter() - t0
    records = translator.records()
    graphs = [g for r in records if r["transformed"] is not None for g in r["graphs"]]
    report = sot.report.build(records)
    breaks = [(b.reason, b.lineno, b.in_place) for f in report.functions for b in f.breaks]
    fallbacks = [(r["failure"].replace(os.path.dirname(program.fn.__code__.co_filename) + os.sep, ""),
                  sot.report.code_name(r["original"])) for r in records if r["failure"]]
    return {
        "graphs": len(graphs), "breaks": len(breaks), "fallbacks": len(fallbacks),
        "max_ops": max((g["ops"] for g in graphs), default=0), "total_ops": sum(g["ops"] for g in graphs),
        "break_reasons": breaks, "fallback_reasons": fallbacks,
        "first_s": first_s, "translate_s": sum(r["seconds"] for r in records), "plain_s": plain_s, "error": error,
    }


def measure_in_child(program, tier_b):
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        try:
            data = json.dumps(measure(program, tier_b)).encode()
        except BaseException as exc:  # noqa: BLE001 - everything goes back to the parent
            data = json.dumps({"crash": f"{type(exc).__name__}: {exc}"}).encode()
        with os.fdopen(write_end, "wb") as pipe:
            pipe.write(data)
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        data = pipe.read()
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return {"crash": f"signal {os.WTERMSIG(status)}"}
    return json.loads(data)


def main(argv):
    tier_b = "--tier-b" in argv
    names = [a for a in argv if a != "--tier-b"]
    programs = [p for p in PROGRAMS if not names or p.name in names]
    print(f"Python {sys.version.split()[0]}, NumPy {np.__version__}, backend {sot.config.backend}, "
          f"tier B {'on' if tier_b else 'off'}")
    header = (f"{'program':<26} {'category':<10} {'print':<5} {'graphs':>6} {'breaks':>6} {'fallb':>5} "
              f"{'max ops':>7} {'1st call ms':>11} {'transl ms':>9} {'plain ms':>8}")
    print(header)
    print("-" * len(header))
    results = {}
    for p in programs:
        m = results[p.name] = measure_in_child(p, tier_b)
        if "crash" in m:
            print(f"{p.name:<26} {p.category:<10} {'yes' if p.prints else '':<5} CRASH {m['crash']}")
            continue
        print(f"{p.name:<26} {p.category:<10} {'yes' if p.prints else '':<5} {m['graphs']:>6} {m['breaks']:>6} "
              f"{m['fallbacks']:>5} {m['max_ops']:>7} {m['first_s'] * 1e3:>11.1f} {m['translate_s'] * 1e3:>9.1f} "
              f"{m['plain_s'] * 1e3:>8.2f}")
        for reason, line, in_place in m["break_reasons"]:
            print(f"{'':<8}break (line {line}{', in place' if in_place else ''}): {reason}")
        for reason, code in m["fallback_reasons"]:
            print(f"{'':<8}fallback ({code}): {reason}")
        if m["error"]:
            print(f"{'':<8}raised: {m['error']}")

    ok = [p for p in programs if "crash" not in results[p.name]]
    clean = [p for p in ok if not p.prints and results[p.name]["breaks"] == 0 and results[p.name]["fallbacks"] == 0]
    no_print = [p for p in programs if not p.prints]
    print()
    print(f"programs: {len(programs)} ({', '.join(f'{c} {sum(p.category == c for p in programs)}' for c in CATEGORIES)}"
          f"), print/IO: {sum(p.prints for p in programs)}, crashed: {len(programs) - len(ok)}")
    if no_print:
        print(f"without print/IO, 0 breaks and 0 fallbacks: {len(clean)} of {len(no_print)} "
              f"({100.0 * len(clean) / len(no_print):.1f}%)")
    for c in CATEGORIES:
        in_c = [p for p in no_print if p.category == c]
        if in_c:
            n = sum(p in clean for p in in_c)
            print(f"  {c:<10} {n} of {len(in_c)}")
    print(f"first calls: {sum(results[p.name]['first_s'] for p in ok):.2f} s in all, "
          f"translation {sum(results[p.name]['translate_s'] for p in ok):.2f} s")

    by_reason = collections.defaultdict(set)
    for p in ok:
        m = results[p.name]
        for reason, _, _ in m["break_reasons"]:
            by_reason[("break", reason)].add(p.name)
        for reason, _ in m["fallback_reasons"]:
            by_reason[("fallback", _LOCATION.sub("", reason))].add(p.name)
    print()
    print("distinct reasons, by how many programs each affects:")
    for (kind, reason), names_ in sorted(by_reason.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        print(f"{len(names_):>4}  {kind}: {reason}")
        print(f"{'':>6}{', '.join(sorted(names_))}")

    by_family = collections.defaultdict(set)
    for (kind, reason), names_ in by_reason.items():
        by_family[(kind, family(reason))] |= names_
    print()
    print("reason families (specifics left out), by how many programs each affects:")
    for (kind, reason), names_ in sorted(by_family.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        print(f"{len(names_):>4}  {kind}: {reason}")
        print(f"{'':>6}{', '.join(sorted(names_))}")


if __name__ == "__main__":
    main(sys.argv[1:])
