"""Differential tests of calls into another module (other_module.py): its functions are inlined with their own
globals, read through the function (fn.__globals__[name], guarded there) and its builtins; assigning one of its
globals, or returning a function it made, runs for real; changing its globals between calls retranslates.

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


CASES = [
    case(call_other, 1, breaks=0),
    case(call_other_builtins, 3, breaks=0),
    case(call_other_registers, 7, breaks=1),
    case(call_other_sets_global, 1, breaks=1),
    case(call_other_method, Point(-2, 3), breaks=0),
    case(call_other_closure, 5, breaks=0),
    case(other_closure_escapes, 5, breaks=0),
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
