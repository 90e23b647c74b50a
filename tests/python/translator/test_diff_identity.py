"""Identity as plain Python keeps it: ``copy.copy`` and ``copy.deepcopy`` of immutable values (a tuple holding a
list, nested tuples, frozensets, strings, ints, None) return the same object or a new one exactly as plain runs
do, ``is`` between values received and values derived from them, and a tuple rebuilt from an input's items.
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


CALLS = [(((1, [2]),), {}), (((1, 2),), {}), ((((1, 2), (3, [4])),), {}), ((frozenset({1, 2}),), {}),
         (("text",), {}), ((12345678901,), {}), ((None,), {}), (([1, 2],), {})]
SHARED = (1, [2])


@pytest.mark.parametrize("fn,calls", [
    (copies, CALLS),
    (rebuilt, [c for c in CALLS if isinstance(c[0][0], (tuple, list, str))]),
    (same_object_passed_twice, [((SHARED, SHARED), {}), ((SHARED, (1, [2])), {}), (("a", "a"), {}),
                                ((None, None), {})]),
], ids=["copies", "rebuilt", "same_object_passed_twice"])
def test_identity(fn, calls):
    in_child(lambda: check_varied(fn, calls))
