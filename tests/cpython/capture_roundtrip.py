"""Runs CPython test modules under the capture runtime twice, each in a fresh subprocess: with the hook installed
and passing every frame through (the baseline: a do-nothing hook already changes a few CPython tests), and with a
C++ translator (RoundTripTranslator) that "translates" every frame of the test module to its round-tripped copy
(the bytecode layer), which then runs in the frame in place of the original. Generator functions are skipped,
as by default (a replacement would show in their generators' gi_code). Prints, per module: tests run, passed with the pass-through hook,
passed translated, code objects translated, frames that ran transformed code, fallbacks.

    python tests/cpython/capture_roundtrip.py test_grammar test_scope ...

Exit status 0 when every module passes translated exactly the tests it passes with the pass-through hook, but
for the known differences listed in KNOWN (each with its reason).
"""

import sys

from child_runs import run_child

CHILD = r'''
import gc, importlib, json, sys, types, unittest
mode, name = sys.argv[1], sys.argv[2]
from sot import capture as cap

module = importlib.import_module("test." + name)
cap.set_skip_rules(allow_modules=["test." + name])
# The C++ interface the translator uses: a C++ translator that round-trips every frame's code.
translator = cap.RoundTripTranslator(keep_originals=True) if mode == "translate" else (lambda code, lv: None)

suite = unittest.defaultTestLoader.loadTestsFromModule(module)
with cap.capture(translator):
    result = unittest.TextTestRunner(stream=open("/dev/null", "w"), verbosity=0).run(suite)
passed = result.testsRun - len(result.failures) - len(result.errors) - len(result.skipped) - \
    len(result.unexpectedSuccesses)
failed = sorted(t.id() for t, _ in result.failures + result.errors)
codes = translator.originals if mode == "translate" else []
stats = [cap.stats(c) for c in codes]
print("RESULT " + json.dumps({
    "run": result.testsRun, "passed": passed, "failed": failed, "translated": len(codes),
    "ran_transformed": sum(s.get("translations", 0) + s.get("hits", 0) for s in stats),
    "fallbacks": sum(s.get("fallbacks", 0) for s in stats),
    "reasons": sorted({r for s in stats for r in s.get("reasons", [])})[:5]}))
'''


# Differences that running replacement code causes by nature, with the reason. A test listed here may pass with
# the pass-through hook and fail translated; nothing else may differ.
KNOWN = {}


def run(mode, name):
    return run_child(CHILD, mode, name, timeout=1200)


def main(names):
    ok = True
    print(f"Python {sys.version.split()[0]}")
    print(f"{'module':22} {'run':>5} {'hook-pass':>9} {'translated':>10} {'codes':>6} {'ran new':>8} {'fallbacks':>9}")
    for name in names:
        base = run("pass", name)
        tr = run("translate", name)
        new_failures = sorted(set(tr["failed"]) - set(base["failed"]))
        known = [t for t in new_failures if t in KNOWN and sys.version_info[:2] >= KNOWN[t][0]]
        unexpected = [t for t in new_failures if t not in known]
        fixed = sorted(set(base["failed"]) - set(tr["failed"]))
        same = not unexpected and not fixed and base["run"] == tr["run"]
        ok = ok and same
        print(f"{name:22} {base['run']:>5} {base['passed']:>9} {tr['passed']:>10} {tr['translated']:>6} "
              f"{tr['ran_transformed']:>8} {tr['fallbacks']:>9}{'' if same else '  DIFFERENT'}")
        for test in known:
            print(f"{'':22} known difference: {test}: {KNOWN[test][1]}")
        for test in unexpected + fixed:
            print(f"{'':22} differs: {test}")
        for reason in tr["reasons"]:
            print(f"{'':22} fallback reason: {reason}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
