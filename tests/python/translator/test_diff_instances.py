"""Differential tests of instances made in the frame (instances.cpp): calling a plain class inlines its __init__
on an instance the translator models (attributes in the order set, methods inlined with it as self, properties,
staticmethod and classmethod through the class or the instance, super().__init__), and the generated code
builds the object only where it escapes (returned, kept in a container from outside, alive at a break), with
its __dict__ as plain Python leaves it. Classes that customize making or attribute access are called for real.
Each case pins its break count; the harness compares values (instances by their attributes), arguments after
the call and the g_* globals with a plain run, on the first call, from the cache and with other arguments.
PYTEST_DONT_REWRITE: the test subjects are plain Python, pytest must not rewrite them."""

import dataclasses

from differential import case, check, isolated_check, run_cases


class Point:
    dims = 2

    def __init__(self, x, y=0):
        self.x = x
        self.y = y

    def norm1(self):
        return abs(self.x) + abs(self.y)

    def moved(self, dx):
        return Point(self.x + dx, self.y)

    @property
    def flipped(self):
        return (self.y, self.x)

    @staticmethod
    def origin_distance(x, y):
        return abs(x) + abs(y)

    @classmethod
    def diagonal(cls, v):
        return cls(v, v)


class Point3(Point):
    def __init__(self, x, y, z):
        super().__init__(x, y)
        self.z = z

    def norm1(self):
        return super().norm1() + abs(self.z)


class Empty:
    pass


class Counter:
    def __init__(self):
        self.n = 0

    def bump(self, by=1):
        self.n += by
        return self


class Slotted:
    __slots__ = ("v",)

    def __init__(self, v):
        self.v = v


class Guarded:
    def __init__(self, v):
        self.v = v

    def __setattr__(self, name, value):
        object.__setattr__(self, name, value * 2 if name == "v" else value)


class Sized:
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n


class Raising:
    def __init__(self, v):
        if v < 0:
            raise ValueError("negative")
        self.v = v


@dataclasses.dataclass
class Pair:
    a: int
    b: int = 5

    def total(self):
        return self.a + self.b


@dataclasses.dataclass(frozen=True)
class FrozenPair:
    a: int
    b: int


def make_and_use(v):
    p = Point(v, v + 1)
    p.y = p.y * 2
    return p.norm1(), p.x, p.flipped, p.dims


def returned_instance(v):
    p = Point(v)
    p.extra = [v]
    return p


def instance_in_input_list(items, v):
    items.append(Point(v, 1))
    return len(items)


def instance_alive_at_break(v):
    p = Point(v, 2)
    print("made", p.x)
    p.x = p.x + 1
    return p, p.norm1()


def method_making_another(v):
    return Point(v, 1).moved(3).moved(1).x


def static_and_class_methods(v):
    p = Point.diagonal(v)
    q = p.diagonal(v + 1)
    return Point.origin_distance(p.x, -v), p.origin_distance(v, v), q.y


def subclass_with_super(v):
    p = Point3(v, -v, 2)
    return p.norm1(), p.z, p.x


def attribute_shadowing_class(v):
    p = Point(v)
    first = p.dims
    p.dims = 3
    second = p.dims
    del p.dims
    return first, second, p.dims


def two_instances_identity(v):
    a = Point(v)
    b = Point(v)
    c = a
    return a is b, a is c, a is not b


def truth_of_instance(v):
    e = Empty()
    if e:
        return v + 1
    return v


def counter_chained(n):
    c = Counter()
    for _ in range(n):
        c.bump(2)
    return c.bump().n


def self_reference(v):
    p = Point(v)
    p.me = p
    return p


def shared_between_two(v):
    p = Point(v)
    return [p, p], (p,)


def dataclass_default(v):
    d = Pair(v)
    e = Pair(v, b=v * 3)
    return d.total() + e.total(), d, e


def frozen_dataclass(v):
    return FrozenPair(v, 2).a


def slotted_runs_for_real(v):
    return Slotted(v).v + 1


def custom_setattr_runs_for_real(v):
    return Guarded(v).v


def len_decides_truth(v):
    s = Sized(v)
    return "full" if s else "empty"


def init_raises(v):
    try:
        Raising(v)
    except ValueError:
        return "raised"
    return "made"


def object_init_with_arguments(v):
    return Empty(v)


CASES = [
    case(make_and_use, 3, breaks=0),
    case(returned_instance, 4, breaks=0),
    case(instance_in_input_list, [1], 2, breaks=0),
    case(instance_alive_at_break, 5, breaks=1),
    case(method_making_another, 2, breaks=0),
    case(static_and_class_methods, 3, breaks=0),
    case(subclass_with_super, 4, breaks=0),
    case(attribute_shadowing_class, 1, breaks=0),
    case(two_instances_identity, 1, breaks=0),
    case(truth_of_instance, 1, breaks=0),
    case(counter_chained, 4, breaks=0),
    case(self_reference, 2, fallbacks=1),  # (an object that refers to itself is not rebuilt: runs as is)
    case(shared_between_two, 2, breaks=0),
    case(dataclass_default, 2, breaks=0),
    case(frozen_dataclass, 2, breaks=5),  # (object.__setattr__ runs for real)
    case(slotted_runs_for_real, 2, breaks=2),
    case(custom_setattr_runs_for_real, 2, breaks=4),
    case(len_decides_truth, 0, breaks=1),
    case(init_raises, -1, breaks=3),
    case(init_raises, 2, breaks=0),
    case(object_init_with_arguments, 1, breaks=1),
]


@run_cases(CASES)
def test_instances(fn, args, kwargs, breaks, fallbacks, init):
    isolated_check(fn, args, kwargs, breaks, fallbacks, init)


def test_class_changed_after_translation():
    # The class's version is guarded: a method replaced after the first translation is seen.
    records = check(make_and_use, 3, breaks=0)
    assert any("the class Point at version" in line for r in records for line in r["guards"])
    # One translated function across the change: its cache entry from before must not be used after it.
    import sot
    f = sot.jit(make_and_use)
    assert f(3) == make_and_use(3)
    original = Point.norm1
    try:
        Point.norm1 = lambda self: 100
        assert f(3) == make_and_use(3) and f(3)[0] == 100
    finally:
        Point.norm1 = original
    assert f(3) == make_and_use(3)


def test_shared_instance_built_once():
    # Two references to one instance made in the frame are one object after the call.
    import sot
    f = sot.jit(shared_between_two)
    for v in (1, 2):
        pair, single = f(v)
        assert pair[0] is pair[1] is single[0] and pair[0].x == v
