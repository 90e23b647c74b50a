"""Runs CPython test modules with every frame of the test module translated by the symbolic translator (graph
breaks and fallbacks allowed, wrong results not), each module twice in fresh subprocesses: with the capture hook
installed and passing every frame through (the baseline: a do-nothing hook already changes a few CPython tests),
and translated. Prints, per module: tests run, passed with the pass-through hook, passed translated, frames
translated, frames that ran transformed code (translations and cache hits), graph breaks, fallbacks (failed
translations: the original code ran), frames declined (module and class bodies, functions that inspect their
own frame), the wall-clock seconds of the pass-through and of the translated run, and the most common fallback
reasons. A module whose translated run dies (a crash, no result) is reported and counts as a failure; the next
module still runs.

    python tests/cpython/translate_all.py test_grammar test_scope ...
    python tests/cpython/translate_all.py --min-pass 0.95 --min-transformed 0.70 MODULE...
    python tests/cpython/translate_all.py --markdown --tracebacks MODULE...   # Markdown table; why tests failed
    python tests/cpython/translate_all.py --seed 0 MODULE...   # repeatable counts (compare two builds)

Exit status 0 when no module crashes, no test fails translated that passes with the pass-through hook (but for
the known differences in KNOWN, each with its reason), and the totals meet --min-pass (translated passes /
baseline passes) and --min-transformed (frames translated that ran transformed code / frames translated).
"""

import argparse
import collections
import os
import subprocess
import sys
import time

from child_runs import run_child

CHILD = r'''
import collections, importlib, json, os, random, re, sys, unittest
mode, name = sys.argv[1], sys.argv[2]
if os.environ.get("SOT_TRANSLATE_SEED"):  # (--seed: the modules that draw random numbers repeat)
    random.seed(int(os.environ["SOT_TRANSLATE_SEED"]))
from sot import capture as cap
import sot

module = importlib.import_module("test." + name)
cap.set_skip_rules(allow_modules=["test." + name])
translator = sot.translate.new_translator(records=True) if mode == "translate" else (lambda code, lv: None)
suite = unittest.defaultTestLoader.loadTestsFromModule(module)
with cap.capture(translator):
    result = unittest.TextTestRunner(stream=open("/dev/null", "w"), verbosity=0).run(suite)
passed = result.testsRun - len(result.failures) - len(result.errors) - len(result.skipped) - \
    len(result.unexpectedSuccesses)
failed = sorted(t.id() for t, _ in result.failures + result.errors)
out = {"run": result.testsRun, "passed": passed, "failed": failed,
       "tracebacks": {t.id(): text[-2000:] for t, text in result.failures + result.errors}}
if mode == "translate":
    records = [r for r in translator.records() if not r["declined"]]
    declined = collections.Counter(r["declined"] for r in translator.records() if r["declined"])
    codes = {id(r["original"]): r["original"] for r in records}
    stats = [cap.stats(c) for c in codes.values()]
    reasons = collections.Counter(re.sub(r" \(.*?:\d+\)", "", r["failure"])[:100]
                                  for r in records if r["failure"])
    out.update({
        "frames": len(records),
        "transformed": sum(1 for r in records if not r["failure"]),
        "ran_transformed": sum(s.get("translations", 0) + s.get("hits", 0) for s in stats),
        "ran_original": sum(s.get("fallbacks", 0) for s in stats),
        "breaks": sum(len(r["breaks"]) for r in records),
        "in_place": sum(1 for r in records for b in r["breaks"] if b["in_place"]),
        "fallbacks": sum(1 for r in records if r["failure"]),
        "reasons": reasons.most_common(4),
        "declined": sum(declined.values()),
        "seconds": sum(r["seconds"] for r in records),
        "instructions": sum(r["simulated"] for r in records),
    })
print("RESULT " + json.dumps(out))
'''


# Differences that translation causes by nature (docs/translator.md, "Known differences"), with the reason.
KNOWN = {
    "test.test_exceptions.ExceptionTests.testSettingException": (
        "checks tb_frame.f_back.f_code.co_name from an exception raised in __init__ after a graph break: f_back is "
        "the transformed frame of __init__ that called its resume function"),
    "test.test_richcmp.MiscTest.test_recursion": (
        "(3.12+) runs under support.infinite_recursion(25), a recursion limit 25 frames above the test's caller; "
        "each graph break in the test method adds a frame to the stack (the resume function, called from the frame "
        "that broke), so after a dozen assertRaises calls assertRaises' __exit__ (traceback.clear_frames) no longer "
        "fits under the limit once the expected RecursionError is caught"),
}


def main(argv):
    parser = argparse.ArgumentParser()
    parser.add_argument("modules", nargs="+")
    parser.add_argument("--min-pass", type=float, default=0.0)
    parser.add_argument("--min-transformed", type=float, default=0.0)
    parser.add_argument("--markdown", action="store_true", help="also print the per-module table as Markdown")
    parser.add_argument("--seed", type=int, default=None,
                        help="seed random and fix PYTHONHASHSEED in the children, so that runs repeat exactly "
                             "(to compare the frame, break and fallback counts of two builds)")
    parser.add_argument("--tracebacks", action="store_true",
                        help="print the traceback of each test that fails only translated")
    args = parser.parse_args(argv)
    if args.seed is not None:
        os.environ["PYTHONHASHSEED"] = str(args.seed)
        os.environ["SOT_TRANSLATE_SEED"] = str(args.seed)
    print(f"Python {sys.version.split()[0]}")
    print(f"{'module':24} {'run':>5} {'hook-pass':>9} {'translated':>10} {'frames':>7} {'ran new':>8} "
          f"{'breaks':>7} {'fallbacks':>9} {'declined':>8} {'s base':>7} {'s trans':>7}")
    total = collections.Counter()
    rows = []
    reasons = collections.Counter()
    unexpected = []
    for name in args.modules:
        start = time.monotonic()
        base = run_child(CHILD, "pass", name, timeout=1200)
        middle = time.monotonic()
        try:
            tr = run_child(CHILD, "translate", name, timeout=1200)
        except (RuntimeError, subprocess.TimeoutExpired) as error:
            print(f"{name:24} crashed translated: {str(error).splitlines()[0]}", flush=True)
            if args.tracebacks:
                print("\n".join(f"{'':26}{line}" for line in str(error).splitlines()[1:]))
            unexpected.append(f"{name} (crashed)")
            rows.append((name, "crashed translated") + ("",) * 9)
            continue
        base_s, tr_s = middle - start, time.monotonic() - middle
        total["base_s"] += base_s
        total["tr_s"] += tr_s
        for key in ("run", "frames", "transformed", "ran_transformed", "ran_original", "breaks", "fallbacks",
                    "declined", "in_place"):
            total[key] += tr.get(key, 0)
        total["base_passed"] += base["passed"]
        total["passed"] += tr["passed"]
        total["seconds"] += tr["seconds"]
        total["instructions"] += tr["instructions"]
        for reason, count in tr["reasons"]:
            reasons[reason] += count
        row = (name, tr['run'], base['passed'], tr['passed'], tr['frames'], tr['ran_transformed'], tr['breaks'],
               tr['fallbacks'], tr['declined'], f"{base_s:.1f}", f"{tr_s:.1f}")
        rows.append(row)
        print(f"{name:24} {tr['run']:>5} {base['passed']:>9} {tr['passed']:>10} {tr['frames']:>7} "
              f"{tr['ran_transformed']:>8} {tr['breaks']:>7} {tr['fallbacks']:>9} {tr['declined']:>8} "
              f"{base_s:>7.1f} {tr_s:>7.1f}", flush=True)
        for test in sorted(set(tr["failed"]) - set(base["failed"])):
            if test in KNOWN:
                print(f"{'':24} known difference: {test}: {KNOWN[test]}")
            else:
                print(f"{'':24} fails only translated: {test}")
                unexpected.append(test)
                if args.tracebacks:
                    print("\n".join(f"{'':26}{line}" for line in tr["tracebacks"][test].splitlines()))
    pass_ratio = total["passed"] / max(total["base_passed"], 1)
    frames_ratio = total["transformed"] / max(total["frames"], 1)
    total_row = ("total", total['run'], total['base_passed'], total['passed'], total['frames'],
                 total['ran_transformed'], total['breaks'], total['fallbacks'], total['declined'],
                 f"{total['base_s']:.1f}", f"{total['tr_s']:.1f}")
    print(f"{'total':24} {total['run']:>5} {total['base_passed']:>9} {total['passed']:>10} {total['frames']:>7} "
          f"{total['ran_transformed']:>8} {total['breaks']:>7} {total['fallbacks']:>9} {total['declined']:>8} "
          f"{total['base_s']:>7.1f} {total['tr_s']:>7.1f}")
    print(f"translated passes / baseline passes: {pass_ratio:.1%}; frames translated that run transformed code: "
          f"{frames_ratio:.1%}; translation: {total['seconds'] * 1e6 / max(total['instructions'], 1):.2f} us per "
          f"simulated instruction")
    print(f"breaks: {total['breaks']}, of which {total['in_place']} continued in place (inside a loop or a try/with "
          f"block: the rest of that frame ran as is) and {total['breaks'] - total['in_place']} resumed in a resume "
          f"function")
    for reason, count in reasons.most_common(8):
        print(f"  fallback reason x{count}: {reason}")
    if args.markdown:
        print()
        print("| module | run | hook-pass | translated | frames | ran new | breaks | fallbacks | declined | s base "
              "| s translated |")
        print("| --- |" + " ---: |" * 10)
        for row in rows + [total_row]:
            print("| " + " | ".join(str(cell) for cell in row) + " |")
    ok = not unexpected and pass_ratio >= args.min_pass and frames_ratio >= args.min_transformed
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
