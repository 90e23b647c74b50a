"""isinstance() as CPython decides it: by the type, and when that says no, by ``x.__class__``, which a class may
override (a property, a plain class attribute, a proxy forwarding it). Also a tuple of classes, subclasses,
instances whose ``__class__`` is reassigned; all through one translated function, so a translation made for one
kind of object must not be reused for another.
PYTEST_DONT_REWRITE."""

import pytest
from differential import check_varied
from harness import in_child


class Plain:
    pass


class Sub(Plain):
    pass


class PropertyClass:
    @property
    def __class__(self):
        return int


class AttributeClass:
    __class__ = str


class Proxy:
    def __init__(self, target):
        self._target = target

    @property
    def __class__(self):
        return type(self._target)


class Other:
    pass


def checks(x):
    return (isinstance(x, int), isinstance(x, str), isinstance(x, Plain), isinstance(x, (float, Plain)),
            isinstance(x, (int, str)), type(x) is Plain)


def make_reassigned():
    x = Plain()
    x.__class__ = Other
    return x


CALLS = [((Plain(),), {}), ((Sub(),), {}), ((PropertyClass(),), {}), ((AttributeClass(),), {}),
         ((Proxy(3),), {}), ((Proxy("s"),), {}), ((Proxy(Sub()),), {}), ((make_reassigned(),), {}), ((1,), {}),
         (("a",), {}), ((2.5,), {})]


def test_isinstance_follows_class_overrides():
    in_child(lambda: check_varied(checks, CALLS))
