"""Differential tests of user classes (PaddleSOT test_user_classes, test_super, test_property): attribute reads of
instances decided as CPython decides them without running user code (the instance's dict, slots, class
attributes, methods of the class and its bases, properties whose getter is inlined), methods called inline with
their instance, bound methods, attribute stores read back, and what runs for real (__getattr__, classmethod,
staticmethod, property setters); the class's version is guarded, so changing a class attribute or a method
between calls retranslates.

Each case pins its break count: zero where everything is simulated.
PYTEST_DONT_REWRITE: the test subjects are plain Python, pytest must not rewrite them."""

import sot
from differential import by_version, case, check, isolated_check, run_cases  # noqa: F401
from sot import capture as cap


class Scaler:
    factor = 3

    def __init__(self, offset):
        self.offset = offset
        self.items = []

    def scale(self, x):
        return x * self.factor + self.offset

    def twice(self, x):
        return self.scale(self.scale(x))

    @property
    def doubled_offset(self):
        return self.offset * 2

    @classmethod
    def make(cls, offset):
        return cls(offset)

    @staticmethod
    def helper(x):
        return x + 1


class Child(Scaler):
    factor = 5

    def scale(self, x):
        return -x + self.offset


class Slotted:
    __slots__ = ("a", "b")

    def __init__(self):
        self.a = 1
        self.b = 2


class Dynamic:
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return len(name)


class WithSetter:
    def __init__(self):
        self._v = 1

    @property
    def v(self):
        return self._v

    @v.setter
    def v(self, value):
        self._v = value * 10


class Node:
    def __init__(self, value, child=None):
        self.value = value
        self.child = child

    def total(self):
        return self.value + (self.child.total() if self.child is not None else 0)


class Base:
    unit = 10

    def value(self, x):
        return x + self.unit

    def describe(self):
        return "base"


class Derived(Base):
    def value(self, x):
        return super().value(x) * 2

    def describe(self):
        return "derived of " + super().describe()

    def unit_via_super(self):
        return super().unit


class MoreDerived(Derived):
    def value(self, x):
        return super().value(x) + 1


def super_calls(d):
    return d.value(1), d.describe(), d.unit_via_super()


def super_chain(m):
    return m.value(1)


def type_checks(o):
    out = [isinstance(o, Scaler), isinstance(o, (Child, Node)), isinstance(3, int), isinstance([1], list)]
    out.append(type(o) is Child)
    out.append(type(o) is Scaler)
    if isinstance(o, Child):
        out.append(o.scale(1))
    return out


class Meta(type):
    def __instancecheck__(cls, instance):
        return True


class AnythingGoes(metaclass=Meta):
    pass


def instancecheck_metaclass(o):
    return isinstance(o, AnythingGoes)


def method_call(s):
    return s.scale(2), s.twice(1)


def attribute_reads(s):
    return s.offset, s.factor, s.doubled_offset


def inherited_and_overridden(c):
    return c.scale(2), c.twice(1), c.factor


def slots_read(o):
    return o.a + o.b


def getattr_class(o):
    return o.anything


def instance_shadows_method(s):
    s.scale = abs
    return s.scale(-1)


def store_then_read(s):
    s.offset = 100
    return s.scale(1), s.offset


def bound_method_value(s):
    m = s.scale
    return m(4)


def classmethod_and_staticmethod(s):
    return s.helper(1), type(s.make(2)).__name__


def setter_property(o):
    o.v = 3
    return o.v


def list_attribute_mutated(s):
    s.items.append(1)
    s.items.append(s.offset)
    return len(s.items), s.items[-1]


def linked_nodes(n):
    return n.total()


def missing_attribute(s):
    return s.nothing


CASES = [
    case(method_call, Scaler(1), breaks=0),
    case(attribute_reads, Scaler(1), breaks=0),
    case(inherited_and_overridden, Child(2), breaks=0),
    case(slots_read, Slotted(), breaks=0),
    case(getattr_class, Dynamic(), breaks=1),
    case(instance_shadows_method, Scaler(1), breaks=0),
    case(store_then_read, Scaler(1), breaks=0),
    case(bound_method_value, Scaler(1), breaks=0),
    case(classmethod_and_staticmethod, Scaler(1), breaks=1),
    case(setter_property, WithSetter(), breaks=1),
    case(list_attribute_mutated, Scaler(1), breaks=0),
    case(linked_nodes, Node(1, Node(2, Node(3))), breaks=0),
    case(missing_attribute, Scaler(1), breaks=1),
    case(super_calls, Derived(), breaks=0),
    case(type_checks, Child(1), breaks=0),
    case(type_checks, Scaler(1), breaks=0),
    case(instancecheck_metaclass, 1, breaks=1),
    case(super_chain, MoreDerived(), breaks=0),
]


@run_cases(CASES)
def test_classes(fn, args, kwargs, breaks, fallbacks, init):
    isolated_check(fn, args, kwargs, breaks, fallbacks, init)


def test_class_change_retranslates():
    # The class's version is guarded: a new class attribute value or a new method is seen on the next call.
    class Box:
        k = 2

        def get(self, x):
            return x * self.k

    def use(b):
        return b.get(10)

    sot.reset()
    translated = sot.symbolic_translate(use)
    b = Box()
    assert translated(b) == use(b) == 20
    assert translated(b) == use(b) == 20
    Box.k = 7
    assert translated(b) == use(b) == 70
    Box.get = lambda self, x: x - self.k
    assert translated(b) == use(b) == 3
    b.get = lambda x: "own"
    assert translated(b) == use(b) == "own"
    stats = cap.stats(use)
    assert stats["hits"] >= 1 and stats["translations"] >= 3, stats
