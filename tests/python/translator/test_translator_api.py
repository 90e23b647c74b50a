"""The translator's public face: symbolic_translate / jit, explain(), reset(), strict mode, SOT_LOG, and the
guards it builds (a second call hits the cache; a changed global, type, length or constant retranslates, with the
recompile reason recorded)."""

import os
import subprocess
import sys
import textwrap
import traceback

import pytest

import sot
from sot import capture as cap

SCALE = 3


def scaled(x):
    return x * SCALE


def typed(x):
    return x + x


def unpacks(t):
    a, b = t
    return a - b


def with_print(a):
    b = a * 2
    print("b =", b)
    if b > 10:
        return "big"
    return "small"


def raises_late(a):
    print("about to divide")
    c = a - a
    return 10 / c


@pytest.fixture(autouse=True)
def clean():
    sot.reset()
    yield
    sot.reset()


def test_symbolic_translate_and_jit_run_translated_code():
    f = sot.symbolic_translate(scaled)
    assert f(2) == 6 and f(2) == 6
    s = cap.stats(scaled)
    assert (s["translations"], s["hits"], s["fallbacks"]) == (1, 1, 0)
    assert f.__sot_original__ is scaled and f.__name__ == "scaled"

    @sot.jit
    def twice(x):
        return x * 2

    assert twice(21) == 42

    @sot.jit(backend="numpy")
    def thrice(x):
        return x * 3

    assert thrice(2) == 6
    with pytest.raises(ValueError, match="unknown backend"):
        sot.jit(backend="nope")(scaled)


class Scaler:
    def __init__(self, k):
        self.k = k

    @sot.jit
    def apply(self, x, *, offset=0):
        return x * self.k + offset

    @staticmethod
    @sot.jit
    def static(x):
        return x - 1


def test_jit_callable_is_a_function_to_its_callers():
    """sot.jit's C callable: kwargs, methods, staticmethods, metadata, exceptions (the capture scope
    is closed after each call, also when it raises), and the backend chosen at each call."""
    import functools
    import gc
    import inspect
    import weakref

    f = sot.jit(scaled)
    assert (f.__name__, f.__qualname__, f.__module__, f.__doc__) == (
        scaled.__name__, scaled.__qualname__, scaled.__module__, scaled.__doc__)
    assert f.__wrapped__ is scaled and inspect.signature(f) == inspect.signature(scaled)
    assert "scaled" in repr(f)
    s = Scaler(3)
    assert s.apply(2) == 6 and s.apply(2, offset=1) == 7 and Scaler.apply(s, 4) == 12
    assert s.apply(x=5, offset=2) == 17 and Scaler.static(5) == 4 and s.static(1) == 0
    assert functools.partial(s.apply, offset=10)(1) == 13
    assert cap.stats(Scaler.apply.__wrapped__)["translations"] >= 1
    assert cap.stats(Scaler.apply) == cap.stats(Scaler.apply.__wrapped__)  # a jit function's stats: its function's

    g = sot.jit(raises_late)
    for _ in range(2):
        with pytest.raises(ZeroDivisionError):
            g(3)
        assert cap.depth() == 0
    with pytest.raises(TypeError):
        f()  # the wrapped function's own TypeError
    assert cap.depth() == 0

    # backend=None follows sot.config.backend at each call; a named backend stays fixed.
    seen = []
    free = sot.jit(typed)
    fixed = sot.jit(typed, backend="numpy")
    old = sot.config.backend
    try:
        for backend in ("numpy", "cpu", "numpy"):
            sot.config.backend = backend
            assert free(2) == 4 and fixed(2) == 4
            seen.append(sot.translate.default_translator().backend)
    finally:
        sot.config.backend = old
    assert seen == ["numpy", "cpu", "numpy"]

    # A cycle through the jit callable's __dict__ is collected.
    def local(x):
        return x

    j = sot.jit(local)
    j.me = j
    ref = weakref.ref(j)
    del j
    gc.collect()
    assert ref() is None
    with pytest.raises(TypeError, match="callable"):
        cap.jit_function(1, sot.translate.default_translator, sot.config, None)
    with pytest.raises(TypeError):
        type(f)()  # made only by jit


def test_explain_reports_breaks_with_lines_guards_and_bytecode(capsys):
    e = sot.explain(with_print, 3)
    assert e.value == "small"
    assert capsys.readouterr().out == "b = 6\n"
    assert e.graph_break_count == 1 and e.graph_count == 0 and e.op_count == 0
    (b,) = e.break_reasons
    assert b.function == "with_print" and b.filename == __file__
    assert b.lineno == with_print.__code__.co_firstlineno + 2  # the print line
    assert "print" in b.reason
    assert any(g.startswith("with_print: a: == 3") for g in e.guards)
    assert "--- with_print (original)" in e.original_bytecode
    assert "--- with_print (transformed)" in e.transformed_bytecode
    assert "--- with_print.__sot_resume_" in e.transformed_bytecode  # the resume function and its translation
    assert e.compile_time_s > 0
    assert "break in with_print" in str(e)


def test_guards_hit_and_retranslate_with_reasons():
    global SCALE
    f = sot.symbolic_translate(scaled)
    assert f(2) == 6
    assert f(2) == 6
    assert cap.stats(scaled)["hits"] == 1
    assert f(5) == 15  # a new constant argument
    assert "guard failed: x: expected == 2, got 5" in cap.stats(scaled)["reasons"]
    try:
        SCALE = 4  # a changed global
        assert f(5) == 20
    finally:
        SCALE = 3
    assert any("globals()['SCALE']: expected == 3, got 4" in r for r in cap.stats(scaled)["reasons"])
    s = cap.stats(scaled)
    assert (s["translations"], s["hits"]) == (3, 1)

    g = sot.symbolic_translate(typed)
    assert g(2) == 4
    assert g(2.0) == 4.0  # a changed type
    assert any("expected == 2, got 2.0" in r for r in cap.stats(typed)["reasons"])
    assert cap.stats(typed)["translations"] == 2

    h = sot.symbolic_translate(unpacks)
    assert h([5, 3]) == 2
    assert h([6, 1]) == 5  # the items are guarded by value
    with pytest.raises(ValueError):
        h([1, 2, 3])  # a changed length: the unpacking raises from the real instruction
    assert any("len 2" in r for r in cap.stats(unpacks)["reasons"])


def test_recompile_limit_falls_back_to_the_original():
    limit = cap.cache_limit()
    cap.set_cache_limit(3)
    try:
        f = sot.symbolic_translate(scaled)
        assert [f(i) for i in range(6)] == [0, 3, 6, 9, 12, 15]
        s = cap.stats(scaled)
        assert s["translations"] == 3 and s["fallbacks"] == 3
        assert "recompile limit (3 entries) reached" in s["reasons"]
    finally:
        cap.set_cache_limit(limit)


def counts_up(n):
    s = 0
    i = 0
    while i < n:
        s += i
        i += 1
    return s


def test_a_failing_function_is_given_up_on_after_the_failure_limit():
    """A translation that fails (a while loop unrolled past the step limit) is retried until the failure limit
    (default 2); then every call runs the original at the cost of a lookup, with the right result, until reset."""
    translator = sot.translate.new_translator(records=True)
    with cap.capture(translator):
        assert [counts_up(30000), counts_up(25000)] == [sum(range(30000)), sum(range(25000))]
        assert [counts_up(n) for n in (3, 40000, 7)] == [3, sum(range(40000)), 21]
    failures = [r["failure"] for r in translator.records() if r["original"] is counts_up.__code__]
    assert len(failures) == cap.failure_limit() == 2 and all("instructions simulated" in f for f in failures)
    s = cap.stats(counts_up)
    assert (s["failed"], s["fallbacks"], s["translations"]) == (2, 5, 0)
    assert "gave up after 2 failed translations" in s["gave_up"]
    sot.reset()
    assert cap.stats(counts_up)["gave_up"] == ""
    with cap.capture(translator):
        assert counts_up(2) == 1  # translated afresh: a short loop fits
    assert cap.stats(counts_up)["translations"] == 1


def test_reset_forgets_every_translation():
    f = sot.symbolic_translate(with_print)
    f(1)
    assert cap.stats(with_print)["entries"] == 1
    sot.reset()
    assert cap.stats(with_print)["entries"] == 0


def test_tracebacks_read_as_in_plain_python():
    def tb_of(fn):
        try:
            fn(1)
        except ZeroDivisionError:
            return [(f.name, f.lineno, f.line) for f in traceback.extract_tb(sys.exc_info()[2])][1:]
        raise AssertionError("no exception")

    plain = tb_of(raises_late)
    translated = tb_of(sot.symbolic_translate(raises_late))
    assert translated[-1] == plain[-1] == ("raises_late", raises_late.__code__.co_firstlineno + 3, "return 10 / c")
    # the translated call has the user's frames only: no wrapper frame (a C callable), no resume function
    assert [name for name, _, _ in translated] == ["raises_late"]


def run_child(code, **env):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=60)


CHILD = """
    import sot
    def f(a):
        print("in f")
        return a + 1
    print(sot.symbolic_translate(f)(1))
"""


def test_strict_mode_raises_at_the_first_break():
    proc = run_child(CHILD, SOT_STRICT="1")
    assert proc.returncode == 1
    assert "RuntimeError: sot (SOT_STRICT=1): graph break" in proc.stderr and "print" in proc.stderr


def test_sot_log_prints_breaks_guards_and_bytecode():
    proc = run_child(CHILD, SOT_LOG="breaks,guards,bytecode")
    assert proc.returncode == 0 and proc.stdout == "in f\n2\n"
    assert "sot: graph break in f at <string>:4: a call of <built-in function print>" in proc.stderr
    assert "sot: transformed f:" in proc.stderr and "sot: resume function f.__sot_resume_" in proc.stderr
    assert "__sot_args[1]: == 1" in proc.stderr  # the resume function relied on a == 1


def grows(items, n):
    items.append(n)
    items.append(n + 1)
    print("grew")  # a break inside the callee: the inlined call is undone and runs for real
    return len(items)


def inline_rollback(n):
    items = [0]
    size = grows(items, n)
    return size, items


def kw_callee(a, b=10, *rest, c):
    return a + b + c + len(rest)


def inline_keywords(x):
    return kw_callee(x, c=1), kw_callee(x, 2, 3, 4, c=5), kw_callee(c=x, a=1)


def deep(n):
    return 0 if n == 0 else 1 + deep(n - 1)


def inline_deep(n):
    return deep(n)


def test_inlined_calls_fold_and_roll_back_when_they_cannot_finish(capsys):
    e = sot.explain(inline_keywords, 7)
    assert e.value == inline_keywords(7) and e.graph_break_count == 0  # defaults, keywords, *rest inlined
    e = sot.explain(inline_rollback, 5)
    assert e.value == (3, [0, 5, 6]) == inline_rollback(5)  # the list the callee grew is the real one
    assert capsys.readouterr().out == "grew\ngrew\n"
    (b,) = [b for b in e.break_reasons if b.function == "inline_rollback"]
    assert "not inlined: grows breaks at line" in b.reason and "print" in b.reason
    e = sot.explain(inline_deep, 20)
    assert e.value == 20
    assert any("calls nested deeper than 8" in b.reason for b in e.break_reasons)


def test_inlined_functions_are_guarded():
    global kw_callee
    f = sot.symbolic_translate(inline_keywords)
    assert f(7) == inline_keywords(7)
    original = kw_callee
    try:
        def kw_callee(a, b=10, *rest, c):  # noqa: F811 - a redefinition the guards must notice
            return a * b * c

        assert f(7) == inline_keywords(7)
        assert any("globals()['kw_callee']: expected the object" in r for r in cap.stats(inline_keywords)["reasons"])
        kw_callee.__defaults__ = (100,)
        assert f(7) == inline_keywords(7)
    finally:
        kw_callee = original


def module_name(m):
    return m.__name__


def test_identity_guards_do_not_keep_objects_alive():
    """An identity guard refers to its object weakly: a module passed once is freed when the caller drops it
    (the cache entry no longer fits anything), and another module retranslates."""
    import gc
    import types
    import weakref

    f = sot.symbolic_translate(module_name)
    m = types.ModuleType("first")
    ref = weakref.ref(m)
    assert f(m) == "first"
    del m
    gc.collect()
    assert ref() is None
    assert f(types.ModuleType("second")) == "second"
    assert any("<gone>" in r for r in cap.stats(module_name)["reasons"])


def concatenate(s):
    return s + "x"


def test_guard_texts_are_short_and_cut_between_characters():
    """Guards on long strings and huge ints are described by a prefix or a size (never a whole repr: a miss must
    not cost time in proportion to the value), and a cut never splits a UTF-8 character."""
    e = sot.explain(concatenate, "é" * 100)
    (guard,) = e.guards
    assert guard.endswith("... (str of 100)") and "é" * 80 in guard
    e = sot.explain(scaled, 10 ** 5000)
    assert any("<int of 16610 bits>" in g for g in e.guards)
    assert "int too large to show" in e.transformed_bytecode  # (its folded product is a constant)
    f = sot.symbolic_translate(concatenate)
    f("a" * 1_000_000)
    f("b" * 1_000_000)
    (miss,) = [r for r in cap.stats(concatenate)["reasons"] if r.startswith("guard failed")]
    assert len(miss) < 400 and "(str of 1000000)" in miss


def test_translation_records_are_typed_and_read_as_mappings():
    import sot._sot as _sot

    def breaks_once(xs):
        total = len(xs)
        print("x", end="")
        return total + 1

    translator = sot.translate.new_translator(records=True)
    with sot.capture.capture(translator):
        assert breaks_once([1, 2]) == 3
    (record,) = [r for r in translator.records() if r.original is breaks_once.__code__]
    assert isinstance(record, _sot.translator.TranslationRecord)
    assert record.transformed is not None and record.failure == ""
    (brk,) = record.breaks
    assert isinstance(brk, _sot.translator.BreakRecord)
    assert brk.lineno == breaks_once.__code__.co_firstlineno + 2 and brk.filename == __file__
    assert record["breaks"][0]["reason"] == brk.reason
    assert [r.code for r in record.resumes] == [r["code"] for r in record["resumes"]]
    assert set(record.keys()) >= {"original", "transformed", "breaks", "graphs", "guards", "failure"}
    assert dict(record)["simulated"] == record.simulated > 0
    assert record.to_dict()["breaks"][0].reason == brk.reason
    assert "breaks" in record and "nothing" not in record
    try:
        record["nothing"]
    except KeyError:
        pass
    else:
        raise AssertionError("an unknown key reads")
