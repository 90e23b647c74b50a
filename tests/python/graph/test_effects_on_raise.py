"""Effects before an error a graph would raise (issue 36, difference 1): `lst.append('before'); x += 1` with a
read-only `x` raises ValueError in plain Python after the append. A graph runs its ops after the frame's recorded
effects are decided, so an op that raises there used to lose the append. Now every input array the graph writes
into (through views, out=, in-place methods, loop ops) is guarded writeable, and a write into one that is
read-only breaks the graph at that write, where plain Python raises: the append happens, then the same error.
Each case runs plainly and translated with a read-only array - after a translation made for a writeable one (the
guard fails and the code translates again), and first - and with a writeable one after the read-only one; the
values, the exception, the list of effects and the array must agree with plain Python.
PYTHONPATH=build/python"""

import copy

import pytest

np = pytest.importorskip("numpy")
sot = pytest.importorskip("sot")
from sot import capture as cap  # noqa: E402


def add_in_place(x, log):
    log.append("before")
    x += 1
    log.append("after")
    return x


def store_item(x, log):
    log.append("before")
    x[0] = 5.0
    log.append("after")
    return x.sum()


def store_through_view(x, log):
    log.append("before")
    v = x[1:]
    v[::2] *= 2.0
    return x


def ufunc_out(x, log):
    log.append(len(log))
    np.multiply(x, 3.0, out=x)
    return x.max()


def sort_in_place(x, log):
    log.append("sorting")
    y = x.T
    y.sort(axis=0)
    return x


def loop_in_place(x, log):
    log.append("loop")
    for k in range(40):
        x[1:] += x[:-1] * 0.5
    log.append("done")
    return x


def mask_update(x, log):
    log.append("mask")
    x[x > 0.5] -= 1.0
    return x


def made_then_written(x, log):
    # (an array made in the frame is never read-only: no guard, no break)
    log.append("made")
    y = x * 2.0
    y += 1.0
    return y


def carried_then_written(x, log):
    # (a loop op's carried local that is the argument on the first step, a fresh view after it)
    log.append("carried")
    y = x
    for _ in range(20):
        y[0, 0] += 1.0
        y = y[::1]
    log.append("done")
    return y


CASES = [add_in_place, store_item, store_through_view, ufunc_out, sort_in_place, loop_in_place, mask_update,
         made_then_written, carried_then_written]


def arg(writeable):
    x = np.linspace(0.0, 1.0, 12).reshape(3, 4)
    x.flags.writeable = writeable
    return x


def run(fn, writeable, translator=None):
    x = arg(writeable)
    log = []
    try:
        if translator is None:
            value = fn(x, log)
        else:
            with cap.capture(translator):
                value = fn(x, log)
        outcome = ("value", copy.deepcopy(value))
    except Exception as exc:  # noqa: BLE001 - compared with plain Python's
        outcome = ("error", type(exc), str(exc))
    return outcome, log, x.copy()


def same(a, b):
    (oa, la, xa), (ob, lb, xb) = a, b
    if oa[0] != ob[0] or la != lb or not np.array_equal(xa, xb):
        return False
    if oa[0] == "error":
        return oa[1:] == ob[1:]
    va, vb = oa[1], ob[1]
    return type(va) is type(vb) and np.array_equal(va, vb)


@pytest.mark.parametrize("fn", CASES, ids=[f.__name__ for f in CASES])
def test_effects_before_a_write_into_a_read_only_array_are_kept(fn):
    plain_ro, plain_rw = run(fn, False), run(fn, True)
    if fn is not made_then_written:
        assert plain_ro[0][0] == "error" and plain_ro[1], plain_ro
    # A translation made for a writeable array, then a read-only one, then a writeable one again.
    sot.reset()
    cap.clear(fn)
    translator = sot.translate.new_translator()
    for writeable, plain in ((True, plain_rw), (False, plain_ro), (True, plain_rw), (False, plain_ro)):
        got = run(fn, writeable, translator)
        assert same(got, plain), (writeable, got, plain)
    # A translation made first for a read-only array.
    sot.reset()
    cap.clear(fn)
    translator = sot.translate.new_translator()
    for writeable, plain in ((False, plain_ro), (True, plain_rw)):
        got = run(fn, writeable, translator)
        assert same(got, plain), (writeable, got, plain)


def read_only_use(x, log):
    log.append("read")
    return x * 2.0


def test_the_guard_says_writeable_only_for_arrays_written():
    lines = {}
    for fn in (add_in_place, read_only_use):
        sot.reset()
        cap.clear(fn)
        translator = sot.translate.new_translator(records=True)
        with cap.capture(translator):
            fn(arg(True), [])
        lines[fn] = [line for r in translator.records() for line in r["guards"] if line.startswith("x: array")]
    assert lines[add_in_place] == ["x: array format d shape (3, 4) writeable"], lines
    assert lines[read_only_use] == ["x: array format d shape (3, 4)"], lines


def divide_after_append(x, log):
    log.append("before")
    y = x / (x - x)
    log.append("after")
    return y


def test_warnings_made_errors_break_before_the_op_that_would_warn():
    # `-W error` / simplefilter("error"): NumPy's RuntimeWarning is an exception raised where the op runs; a
    # translation made under the default filters is not reused (the guard reads warnings.filters) and one made
    # under "error" runs array operations as is: the append, then the error, as in plain Python.
    import warnings

    def plain_run():
        log = []
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(RuntimeWarning):
                divide_after_append(np.arange(3.0), log)
        return log

    expected = plain_run()
    assert expected == ["before"]
    sot.reset()
    cap.clear(divide_after_append)
    translator = sot.translate.new_translator()
    for _ in range(2):
        with cap.capture(translator):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                quiet = divide_after_append(np.arange(3.0), [])
            assert np.isnan(quiet[0])
            log = []
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                with pytest.raises(RuntimeWarning):
                    divide_after_append(np.arange(3.0), log)
            assert log == expected
            log = []
            with warnings.catch_warnings():
                warnings.filterwarnings("error", category=RuntimeWarning, message="divide")
                with pytest.raises(RuntimeWarning):
                    divide_after_append(np.arange(3.0), log)
            assert log == expected


def test_warnings_filters_changed_in_place_are_seen():
    # The guard's reading of warnings.filters is remembered per list and per filter object (a walk of the
    # filters on every call cost 0.7 us): a filter inserted into the same list, or one replaced in place, is a
    # change it sees. Each call first runs with the filters as they were, then with "error" added in place.
    import warnings

    sot.reset()
    cap.clear(divide_after_append)
    translator = sot.translate.new_translator()
    saved = warnings.filters[:]
    try:
        with cap.capture(translator):
            for _ in range(2):
                warnings.filters[:] = saved
                warnings._filters_mutated()
                warnings.simplefilter("ignore")  # (inserted at the front of the same list)
                quiet = divide_after_append(np.arange(3.0), [])
                assert np.isnan(quiet[0])
                warnings.filters[0] = ("error", None, RuntimeWarning, None, 0)  # (replaced in place)
                warnings._filters_mutated()
                log = []
                with pytest.raises(RuntimeWarning):
                    divide_after_append(np.arange(3.0), log)
                assert log == ["before"]
                del warnings.filters[0]
                warnings.filters.insert(0, ("error", None, Warning, None, 0))
                warnings._filters_mutated()
                log = []
                with pytest.raises(RuntimeWarning):
                    divide_after_append(np.arange(3.0), log)
                assert log == ["before"]
    finally:
        warnings.filters[:] = saved
        warnings._filters_mutated()
