"""Reading a list or dict received from outside after the function changed it: each kind of change (append,
extend, item store, del, insert, pop, +=, sort, reverse, clear; dict store, del, update, pop, setdefault) times
each way of reading it back (list, tuple, sorted, set, len, sum, min/max, any/all, reversed, enumerate, zip, map,
join, unpacking, iteration, slicing, splicing, membership, dict views). The changes are kept in the side-effect log;
every reader must see them. Called with several inputs of other lengths and values through one translated
function; the inputs after the call are compared too. PYTEST_DONT_REWRITE."""

import pytest
from differential import check_varied
from harness import in_child

LIST_CHANGES = {
    "append": "x.append(5)", "extend": "x.extend([7, 8])", "store": "x[0] = 9", "delete": "del x[0]",
    "insert": "x.insert(1, 6)", "pop": "x.pop()", "sort": "x.sort()", "reverse": "x.reverse()",
    "iadd": "x += [4]", "clear_refill": "x.clear(); x.append(3)",
}
LIST_READERS = [
    "list(x)", "tuple(x)", "sorted(x)", "len(x)", "sum(x)", "min(x)", "max(x)", "any(x)", "all(x)",
    "list(reversed(x))", "list(enumerate(x))", "list(zip(x, x))", "list(map(str, x))", "'-'.join(map(str, x))",
    "x[:]", "x[1:]", "[*x]", "(*x,)", "3 in x", "set(x)", "[v for v in x]", "x[-1]", "x.index(x[0])",
    "x.count(2)", "x + [0]", "(lambda a, *rest: (a, rest))(*x)",
]
DICT_CHANGES = {
    "store": "d['z'] = 1", "delete": "del d['a']", "update": "d.update(b=2, a=5)", "pop": "d.pop('a')",
    "setdefault": "d.setdefault('q', 0)",
}
DICT_READERS = [
    "list(d)", "sorted(d)", "len(d)", "dict(d)", "list(d.items())", "list(d.values())", "list(d.keys())",
    "'a' in d", "tuple(d)", "[*d]", "{**d}", "[k for k in d]", "set(d)", "d.get('a')", "d.copy()",
]


def function(param, change, reader):
    """``def f(param): <change>; return <reader>``: the reader right after the change, in one graph."""
    ns = {}
    source = f"def f({param}):\n    {change}\n    return {reader}\n"
    exec(compile(source, f"<{change} then {reader}>", "exec"), ns)  # noqa: S102 - the test's own source
    return ns["f"]


LISTS = [([1, 2, 3],), ([4, 0],), ([2, 2, 9, 1],)]
DICTS = [({"a": 0},), ({"a": 1, "c": 3},), ({"a": 2, "b": 0, "z": 9},)]


# (parameter name, change, its readers, inputs) for every change of a list and of a dict
KINDS = [("x", LIST_CHANGES, LIST_READERS, LISTS), ("d", DICT_CHANGES, DICT_READERS, DICTS)]
PARAMS = [pytest.param(param, changes[name], readers, inputs, id=f"{param}-{name}")
          for param, changes, readers, inputs in KINDS for name in changes]


@pytest.mark.parametrize("param,change,readers,inputs", PARAMS)
def test_changed_input_read_back(param, change, readers, inputs):
    def body():
        for reader in readers:
            check_varied(function(param, change, reader), [(args, {}) for args in inputs])

    in_child(body)
