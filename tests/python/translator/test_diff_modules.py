"""Differential tests of calls into another module (other_module.py): its functions are inlined with their own
globals, read through the function (fn.__globals__[name], guarded there) and its builtins; assigning one of its
globals, or returning a function it made, runs for real; changing its globals between calls retranslates. And
imports inside a function (issue 36): `import m`, `import a.b`, `import a.b as c`, `from a import b` of modules
imported already give sys.modules' module (guarded there), with no break; a module not imported yet, a relative
import or `from m import *` breaks the graph and runs for real.

PYTEST_DONT_REWRITE: the test subjects are plain Python, pytest must not rewrite them."""

import other_module
import sot
from differential import by_version, case, isolated_check, run_cases  # noqa: F401
from other_module import Point, scaled, uses_builtin


def call_other(a):
    return scaled(a), other_module.scaled(a + 1)


def call_other_builtins(a):
    return uses_builtin((a, 5, 2))


def call_other_registers(a):
    other_module._registry.clear()
    n = other_module.register(a)
    return n, other_module.offset()


def call_other_sets_global(a):
    other_module.set_scale(4)
    return a


def call_other_method(p):
    return p.norm1()


def call_other_closure(a):
    add = other_module.make_adder(a)
    return add(1)


def other_closure_escapes(a):
    return other_module.make_adder(a)(2), other_module.make_adder


def imports_inside(a):
    import math
    import os.path
    import os.path as osp
    from math import sqrt, pi
    from other_module import scaled as sc
    return math.floor(a * pi) + sqrt(4.0), os.path.sep + osp.extsep, sc(a)


def imports_in_a_loop(n):
    total = 0.0
    for k in range(n):
        import math
        total += math.sqrt(k)
    return total


def import_then_break(a):
    import math
    out = []
    out.append(math.cos(a))
    print(end="")  # (a break: the module is a local the resumed code reads)
    out.append(math.sin(a))
    return out


def import_not_imported_yet(a):
    import this_module_does_not_exist_anywhere  # noqa: F401 - raises ModuleNotFoundError, for real
    return a


CASES = [
    case(call_other, 1, breaks=0),
    case(call_other_builtins, 3, breaks=0),
    case(call_other_registers, 7, breaks=1),
    case(call_other_sets_global, 1, breaks=1),
    case(call_other_method, Point(-2, 3), breaks=0),
    case(call_other_closure, 5, breaks=0),
    case(other_closure_escapes, 5, breaks=0),
    case(imports_inside, 1.5, breaks=0),
    case(imports_in_a_loop, 6, breaks=0),
    case(import_then_break, 0.5, breaks=1),
]


@run_cases(CASES)
def test_other_module(fn, args, kwargs, breaks, fallbacks, init):
    isolated_check(fn, args, kwargs, breaks, fallbacks, init)


def test_other_module_global_change_retranslates():
    sot.reset()
    translated = sot.symbolic_translate(call_other)
    try:
        assert translated(1) == call_other(1)
        other_module.SCALE = 10
        assert translated(1) == call_other(1) == (10, 20)
    finally:
        other_module.SCALE = 4


# Code whose globals have no builtins at all (namedtuple's generated methods run with __builtins__ = {}): the
# translator must not need an import statement's machinery (which reads the current frame's builtins).
PAIR = __import__("collections").namedtuple("PAIR", "a b")
SLICER = eval("lambda s, n: (s[1:n], s[1:n])", {"__builtins__": {}})  # noqa: S307 - a fixed text


def makes_named_tuple(x):
    return PAIR(x, [x]), PAIR._make([x, 2])


def calls_code_without_builtins(seq, n):
    return SLICER(seq, n)


def test_code_without_builtins():
    from differential import check_varied
    from harness import in_child

    in_child(lambda: check_varied(makes_named_tuple, [((1,), {}), (("s",), {})]))
    in_child(lambda: check_varied(calls_code_without_builtins, [(([1, 2, 3, 4], 3), {}), (("abcdef", 5), {})]))
    sot.reset()
    tr = sot.translate.new_translator(records=True)
    with __import__("sot").capture.capture(tr):
        makes_named_tuple(1)
        calls_code_without_builtins([1, 2, 3], 2)
    assert [r["failure"] for r in tr.records() if r["failure"]] == []


def test_an_import_of_a_module_not_imported_breaks_and_raises_as_python():
    f = sot.jit(import_not_imported_yet) if hasattr(sot, "jit") else import_not_imported_yet
    for _ in range(2):
        try:
            f(1)
        except ModuleNotFoundError as e:
            assert "this_module_does_not_exist_anywhere" in str(e)
        else:
            raise AssertionError("no ModuleNotFoundError")


def test_a_module_removed_from_sys_modules_is_imported_again():
    # the guard reads sys.modules[name]: a module taken out of it is imported for real (its code runs again)
    import sys

    import other_module as om

    def g(a):
        import other_module

        return other_module.scaled(a)

    f = sot.jit(g)
    assert f(2) == g(2)
    saved = sys.modules.pop("other_module")
    try:
        assert f(3) == om.scaled(3)
        assert "other_module" in sys.modules and sys.modules["other_module"] is not saved
    finally:
        sys.modules["other_module"] = saved
