"""Runs CPython test modules plainly and with every function of the test module replaced by its round-tripped
code (sot.bytecode decode + assemble, nested code objects included), and compares the results.

    python tests/cpython/run_roundtripped.py test_grammar test_scope ...

Each run happens in a fresh subprocess. Prints, per module: tests run, passed plainly, passed round-tripped,
functions replaced. Exit status 0 when every module passes round-tripped exactly the tests it passes plainly.
"""

import sys

from child_runs import run_child

CHILD = r'''
import importlib, inspect, json, sys, types, unittest
mode, name = sys.argv[1], sys.argv[2]
module = importlib.import_module("test." + name)
replaced = 0
if mode == "roundtrip":
    import sot.bytecode as bc

    def deep(code):
        consts = tuple(deep(c) if isinstance(c, types.CodeType) else c for c in code.co_consts)
        return bc.roundtrip(code.replace(co_consts=consts))

    seen = set()

    def visit(obj):
        global replaced
        if id(obj) in seen:
            return
        seen.add(id(obj))
        if isinstance(obj, (staticmethod, classmethod)):
            visit(obj.__func__)
        elif isinstance(obj, property):
            for f in (obj.fget, obj.fset, obj.fdel):
                if f is not None:
                    visit(f)
        elif isinstance(obj, types.FunctionType) and obj.__module__ == module.__name__:
            new = deep(obj.__code__)
            assert new == obj.__code__, obj.__qualname__
            obj.__code__ = new
            replaced += 1
        elif isinstance(obj, type) and obj.__module__ == module.__name__:
            for value in list(vars(obj).values()):
                visit(value)

    for value in list(vars(module).values()):
        visit(value)
suite = unittest.defaultTestLoader.loadTestsFromModule(module)
result = unittest.TextTestRunner(stream=open("/dev/null", "w"), verbosity=0).run(suite)
passed = result.testsRun - len(result.failures) - len(result.errors) - len(result.skipped) - \
    len(result.unexpectedSuccesses)
print("RESULT " + json.dumps({"run": result.testsRun, "passed": passed, "replaced": replaced}))
'''


def run(mode, name):
    return run_child(CHILD, mode, name, timeout=900)


def main(names):
    ok = True
    print(f"Python {sys.version.split()[0]}")
    print(f"{'module':28} {'run':>6} {'plain':>6} {'round-tripped':>14} {'functions':>10}")
    for name in names:
        plain = run("plain", name)
        tripped = run("roundtrip", name)
        same = plain["passed"] == tripped["passed"] and plain["run"] == tripped["run"]
        ok = ok and same
        print(f"{name:28} {plain['run']:>6} {plain['passed']:>6} {tripped['passed']:>14} {tripped['replaced']:>10}"
              f"{'' if same else '  DIFFERENT'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
