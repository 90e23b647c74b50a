"""Guards on what folding reads from the inputs: every way a function splices, unpacks, iterates or otherwise
reads the contents of its ``*args``, ``**kwargs`` or a tuple argument, called through ONE translated function
with argument sets of the same types but other values, lengths and item types (1, 1.0 and True are equal but
not the same). A translation reused for arguments it was not made for returns the first call's result: each
call is compared with its own plain run. PYTEST_DONT_REWRITE."""

import os

import pytest
from differential import check_varied
from harness import in_child


def join_splice(*args):
    return os.path.join("-m", "calendar", *args)


def tuple_splice(*args):
    return ("a", *args)


def list_splice(*args):
    return [*args, "z"]


def set_splice(*args):
    return sorted({*args, 0}, key=repr)


def call_splice(*args):
    return max(*args, 0)


def call_splice_kwargs(*args, **kw):
    return dict(*args, **kw)


def print_splice(*args):
    print(*args, sep="|")
    return len(args)


def unpack_two(*args):
    a, b = args
    return b, a


def iterate(*args):
    total = []
    for x in args:
        total.append(x)
    return total


def index_and_len(*args):
    return args[0], args[-1], len(args), args[1:]


def membership(*args):
    return 1 in args, "x" in args


def concat(*args):
    return args + ("end",)


def through_builtins(*args):
    return tuple(args), list(args), sorted(args, key=repr), str(args)


def kwargs_splice(**kw):
    return dict(a=1, **kw)


def kwargs_read(**kw):
    return sorted(kw.items(), key=repr), kw.get("b"), "c" in kw


def nested_tuple(t):
    (a, b), c = t
    return a, b, c, t[0][1]


def string_join(*args):
    return "-".join(args)


def positional_ints(*args):
    return [x * 2 for x in args]


ARG_SETS = [((1, 2), {}), ((3, 4), {}), ((1.0, 2), {}), ((True, 2), {}), ((1, "x"), {})]
STRING_SETS = [(("--type", "text", "2004"), {}), (("--type", "html", "2004"), {}), (("a",), {}),
               (("a", "b", "c", "d"), {})]
KWARG_SETS = [((), {"b": 2}), ((), {"b": 3}), ((), {"b": 2.0}), ((), {"b": True, "c": None}), ((), {})]

CASES = [
    (join_splice, STRING_SETS),
    (string_join, STRING_SETS),
    (tuple_splice, ARG_SETS),
    (list_splice, ARG_SETS),
    (set_splice, ARG_SETS),
    (call_splice, ARG_SETS[:4] + [((-1, -2), {})]),
    (call_splice_kwargs, [(([("x", 1)],), {"y": 2}), (([("x", 2)],), {"y": 2}), (([("x", 1.0)],), {"y": True})]),
    (print_splice, ARG_SETS),
    (unpack_two, ARG_SETS),
    (iterate, ARG_SETS + [((), {}), ((1, 2, 3), {})]),
    (index_and_len, ARG_SETS + [((1, 2, 3), {})]),
    (membership, ARG_SETS + [(("x",), {})]),
    (concat, ARG_SETS),
    (through_builtins, ARG_SETS),
    (kwargs_splice, KWARG_SETS),
    (kwargs_read, KWARG_SETS),
    (nested_tuple, [((((1, 2), 3),), {}), ((((1, 5), 3),), {}), ((((1.0, 2), 3),), {}), ((((True, 2), 3),), {})]),
    (positional_ints, ARG_SETS[:4]),
]


@pytest.mark.parametrize("fn,calls", CASES, ids=[fn.__name__ for fn, _ in CASES])
def test_varied_inputs(fn, calls):
    in_child(lambda: check_varied(fn, calls))
