"""Object lifetimes as in plain Python: an object received from outside (an argument, a value returned by a call
that broke the graph) whose freeing runs code - a ``__del__``, a generator's ``finally`` - is freed where the
frame drops its last reference (``del x``, ``x = other``, a call's result the statement drops: ``Noisy(log, n)``
alone, or a temporary an expression uses: ``len(Noisy(log, n).name)``, ``Noisy(log, n) == 3``,
``(Noisy(log, n),)[0]``), before the statements after it, also when a list, tuple or dict holding it is dropped.
Several argument sets through one translated function.
PYTEST_DONT_REWRITE"""

import pytest
from differential import check_varied
from harness import in_child


class Noisy:
    def __init__(self, log, name):
        self.log = log
        self.name = name

    def __del__(self):
        self.log.append("del " + self.name)


class Quiet:
    def __init__(self, log):
        self.log = log


def _steps(log, n):
    try:
        for i in range(n):
            yield i
    finally:
        log.append("finally")


def del_then_more(log, name):
    x = Noisy(log, name)
    del x
    log.append("after")
    return len(log)


def overwritten(log, name):
    x = Noisy(log, name)
    x = None
    log.append("after " + str(x))
    return log[-1]


def generator_dropped(log, n):
    it = _steps(log, n)
    first = next(it)
    del it
    log.append("after")
    return first


def held_in_a_list(log, name):
    items = [Noisy(log, name), 1]
    del items
    log.append("after")
    return 0


def still_held_elsewhere(log, name):
    x = Noisy(log, name)
    y = x
    del x
    log.append("after del x")
    del y
    log.append("after del y")
    return 1


def argument_deleted(log, obj):
    del obj  # the caller still holds it: nothing is freed here
    log.append("after")
    return 2


def quiet_object_dropped(log, n):
    x = Quiet(log)
    del x
    log.append(n * 2)
    return n


class Box(Noisy):
    def __eq__(self, other):
        return len(self.name) == other

    def __getitem__(self, k):
        return self.name[k]

    __hash__ = None


def result_dropped(log, name):
    Noisy(log, name)  # (POP_TOP of the call's result: its __del__ runs here)
    log.append("after")
    return len(log)


def attribute_of_a_temporary(log, name):
    n = len(Noisy(log, name).name)
    log.append("after")
    return n


def temporary_compared(log, name):
    same = Box(log, name) == 1
    log.append("after")
    return same


def temporary_subscripted(log, name):
    first = Box(log, name)[0]
    log.append(first)
    return first


def results_dropped_in_a_loop(log, n):
    for i in range(n):
        Noisy(log, str(i))
        log.append(i)
    return n


@pytest.mark.parametrize("fn,calls", [
    (result_dropped, [(([], "a"), {}), ((["x"], "bb"), {})]),
    (attribute_of_a_temporary, [(([], "a"), {}), ((["x"], "bb"), {})]),
    (temporary_compared, [(([], "a"), {}), ((["x"], "bb"), {})]),
    (temporary_subscripted, [(([], "a"), {}), ((["x"], "bb"), {})]),
    (results_dropped_in_a_loop, [(([], 3), {}), ((["x"], 2), {})]),
    (del_then_more, [(([], "a"), {}), ((["x"], "b"), {})]),
    (overwritten, [(([], "a"), {}), ((["y", "z"], "bb"), {})]),
    (generator_dropped, [(([], 3), {}), ((["x"], 1), {})]),
    (held_in_a_list, [(([], "a"), {}), ((["x"], "c"), {})]),
    (still_held_elsewhere, [(([], "a"), {}), ((["x"], "d"), {})]),
    (argument_deleted, [(([], Noisy([], "kept")), {}), (([], 5), {})]),
    (quiet_object_dropped, [(([], 3), {}), ((["x"], 4), {})]),
], ids=lambda v: getattr(v, "__name__", "calls"))
def test_finalizers_run_where_plain_python_runs_them(fn, calls):
    in_child(lambda: check_varied(fn, calls))
