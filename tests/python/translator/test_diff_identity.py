"""Identity as plain Python keeps it: ``copy.copy`` and ``copy.deepcopy`` of immutable values (a tuple holding a
list, nested tuples, frozensets, strings, ints, None) return the same object or a new one exactly as plain runs
do, ``is`` between values received and values derived from them, a tuple rebuilt from an input's items, and
tuples made in the frame referenced several times (``x is x``, ``[x, x]``, the copy of one: built once).
Several argument sets through one translated function. PYTEST_DONT_REWRITE."""

import copy

import pytest
from differential import check_varied
from harness import in_child


def copies(x):
    c = copy.copy(x)
    d = copy.deepcopy(x)
    return c is x, d is x, c == x, d == x


def rebuilt(x):
    t = tuple(x)
    return t is x, t == x, x[:] is x


def same_object_passed_twice(x, y):
    return x is y, x == y


def made_tuple_shared(a, b):
    x = (a, b)
    y = [x, x]
    return x is x, y[0] is y[1], copy.copy(x) is x, id(y[0]) == id(x), y


def made_tuple_after_a_break(a):
    x = (a,)
    print(len(x))  # a break: the tuple is rebuilt for the resume function once
    return x is x, [x][0] is x


def made_slice_shared(n):
    s = slice(1, n)
    return copy.copy(s) is s, [s, s][0] is s, s


CALLS = [(((1, [2]),), {}), (((1, 2),), {}), ((((1, 2), (3, [4])),), {}), ((frozenset({1, 2}),), {}),
         (("text",), {}), ((12345678901,), {}), ((None,), {}), (([1, 2],), {})]
SHARED = (1, [2])


@pytest.mark.parametrize("fn,calls", [
    (copies, CALLS),
    (rebuilt, [c for c in CALLS if isinstance(c[0][0], (tuple, list, str))]),
    (same_object_passed_twice, [((SHARED, SHARED), {}), ((SHARED, (1, [2])), {}), (("a", "a"), {}),
                                ((None, None), {})]),
    (made_tuple_shared, [((1, [2]), {}), ((int, "s"), {}), (([], ()), {})]),
    (made_tuple_after_a_break, [((1,), {}), (([],), {}), ((int,), {})]),
    (made_slice_shared, [((10,), {}), ((3,), {})]),
], ids=["copies", "rebuilt", "same_object_passed_twice", "made_tuple_shared", "made_tuple_after_a_break",
        "made_slice_shared"])
def test_identity(fn, calls):
    in_child(lambda: check_varied(fn, calls))
