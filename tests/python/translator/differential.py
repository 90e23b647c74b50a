"""The differential harness: run a function plainly and translated (twice: the second call from the cache) and
compare everything a caller can see - the return value (type and value) or the exception (type and message),
the arguments after the call (mutations), the module's ``g_*`` globals, and stdout. Also checks how the
translation went: its graph-break count and whether the original code had to run (a fallback)."""

import contextlib
import copy
import io
import sys

import pytest
from harness import assert_codes_hashable, compare_varied, in_child, varied_calls

import sot
from sot import capture as cap


ABSENT = object()  # in ``init``: the global must not exist before the run


def set_globals(fn, init):
    """The ``g_*`` globals of ``fn``'s module as ``init`` says (values deep-copied; ``ABSENT``: removed)."""
    for name, value in (init or {}).items():
        if value is ABSENT:
            fn.__globals__.pop(name, None)
        else:
            fn.__globals__[name] = copy.deepcopy(value)


class Outcome:
    def __init__(self, fn, args, kwargs, translator=None):
        self.args = copy.deepcopy(args)
        self.kwargs = copy.deepcopy(kwargs)
        out = io.StringIO()
        self.value = self.error = None
        with contextlib.redirect_stdout(out):
            try:
                # Only the call runs in the capture scope (this harness is not translated).
                with cap.capture(translator) if translator is not None else contextlib.nullcontext():
                    self.value = fn(*self.args, **self.kwargs)
            except Exception as exc:  # noqa: BLE001 - every exception is compared
                self.error = (type(exc), str(exc))
        self.stdout = out.getvalue()
        self.globals = {k: copy.deepcopy(v) for k, v in fn.__globals__.items() if k.startswith("g_")}

    def view(self):
        return {"value": (type(self.value), self.value), "error": self.error, "args": self.args,
                "kwargs": self.kwargs, "stdout": self.stdout, "globals": self.globals}


def same(a, b, seen=None):
    """Equal, with NaN equal to NaN and types compared exactly (1 is not 1.0 nor True); instances of classes
    without their own __eq__ compare by their attributes (cycles allowed)."""
    if type(a) is not type(b):
        return False
    seen = set() if seen is None else seen
    if (id(a), id(b)) in seen:
        return True
    if isinstance(a, float) and a != a:
        return b != b
    if isinstance(a, (list, tuple)):
        seen.add((id(a), id(b)))
        return len(a) == len(b) and all(same(x, y, seen) for x, y in zip(a, b))
    if isinstance(a, dict):
        seen.add((id(a), id(b)))
        return a.keys() == b.keys() and all(same(a[k], b[k], seen) for k in a)
    if type(a).__eq__ is object.__eq__ and type(a).__module__ not in ("builtins",):
        seen.add((id(a), id(b)))
        slots = [n for c in type(a).__mro__ for n in getattr(c, "__slots__", ())]
        state_a = dict(getattr(a, "__dict__", {}), **{n: getattr(a, n, None) for n in slots})
        state_b = dict(getattr(b, "__dict__", {}), **{n: getattr(b, n, None) for n in slots})
        return same(state_a, state_b, seen)
    return a == b


def check(fn, *args, breaks=0, fallbacks=0, init=None, cached=True, variants=None, **kwargs):
    """Compare ``fn(*args, **kwargs)`` plainly and translated. ``breaks``: graph breaks expected in the first
    translated call (all frames together); ``fallbacks``: translations expected to fail (the original runs);
    ``init``: ``g_*`` globals to set before each run; ``cached``: the second call hits the cache. Then the same
    arguments and others of the same types (``harness.vary``, or the case's own ``variants``: ``(args, kwargs)``
    pairs; ``False``: none) through one fresh translated function, each compared with its plain run (a guard
    missing from a translation shows there), no counts pinned."""

    def prepare():
        set_globals(fn, init)

    prepare()
    plain = Outcome(fn, args, kwargs)
    sot.reset()
    cap.clear(fn)
    translator = sot.translate.new_translator(records=True)
    runs = []
    for _ in range(2):
        prepare()
        runs.append(Outcome(fn, args, kwargs, translator))
        if not runs[1:]:
            first_records = translator.records()
    expected = plain.view()
    for i, run in enumerate(runs):
        got = run.view()
        for key in expected:
            assert same(got[key], expected[key]), (
                f"call {i + 1} translated differs in {key}: {got[key]!r} != {expected[key]!r}")
    assert_codes_hashable(first_records)
    got_breaks = sum(len(r["breaks"]) for r in first_records)
    failures = [f"{r['original'].co_name}: {r['failure']}" for r in first_records if r["failure"]]
    assert len(failures) == fallbacks, f"fallbacks {failures}"
    assert got_breaks == breaks, f"{got_breaks} breaks, expected {breaks}: " + "; ".join(
        b["reason"] for r in first_records for b in r["breaks"])
    stats = cap.stats(fn)
    if fallbacks == 0:
        assert stats["translations"] >= 1 and stats["fallbacks"] == 0, stats
        if cached:
            assert stats["hits"] >= 1, f"the second call did not hit the cache: {stats}"
    calls = varied_calls(args, kwargs, variants)
    if calls:
        check_varied(fn, calls, init)
    return first_records


def check_varied(fn, calls, init=None):
    """``harness.compare_varied`` for this harness: ``calls`` are ``(args, kwargs)`` pairs, each run from the
    ``g_*`` globals ``init`` sets (``ABSENT``: the global does not exist)."""

    def run(args, kwargs, translator):
        set_globals(fn, init)
        return Outcome(fn, args, kwargs, translator).view()

    compare_varied(fn, calls, run, same)


class Bug:
    """A known translator bug: the cases marked with it are strict xfails (on ``versions`` only, when given), so
    that fixing the bug makes them fail loudly."""

    def __init__(self, reason, versions=None):
        self.reason = "BUG: " + reason
        self.versions = versions

    def applies(self):
        return self.versions is None or sys.version_info[:2] in self.versions


def by_version(py311, py312, py313):
    """A count that differs between Python versions (their bytecode differs)."""
    return {(3, 11): py311, (3, 12): py312, (3, 13): py313}[sys.version_info[:2]]


def case(fn, *args, breaks=0, fallbacks=0, init=None, bug=None, **kwargs):
    """One differential case: ``fn(*args, **kwargs)`` with its expected counts (a ``variants=`` keyword goes to
    ``check`` with the keyword arguments)."""
    marks = [pytest.mark.xfail(strict=True, reason=bug.reason)] if bug and bug.applies() else []
    return pytest.param(fn, args, kwargs, breaks, fallbacks, init, marks=marks, id=fn.__name__)


def run_cases(cases):
    return pytest.mark.parametrize("fn,args,kwargs,breaks,fallbacks,init", cases)


def isolated_check(fn, args, kwargs, breaks, fallbacks, init):
    """``check`` in a forked child, so that a translator crash fails this case and not the whole session."""
    in_child(lambda: check(fn, *args, breaks=breaks, fallbacks=fallbacks, init=init, **kwargs))
