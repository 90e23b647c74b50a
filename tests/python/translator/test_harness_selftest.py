"""The differential harnesses test themselves: a deliberately wrong translation must make them fail. Each case
swaps the translator the harness makes for one that answers the function's frames with wrong code - a wrong value,
a lost print, a translation made for the first argument and reused for every other (a missing guard), a wrong
array - and the harness's check must raise."""

import os

import pytest

import differential
import sot
from test_capture import plus  # `code` with an amount added to every value it returns

np = pytest.importorskip("numpy")


class WrongTranslator:
    """Stands in for the harness's translator: every frame of ``target`` runs ``wrong(code, locals)``, with no
    guard (the entry is reused for every later call)."""

    check_graphs = False

    def __init__(self, target, wrong):
        self.target = target
        self.wrong = wrong

    def __call__(self, code, local_vars):
        return (self.wrong(code, local_vars), None) if code is self.target.__code__ else None

    def records(self):
        return []


@pytest.fixture
def translate_with(monkeypatch):
    def install(target, wrong):
        monkeypatch.setattr(sot.translate, "new_translator",
                            lambda *a, **k: WrongTranslator(target, wrong))

    yield install
    sot.reset()


def inc(x):
    return x + 1


def shout(x):
    print("x is", x)
    return x


def returns_zero(x):
    return 0 * x


def scale(a):
    return a * 2.0


def test_a_wrong_value_fails(translate_with):
    translate_with(inc, lambda code, lv: plus(code, 1))
    with pytest.raises(AssertionError, match="differs in value"):
        differential.check(inc, 3, variants=False)


def test_a_lost_print_fails(translate_with):
    quiet = plus(returns_zero.__code__, 0)  # prints nothing, returns 0 * x: the same value for 0

    translate_with(shout, lambda code, lv: quiet.replace(co_name=code.co_name, co_qualname=code.co_qualname,
                                                         co_firstlineno=code.co_firstlineno))
    with pytest.raises(AssertionError, match="differs in stdout"):
        differential.check(shout, 0, variants=False)


def test_a_missing_guard_fails_only_with_other_arguments(translate_with):
    # The translation returns the first call's result whatever x is: right for the case's own arguments, so only
    # the varied-argument calls (the same types, other values) can find it.
    def specialized(code, lv):
        return plus(returns_zero.__code__, inc(lv["x"]))

    translate_with(inc, specialized)
    differential.check(inc, 3, variants=False)  # the same arguments twice: cannot see it
    sot.reset()
    with pytest.raises(AssertionError, match="differs"):
        differential.check(inc, 3)


def test_a_wrong_array_fails_the_numpy_harness(translate_with, monkeypatch):
    monkeypatch.syspath_prepend(os.path.join(os.path.dirname(__file__), "..", "graph"))
    import numpy_differential

    translate_with(scale, lambda code, lv: plus(code, 1e-12))
    with pytest.raises(AssertionError, match="differs in value"):
        numpy_differential.check(scale, np.linspace(1, 2, 5), graphs=0, variants=False)
