"""Building call arguments that raise (duplicate keywords across ``**`` merges or between a keyword and a merge,
non-str keys, a ``**`` of a non-mapping, a ``*`` of a non-iterable), alone and inside another pending call, and
``super()`` calls from subclasses of builtin types (list, dict, set, int, str) into the builtin's methods. Both
once crashed the translated run (3.13; 3.12 and 3.13). Each runs with several argument sets through one translated
function and is compared with the plain run, exception type and message included. PYTEST_DONT_REWRITE."""

import pytest
from differential import check_varied
from harness import in_child


def callee(*args, **kw):
    return args, kw


def outer(*args, **kw):
    return len(args), sorted(kw)


def dup_between_merges(a, b):
    return callee(**{"c": a}, **{"c": b})


def dup_keyword_and_merge(a, b):
    return callee(c=a, **{"c": b})


def dup_inside_pending_call(a, b):
    return outer(1, callee(**{"c": a}, **{"c": b}), z=2)


def merge_then_positional(a, b):
    return callee(a, *[b], **{"k": a}, **{"j": b})


def non_str_key(a, b):
    return callee(**{a: b})


def non_mapping(a, b):
    return callee(**a)


def non_iterable(a, b):
    return callee(*a, b)


def merged_dicts(a, b):
    extra = {"x": a}
    more = {"y": b}
    return callee(a, **extra, **more)


class MyList(list):
    def append(self, v):
        super().append(v)

    def __setitem__(self, i, v):
        super().__setitem__(i, v)


class MyDict(dict):
    def __setitem__(self, k, v):
        super().__setitem__(k, v * 2)

    def update(self, other):
        super().update(other)


class MySet(set):
    def add(self, v):
        super().add(v)
        return len(self)


class MyInt(int):
    def __add__(self, other):
        return super().__add__(other) * 10


class MyStr(str):
    def upper(self):
        return "<" + super().upper() + ">"


class Base:
    def __init__(self, n):
        self.n = n

    def grow(self, k):
        return self.n + k


class Child(Base):
    def __init__(self, n):
        super().__init__(n * 2)

    def grow(self, k):
        return super().grow(k) + 1


def list_subclass(v):
    lst = MyList()
    lst.append(v)
    lst[0] = "z"
    lst.extend([2])
    return len(lst), lst[0], list(lst)


def list_subclass_arg(lst, v):
    lst.append(v)
    lst[0] = v
    return len(lst), list(lst)


def dict_subclass(k, v):
    d = MyDict()
    d[k] = v
    d.update({"q": v})
    return dict(d)


def set_subclass(a, b):
    s = MySet()
    return s.add(a), s.add(b), sorted(s, key=repr)


def int_and_str_subclasses(a, b):
    return MyInt(a) + b, MyStr(str(b)).upper()


def python_base(n, k):
    c = Child(n)
    return c.n, c.grow(k)


CALLS = [((1, 2), {}), ((3, 3), {}), (("s", 2.5), {})]
CASES = [
    (dup_between_merges, CALLS),
    (dup_keyword_and_merge, CALLS),
    (dup_inside_pending_call, CALLS),
    (merge_then_positional, CALLS),
    (non_str_key, CALLS),
    (non_mapping, [(([1], 2), {}), ((None, 2), {}), (({"a": 1}, 2), {})]),
    (non_iterable, [((None, 1), {}), (([1, 2], 3), {}), ((5, 1), {})]),
    (merged_dicts, CALLS),
    (list_subclass, [((1,), {}), (("v",), {}), ((None,), {})]),
    (list_subclass_arg, [((MyList([1]), 5), {}), ((MyList([0, 0]), "x"), {}), (([3], 4), {})]),
    (dict_subclass, [(("a", 1), {}), (("b", "xy"), {}), (("q", 2.5), {})]),
    (set_subclass, [((1, 2), {}), ((1, 1), {}), (("a", 1.0), {})]),
    (int_and_str_subclasses, [((1, 2), {}), ((5, -3), {}), ((0, 7), {})]),
    (python_base, [((1, 2), {}), ((3, 0), {}), ((2.5, 1), {})]),
]


@pytest.mark.parametrize("fn,calls", CASES, ids=[fn.__name__ for fn, _ in CASES])
def test_call_building_and_super(fn, calls):
    in_child(lambda: check_varied(fn, calls))
