"""The frame-capture runtime with hand-written transformations: the replacement runs with the frame's arguments,
cells and free variables; the cache hits, retranslates on a guard failure and stops at its limit; failures fall
back to the original code with a reason; skipped code never reaches the callback; nothing leaks."""

import gc
import json
import opcode
import sys
import threading
import time
import traceback
import weakref

import pytest

import sot.bytecode as bc
from sot import capture as cap
from sot.bytecode import Instruction as I  # noqa: E741

ADD = next(i for i, (name, _) in enumerate(opcode._nb_ops) if name == "NB_ADD")


@pytest.fixture(autouse=True)
def every_hit_runs_the_entry():
    """These tests tell which code ran from entries that compute other values than the original (`plus`): no hit
    may run the original because it ran faster (adaptive hits, tested at the end of this file)."""
    cap.set_adaptive(False)
    yield
    cap.set_adaptive(True)


def plus(code, amount):
    """`code` with `amount` added to every value it returns."""
    b = bc.decode(code)
    k = b.add_const(amount)
    for index in reversed([i for i in range(len(b)) if b[i].opname == "RETURN_VALUE"]):
        b.insert(index, [I("LOAD_CONST", k), I("BINARY_OP", ADD)])
    return b.assemble()


class Recorder:
    """A callback that records what it is shown and answers with `answer(code, locals)`."""

    def __init__(self, answer=lambda code, local_vars: None):
        self.calls = []
        self.answer = answer

    def __call__(self, code, local_vars):
        self.calls.append((code.co_name, dict(local_vars)))
        return self.answer(code, local_vars)


@pytest.fixture(autouse=True)
def fresh_limit():
    limit, failure_limit = cap.cache_limit(), cap.failure_limit()
    yield
    cap.set_cache_limit(limit)
    cap.set_failure_limit(failure_limit)
    assert cap.depth() == 0


def signature(a, b=2, *args, c, d=4, **kw):
    total = a + b + c + d + sum(args) + sum(kw.values())
    return total


def test_callback_sees_every_kind_of_argument():
    rec = Recorder()
    with cap.capture(rec):
        assert signature(1, c=3) == 10
        assert signature(1, 5, 6, 7, c=3, d=0, e=100) == 122
    assert rec.calls[0] == ("signature", {"a": 1, "b": 2, "args": (), "c": 3, "d": 4, "kw": {}})
    assert rec.calls[1] == ("signature", {"a": 1, "b": 5, "args": (6, 7), "c": 3, "d": 0, "kw": {"e": 100}})


def test_replacement_runs_with_the_frames_arguments():
    new = plus(signature.__code__, 1000)
    rec = Recorder(lambda code, local_vars: (new, None))
    with cap.capture(rec):
        assert signature(1, 5, 6, 7, c=3, d=0, e=100) == 1122
        assert signature(1, c=3) == 1010  # cache hit: the callback is not asked again
    assert len(rec.calls) == 1
    s = cap.stats(signature)
    assert (s["translations"], s["hits"], s["entries"]) == (1, 1, 1)
    assert signature(1, c=3) == 10  # outside the scope: the original
    cap.clear(signature)


def make_closures():
    captured = 5

    def uses_cell(x):
        y = x * 2

        def reads_y():
            return y + captured

        return reads_y()

    return uses_cell


def test_cells_and_free_variables_are_carried_over():
    uses_cell = make_closures()
    new = plus(uses_cell.__code__, 1000)
    rec = Recorder(lambda code, local_vars: (new, None) if code is uses_cell.__code__ else None)
    with cap.capture(rec):
        assert uses_cell(3) == 1011
    names = [name for name, _ in rec.calls]
    assert names == ["uses_cell", "reads_y"]
    assert rec.calls[0][1] == {"x": 3, "captured": 5}
    assert rec.calls[1][1] == {"y": 6, "captured": 5}


def counter(n):
    for i in range(n):
        yield i


@pytest.fixture
def translate_generators():
    """Skip rules that hand generator functions' creating frames to the callback too (off by default)."""
    cap.set_skip_rules(generators=True)
    yield
    cap.set_skip_rules()


def test_generator_functions_are_skipped_by_default():
    rec = Recorder(lambda code, lv: (bc.roundtrip(code), None))
    with cap.capture(rec):
        g = counter(4)
        assert g.gi_code is counter.__code__  # user code may rely on this: no replacement is visible
        assert list(g) == [0, 1, 2, 3]
    assert rec.calls == []
    assert cap.stats(counter)["skip_reason"].startswith("generator or coroutine function")
    cap.clear(counter)


def test_generator_resumption_is_never_captured(translate_generators):
    rec = Recorder()
    with cap.capture(rec):
        assert list(counter(4)) == [0, 1, 2, 3]
    assert [name for name, _ in rec.calls] == ["counter"]  # the call, not the four resumptions
    cap.clear(counter)


def twice(a):
    return a * 2


def test_guard_failure_retranslates_and_reasons_are_kept():
    made = []

    def answer(code, local_vars):
        wanted = local_vars["a"]
        made.append(wanted)
        return plus(code, 100), (lambda lv, wanted=wanted: lv["a"] == wanted)

    with cap.capture(Recorder(answer)):
        assert twice(1) == 102
        assert twice(1) == 102
        assert twice(2) == 104
    s = cap.stats(twice)
    assert made == [1, 2]
    assert (s["translations"], s["hits"], s["misses"], s["entries"]) == (2, 1, 2, 2)
    assert s["guard_ns"] > 0
    cap.clear(twice)


def helper_given_up(a):
    return a + 1


def loop_of_helper(n, scope=None):
    s = 0
    for _ in range(n):
        s = helper_given_up(s)
    if scope is not None:  # a scope opened inside the run
        with cap.capture(Recorder(lambda code, lv: (plus(code, 100), None) if code is twice.__code__ else None)):
            s += twice(1)
    return s


def test_quiet_runs_run_with_the_hook_off():
    """A code whose runs passed at least 64 frames through and did nothing else beneath, twice in a row, runs with
    the hook off (a call then costs what it costs without a hook), one run in 32 with it on again: the helper given
    up on runs its original code either way, and counts no fallback while the hook is off. A scope opened inside
    such a run sets the hook again for its calls; the hook is on again after the run."""
    cap.set_cache_limit(1)

    def answer(code, lv):
        if code is loop_of_helper.__code__:
            return plus(code, 1000), None
        if code is helper_given_up.__code__:
            return code, (lambda local_vars, wanted=lv["a"]: local_vars["a"] == wanted)
        if code is twice.__code__:
            return plus(code, 100), None
        return None

    with cap.capture(Recorder(answer)):
        assert loop_of_helper(100) == 1100  # the helper: 1 entry, 99 misses at the limit: abandoned
        assert cap.stats(helper_given_up)["abandoned"]
        assert cap.stats(loop_of_helper)["unhooked"] == 0
        fallbacks = cap.stats(helper_given_up)["fallbacks"]
        assert loop_of_helper(100) == 1100 and loop_of_helper(100) == 1100  # quiet twice (the first translated)
        assert cap.stats(helper_given_up)["fallbacks"] == fallbacks + 200
        assert loop_of_helper(100) == 1100  # the hook off
        s = cap.stats(loop_of_helper)
        assert (s["unhooked"], s["hits"]) == (1, 3)
        assert cap.stats(helper_given_up)["fallbacks"] == fallbacks + 200
        assert twice(1) == 102  # on again after the run
        for _ in range(30):
            assert loop_of_helper(100) == 1100
        assert cap.stats(loop_of_helper)["unhooked"] == 31
        assert cap.stats(helper_given_up)["fallbacks"] == fallbacks + 200
        assert loop_of_helper(100) == 1100  # the probe: the hook on
        assert cap.stats(loop_of_helper)["unhooked"] == 31
        assert cap.stats(helper_given_up)["fallbacks"] == fallbacks + 300
        assert loop_of_helper(100, scope=True) == 1100 + 102  # off, then on for the inner scope
        assert cap.stats(loop_of_helper)["unhooked"] == 32
        assert twice(1) == 102
    assert cap.depth() == 0
    for f in (loop_of_helper, helper_given_up, twice):
        cap.clear(f)


def test_entry_limit_falls_back_to_the_original_with_a_reason():
    cap.set_cache_limit(2)
    never = lambda lv: False  # noqa: E731
    with cap.capture(Recorder(lambda code, lv: (plus(code, 100), never))):
        assert twice(1) == 102
        assert twice(1) == 102
        assert twice(1) == 2  # limit reached: the original runs
    s = cap.stats(twice)
    assert (s["translations"], s["fallbacks"], s["entries"]) == (2, 1, 2)
    assert any("recompile limit" in r for r in s["reasons"])
    cap.clear(twice)


def test_entries_that_miss_more_than_they_hit_are_abandoned():
    """At the entry limit, once 64 calls have missed every entry and misses outnumber hits, the code is abandoned:
    every call runs the original with no guard checked (a helper specialized on a value that changes each call);
    clear() forgets it. Entries that keep hitting are kept."""
    cap.set_cache_limit(2)
    asked = []

    def answer(code, lv):
        asked.append(lv["a"])
        return plus(code, 100), (lambda local_vars, wanted=lv["a"]: local_vars["a"] == wanted)

    with cap.capture(Recorder(answer)):
        assert [twice(a) for a in range(2)] == [100, 102]  # two entries: the limit
        for a in range(2, 65):
            assert twice(a) == 2 * a  # misses at the limit: the original runs
        assert not cap.stats(twice)["abandoned"]
        assert twice(65) == 130  # the 64th miss at the limit
        s = cap.stats(twice)
        assert s["abandoned"] and "64 calls missed every entry against 0 hits" in s["gave_up"]
        assert twice(0) == 0  # abandoned: the entry for a == 0 is no longer checked
        assert asked == [0, 1]
        cap.clear(twice)
        assert twice(0) == 100 and not cap.stats(twice)["abandoned"]  # forgotten: translated again
    cap.clear(twice)
    with cap.capture(Recorder(answer)):
        for _ in range(100):  # hits outnumber the misses: kept
            assert twice(0) == 100 and twice(1) == 102
        for a in range(2, 80):
            assert twice(a) == 2 * a
        assert not cap.stats(twice)["abandoned"]
    cap.clear(twice)


def fails(x):
    y = x + 1
    return y


def test_traceback_from_transformed_code_points_at_the_users_line():
    b = bc.decode(fails.__code__)
    ret = max(i for i in range(len(b)) if b[i].opname == "RETURN_VALUE")
    zero = b.add_const(0)
    b.insert(ret, [I("LOAD_CONST", zero), I("BINARY_OP", next(i for i, (n, _) in enumerate(opcode._nb_ops)
                                                            if n == "NB_TRUE_DIVIDE"))])
    new = b.assemble()
    with cap.capture(Recorder(lambda code, lv: (new, None))):
        with pytest.raises(ZeroDivisionError) as info:
            fails(1)
    last = traceback.extract_tb(info.value.__traceback__)[-1]
    assert last.name == "fails" and last.lineno == fails.__code__.co_firstlineno + 2
    cap.clear(fails)


def identity(v):
    return v


def test_a_replacement_with_a_deeper_stack_grows_the_frame_in_place():
    bigger = plus(identity.__code__, 1)  # needs one more stack slot than `return v`
    assert bigger.co_stacksize > identity.__code__.co_stacksize
    b = bc.decode(recurse.__code__)
    none = b.add_const(None)
    start = next(i for i in range(len(b)) if b[i].opname == "RESUME") + 1
    b.insert(start, [I("LOAD_CONST", none)] * 12 + [I("POP_TOP")] * 12)  # 12 more slots, then back
    deeper_recurse = b.assemble()
    assert deeper_recurse.co_stacksize >= recurse.__code__.co_stacksize + 8

    def answer(code, lv):
        return (bigger, None) if code is identity.__code__ else (deeper_recurse, None)

    with cap.capture(Recorder(answer)):
        assert identity(5) == 6
        assert [identity(v) for v in range(3)] == [1, 2, 3]
        assert recurse(30) == 0  # 31 frames, each grown in place above the one before
    s = cap.stats(identity)
    assert (s["translations"], s["hits"], s["fallbacks"]) == (1, 3, 0)
    assert cap.stats(recurse)["fallbacks"] == 0
    cap.clear(recurse)
    # Deep enough to cross data-stack chunks: a frame at a chunk's end cannot grow and runs the original code.
    with cap.capture(Recorder(answer)):
        assert recurse(400) == 0
    r = cap.stats(recurse)
    assert r["translations"] + r["hits"] + r["fallbacks"] == 401
    assert all("no room to grow" in reason for reason in r["reasons"])
    cap.clear(identity)
    cap.clear(recurse)


def recurse(n):
    return 0 if n == 0 else recurse(n - 1)


def test_replacements_that_do_not_fit_fall_back(translate_generators):
    deeper_generator = counter.__code__.replace(co_stacksize=counter.__code__.co_stacksize + 4)
    with cap.capture(Recorder(lambda code, lv: (deeper_generator, None) if code is counter.__code__ else None)):
        assert list(counter(3)) == [0, 1, 2]
    assert "generator needs a larger frame" in cap.stats(counter)["reasons"][-1]
    cap.clear(counter)

    other_layout = twice.__code__
    with cap.capture(Recorder(lambda code, lv: (other_layout, None) if code is identity.__code__ else None)):
        assert identity(5) == 5
    assert "layout" in cap.stats(identity)["reasons"][-1]
    cap.clear(identity)


def test_callback_errors_never_reach_user_code():
    def broken(code, lv):
        raise RuntimeError("translator bug")

    with cap.capture(broken):
        assert twice(4) == 8
    s = cap.stats(twice)
    assert s["fallbacks"] == 1 and "translator bug" in s["reasons"][-1]
    with cap.capture(lambda code, lv: "nonsense"):
        assert twice(4) == 8
    assert "None or (code, guard)" in cap.stats(twice)["reasons"][-1]
    cap.clear(twice)


def test_failed_translations_are_remembered_up_to_the_failure_limit():
    """After the failure limit the translator is no longer asked: a miss runs the original at the cost of a
    lookup, cached entries still run, and clearing the cache forgets the failures."""
    cap.set_failure_limit(2)

    def answer(code, local_vars):
        if local_vars["a"] > 10:
            raise RuntimeError("cannot translate a big a")
        return plus(code, 100), (lambda lv, wanted=local_vars["a"]: lv["a"] == wanted)

    rec = Recorder(answer)
    with cap.capture(rec):
        assert twice(1) == 102
        assert [twice(20), twice(30), twice(40), twice(50)] == [40, 60, 80, 100]
        assert twice(1) == 102  # the cached entry still runs
        assert twice(2) == 4  # a new miss is not translated either
    assert [a["a"] for _, a in rec.calls] == [1, 20, 30]
    s = cap.stats(twice)
    assert (s["translations"], s["failed"], s["fallbacks"], s["hits"]) == (1, 2, 5, 1)
    assert s["gave_up"].startswith("gave up after 2 failed translations; the last:")
    assert "cannot translate a big a" in s["gave_up"] and s["gave_up"] in s["reasons"]
    cap.clear(twice)
    assert cap.stats(twice)["gave_up"] == ""
    with cap.capture(rec):
        assert twice(60) == 120
    assert [a["a"] for _, a in rec.calls][-1] == 60  # asked again after clear
    cap.clear(twice)


def test_the_failure_limit_is_at_least_one():
    with pytest.raises(ValueError, match="at least 1"):
        cap.set_failure_limit(0)


def test_strict_mode_still_raises_after_giving_up():
    cap.set_failure_limit(1)

    def broken(code, lv):
        raise ValueError("translator bug")

    cap.set_strict(True)
    try:
        with cap.capture(broken):
            for _ in range(2):
                with pytest.raises(RuntimeError, match="SOT_STRICT=1.*translator bug"):
                    twice(4)
    finally:
        cap.set_strict(False)
    assert cap.stats(twice)["failed"] == 1
    cap.clear(twice)


def test_a_cpp_translator_runs_through_the_same_runtime():
    cap.clear(make_closures())  # an earlier test cached a replacement for it
    translator = cap.RoundTripTranslator(keep_originals=True)
    with cap.capture(translator):
        assert signature(1, c=3) == 10
        assert signature(1, 5, 6, 7, c=3, d=0, e=100) == 122
        assert make_closures()(3) == 11
    assert translator.translated >= 4  # signature, make_closures, uses_cell, reads_y (cells, free variables)
    assert signature.__code__ in translator.originals
    s = cap.stats(signature)
    assert (s["translations"], s["hits"], s["fallbacks"]) == (1, 1, 0)
    assert s["codes"][0] is not signature.__code__ and s["codes"][0].co_code == signature.__code__.co_code
    cap.clear(signature)


def test_skipped_code_never_reaches_the_callback():
    rec = Recorder()
    with cap.capture(rec):
        json.dumps({"a": [1, 2]})
    assert rec.calls == []
    assert cap.stats(json.dumps)["skipped"] is True


def test_a_named_tuples_generated_new_is_skipped():
    import collections

    Point = collections.namedtuple("Point", "x y")
    rec = Recorder()
    with cap.capture(rec):
        p = Point(1, y=2)
    assert p == (1, 2) and type(p) is Point
    assert rec.calls == []
    assert cap.stats(Point.__new__)["skip_reason"] == "the generated __new__ of a named tuple (Point)"


def test_do_not_translate_mark():
    def marked(x):
        return x

    cap.mark_do_not_translate(marked)
    rec = Recorder()
    with cap.capture(rec):
        marked(1)
    assert rec.calls == []


def test_tracing_frames_are_not_captured():
    rec = Recorder()
    sys.settrace(lambda *a: None)
    try:
        with cap.capture(rec):
            twice(1)
    finally:
        sys.settrace(None)
    assert rec.calls == []


def test_scopes_nest_and_the_innermost_wins():
    outer, inner = Recorder(), Recorder()
    with cap.capture(outer):
        with cap.capture(inner):
            assert cap.depth() == 2
            twice(1)
        twice(2)
    assert [lv for _, lv in inner.calls] == [{"a": 1}]
    assert [lv for _, lv in outer.calls] == [{"a": 2}]


def test_other_threads_are_not_captured():
    rec = Recorder()
    results = []
    with cap.capture(rec):
        t = threading.Thread(target=lambda: results.append(twice(21)))
        t.start()
        t.join()
    assert results == [42] and rec.calls == []


def test_code_and_cache_are_freed_with_the_function():
    namespace = {}
    exec("def temp(x):\n    return x + 1\n", namespace)
    fn = namespace.pop("temp")
    with cap.capture(Recorder(lambda code, lv: (plus(code, 5), None))):
        assert fn(1) == 7
    assert cap.stats(fn)["entries"] == 1
    code_ref, fn_ref = weakref.ref(fn.__code__), weakref.ref(fn)
    del fn
    gc.collect()
    assert fn_ref() is None and code_ref() is None


def test_reference_counts_are_unchanged_by_hits_misses_and_fallbacks():
    def subject(x):
        return x * 3

    code = subject.__code__
    new = plus(code, 1)
    with cap.capture(Recorder(lambda c, lv: (new, lambda lv: lv["x"] < 100))):
        subject(1)  # translate
        before = (sys.getrefcount(code), sys.getrefcount(new))
        for _ in range(1000):
            subject(1)  # hit
        for _ in range(1000):
            subject(500)  # miss: guard fails, retranslate until the limit, then fall back
        after = (sys.getrefcount(code), sys.getrefcount(new))
    s = cap.stats(subject)
    assert s["hits"] >= 1000 and s["fallbacks"] > 0
    assert after[0] == before[0]
    # `new` is referenced once more by each extra cache entry made for x=500
    assert after[1] == before[1] + (s["entries"] - 1)


def test_strict_mode_raises_the_reason_at_the_call(translate_generators):
    def broken(code, lv):
        raise ValueError("translator bug")

    cap.set_strict(True)
    try:
        with cap.capture(broken):
            with pytest.raises(RuntimeError, match="SOT_STRICT=1.*translator bug") as info:
                twice(4)
        assert traceback.extract_tb(info.value.__traceback__)[-1].name == "twice"
        with cap.capture(Recorder(lambda code, lv: (identity.__code__, None) if code is not identity.__code__ else None)):
            with pytest.raises(RuntimeError, match="localsplus layout"):
                twice(4)
            with pytest.raises(RuntimeError, match="SOT_STRICT"):
                list(counter(2))  # a generator raises at its first step
    finally:
        cap.set_strict(False)
        cap.clear(twice)
        cap.clear(counter)
    with cap.capture(broken):
        assert twice(4) == 8  # not strict: the original runs
    cap.clear(twice)


def slow_twice_plus_100(a):
    time.sleep(0.002)
    return a * 2 + 100


def slow_thrice(a):
    time.sleep(0.002)
    return a * 3


def thrice_plus_100(a):
    return a * 3 + 100


def test_adaptive_hits_run_the_faster_code_and_say_why():
    """With adaptive hits, rounds of 8 timed calls of each code start at an entry's 64th hit: where the original
    code runs faster than the entry's (here the entry, `slow_twice_plus_100`, sleeps 2 ms), later hits run the
    original, counted in ``as_is``, with the medians recorded; an entry faster than the original keeps running.
    Both compute the same in real use; here the entry adds 100, which tells them apart."""

    cap.set_adaptive(True)
    with cap.capture(Recorder(lambda code, lv: (slow_twice_plus_100.__code__, None))):
        got = [twice(1) for _ in range(64 + 16 + 10)]
    s = cap.stats(twice)
    cap.clear(twice)
    assert got[:64] == [102] * 64  # the translation's
    assert got[-10:] == [2] * 10  # the original's, after the round
    assert s["as_is"] == 8 + 10 and s["hits"] == 64 + 16 + 10 - 1
    assert any(r.startswith("runs as is: the original code ran faster (original ") for r in s["reasons"]), s
    with cap.capture(Recorder(lambda code, lv: (thrice_plus_100.__code__, None))):
        got = [slow_thrice(1) for _ in range(64 + 16 + 10)]
    s = cap.stats(slow_thrice)
    cap.clear(slow_thrice)
    # the entry runs faster than the original (which sleeps): it keeps running, but for the round's samples
    assert got[-10:] == [103] * 10 and s["as_is"] == 8, s
