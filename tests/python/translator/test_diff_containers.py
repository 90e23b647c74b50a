"""Differential tests of dicts, sets and iterators built inside the frame (PaddleSOT test_07_unpack,
test_08_rot, test_dict, test_set, test_enumerate, test_zip, test_range, test_iter): dict and set displays and
comprehensions, subscripts, stores and deletes, dict methods and views, equal keys of different types, `in`,
len(), iteration over lists (live, as CPython's list iterator), input lists and tuples, dicts (a change while
iterating raises), dicts received from outside (keys, values, items, a store under the same keys while iterating; d.get
(k) read, not modelled), enumerate, zip and reversed, breaks inside such loops (the iterator is rebuilt at its
position), **kwargs, keyword-only defaults, f(*args, **kwargs).

Each case pins its break count: zero where everything is simulated.
PYTEST_DONT_REWRITE: the test subjects are plain Python, pytest must not rewrite them."""

from differential import by_version, case, isolated_check, run_cases  # noqa: F401


def dict_literal(a):
    d = {"a": a, "b": 2}
    return d["a"] + d["b"], d.get("c", 0), "a" in d, "z" not in d, len(d)


def dict_comprehension(n):
    d = {k: k * 2 for k in range(n)}
    return d, len(d)


def dict_order_after_changes(a):
    d = {"x": 1, "y": 2, "z": 3}
    d.pop("y")
    d["w"] = a
    d["x"] = 10
    del d["z"]
    d.setdefault("v", 5)
    d.setdefault("x", 99)
    return list(d.keys()), list(d.values()), list(d.items())


def dict_equal_keys(a):
    d = {1: "a", True: "b", 1.0: "c", 2: a}
    return d, len(d)


def dict_build_and_return(a):
    d = {}
    d["x"] = a
    d.setdefault("y", []).append(1)
    e = d
    e["z"] = (a, a)
    return d


def dict_mutated_in_callee(a):
    d = {"n": a}
    fill(d, 3)
    return d


def fill(d, k):
    for i in range(k):
        d[i] = i * i
    d["n"] += 1


def dict_missing_key(a):
    d = {"a": a}
    return d["b"]


def dict_del_missing(a):
    d = {"a": a}
    del d["b"]


def dict_iterate(a):
    d = {"a": a, "b": a + 1}
    keys = []
    for k in d:
        keys.append(k)
    total = 0
    for k, v in d.items():
        total += v
    for v in d.values():
        total += v
    return keys, total


def dict_iterate_and_update_values(a):
    d = {"a": a, "b": a + 1}
    for k in d:
        d[k] = d[k] * 10
    return d


def dict_iterate_and_grow(a):
    d = {"a": a}
    for k in d:
        d[k + "x"] = 1


def dict_view_returned(a):
    d = {"a": a, "b": 2}
    # (dict_values compare by identity: the values view is listed.)
    return d.keys(), list(d.values()), d.items()


def dict_update_copy_clear(a):
    d = {"a": a}
    d.update({"b": 2, "a": 3})
    e = d.copy()
    d.clear()
    return d, e


def dict_nested(a):
    d = {"xs": [a], "m": {"k": a}}
    d["xs"].append(2)
    d["m"]["j"] = 3
    return d


def dict_loop_with_break(a):
    d = {"a": a, "b": 2, "c": 3}
    out = []
    for k, v in d.items():
        if v == 2:
            print("at", k)
        out.append(k)
    return out


def set_ops(a):
    s = {1, 2, 3}
    s.add(a)
    s.add(2)
    t = {x % 3 for x in range(6)}
    return a in s, 5 in s, len(s), len(t), s


def set_then_break(a):
    s = {a, "b"}
    print(len(s))
    return s


def set_order_kept(a):
    # The set is rebuilt by the same updates, so it iterates (and prints) in the frame's order.
    s = {7, 3, 100, 5}
    s.add(a)
    t = {x * 37 % 11 for x in range(8)}
    print(s, t)
    return list(s), list(t)


def kwargs_function(a):
    def f(**kw):
        return kw["a"] + kw.get("b", 0), sorted(kw)
    return f(a=a, b=2), f(a=1)


def kwargs_star_call(a):
    def f(x, y=0, **kw):
        return x + y + len(kw)
    args = (a,)
    kw = {"y": 2, "z": 3}
    return f(*args, **kw), f(*[1, 2])


def forwarding(a):
    def target(x, y, *, scale=1):
        return (x - y) * scale

    def wrapper(*args, **kwargs):
        return target(*args, **kwargs)
    return wrapper(a, 1), wrapper(a, 2, scale=3)


def kwonly_real(x, *, y=3, z=4):
    return x + y * z


def kwonly_defaults_calls(a):
    return kwonly_real(a), kwonly_real(a, y=1), kwonly_real(a, z=0, y=2)


def kwonly_made(a):
    def g(x, *, y=a):
        return x * y
    return g(2), g(2, y=5)


def list_iter_live(a):
    xs = [1, 2, 3]
    seen = []
    for x in xs:
        if x < 3:
            xs.append(x + 10)
        seen.append(x)
    return seen, xs


def enumerate_zip_reversed(a):
    xs = [a, a + 1, a + 2]
    ys = ["p", "q"]
    out = []
    for i, x in enumerate(xs, 1):
        out.append((i, x))
    for x, y in zip(xs, ys):
        out.append(x)
        out.append(y)
    for x in reversed(xs):
        out.append(x)
    return out


def loop_over_input_list(xs):
    total = 0
    for x in xs:
        total += x
    return total, len(xs)


def loop_over_input_list_with_break(xs):
    total = 0
    for x in xs:
        if x == 2:
            print("two")
        total += x
    return total


def enumerate_with_break(xs):
    out = []
    for i, x in enumerate([10, 20, 30]):
        if i == 1:
            print("one", x)
        out.append(i * x)
    return out


def zip_with_break(a):
    xs = [1, 2, 3]
    out = []
    for x, y in zip(xs, "abc"):
        if x == 2:
            print(y)
        out.append(y * x)
    return out


def reversed_with_break(a):
    xs = [1, 2, 3]
    out = []
    for x in reversed(xs):
        if x == 2:
            print("two")
        out.append(x)
    return out


def list_stores_and_deletes(a):
    xs = [1, 2, 3, 4]
    xs[0] = a
    xs[-1] = 9
    del xs[1]
    ys = list((1, 2))
    t = tuple(xs)
    return xs, ys, t


def list_store_out_of_range(a):
    xs = [1]
    xs[3] = a


def map_filter_loops(a):
    def sq(x):
        return x * x
    out = []
    for v in map(sq, [a, a + 1, a + 2]):
        out.append(v)
    for v in filter(lambda x: x % 2, range(7)):
        out.append(v)
    for v in map(lambda x, y: x - y, [5, 6, 7], (1, 1)):
        out.append(v)
    for v in filter(None, [0, 1, "", "s"]):
        out.append(v)
    return out


def map_with_break(a):
    # The function prints: the step runs for real, and the map is rebuilt where it stands.
    seen = []

    def noisy(x):
        print("noisy", x)
        seen.append(x)
        return x + a
    out = []
    for v in map(noisy, [1, 2, 3]):
        out.append(v)
    return out, seen


def filter_side_effect_then_break(a):
    calls = []

    def keep(x):
        calls.append(x)
        if x == 2:
            print("two")
        return x > 1
    return [v for v in filter(keep, [1, 2, 3])], calls


def zip_with_map_that_breaks(a):
    # zip advances the list iterator before the map's function breaks: both are put back, so the real step
    # pairs the same items.
    def noisy(x):
        print("noisy", x)
        return -x
    out = []
    for p, q in zip([10, 20, 30], map(noisy, [1, 2, 3])):
        out.append(p + q)
    return out


def input_dict_len(d):
    return len(d) + 1


def enumerate_with_start_keyword(xs):
    return [(i, x) for i, x in enumerate(xs, start=5)], list(enumerate(xs, 2)), list(enumerate(xs, start=-1))[:1]


def input_dict_iterated(d):
    keys = [k for k in d]
    total = 0
    for v in d.values():
        total += v
    pairs = [(k, v * 2) for k, v in d.items()]
    return keys, total, pairs, list(d.keys()), list(d)


def input_dict_values_replaced(d):
    seen = []
    for k in d:
        d[k] = d[k] + 1  # (same keys: allowed while iterating)
        seen.append(k)
    return seen, d


def input_dict_grows_raises(d):
    for k in d:
        d[k * 10] = 0  # RuntimeError: dictionary changed size during iteration
    return d


def input_dict_items_changed(d):
    out = []
    for k, v in d.items():
        out.append(v)
        d[k] = -1  # (values of an items() view seen after a change: not modelled, the frame runs as is)
    return out


def input_dict_grows_through_another_name(d, e):
    for k in d:
        e[k * 10] = 0  # (e may be d: then RuntimeError, as plainly)
    return sorted(e)


def input_list_grows_through_another_name(d, e):
    out = []
    for x in d:
        if len(out) < 5:
            e.append(x)  # (e may be d: its iterator then sees the new items, as plainly)
        out.append(x)
    return out, e


def input_dict_loop_with_break(d):
    out = []
    for k, v in d.items():
        out.append(str(k) + repr(object)[:0])
        print(k, v)
    return out


def self_containing_list_text(n):
    a = [n]
    a.append(a)
    b = (a, n)
    return str(a), repr(b), ascii(a), len(a)


def deeply_nested_list_text(n):
    a = [n]
    for _ in range(100):
        a = [a]
    return repr(a)


def input_dict_gets(series, spans):
    # d.get of a dict from outside while another is iterated: read, not modelled (it changes nothing)
    out = {}
    for name in series:
        out[name] = (spans.get(name), spans.get(name + "_lag", 1), series[name] * 2)
    return out, spans.get("missing"), len(spans)


def input_dict_get_then_store(spans):
    before = spans.get("a", 0)
    spans["a"] = before + 1  # (a change after the read: modelled from here)
    return before, spans.get("a"), spans


CASES = [
    case(input_dict_gets, {"a": 1, "b": 2}, {"a": 3, "b_lag": 4}, breaks=0),
    case(input_dict_get_then_store, {"a": 5, "b": 1}, breaks=0),
    case(self_containing_list_text, 1, breaks=1, fallbacks=1),  # (codegen cannot rebuild a cycle)
    case(deeply_nested_list_text, 1, breaks=1),  # (too deep to fold: repr runs for real)
    case(dict_literal, 1, breaks=0),
    case(dict_comprehension, 4, breaks=0),
    case(dict_order_after_changes, 7, breaks=0),
    case(dict_equal_keys, 5, breaks=0),
    case(dict_build_and_return, 3, breaks=0),
    case(dict_mutated_in_callee, 1, breaks=0),
    case(dict_missing_key, 1, breaks=1),
    case(dict_del_missing, 1, breaks=1),
    case(dict_iterate, 2, breaks=0),
    case(dict_iterate_and_update_values, 2, breaks=0),
    case(dict_iterate_and_grow, 2, breaks=0, fallbacks=1),
    case(dict_view_returned, 2, breaks=0),
    case(dict_update_copy_clear, 2, breaks=0),
    case(dict_nested, 2, breaks=0),
    case(dict_loop_with_break, 1, breaks=1),
    case(set_ops, 7, breaks=0),
    case(set_then_break, 7, breaks=1),
    case(set_order_kept, 41, breaks=3),
    case(kwargs_function, 1, breaks=0),
    case(kwargs_star_call, 1, breaks=0),
    case(forwarding, 5, breaks=0),
    case(kwonly_defaults_calls, 2, breaks=0),
    case(kwonly_made, 3, breaks=0),
    case(list_iter_live, 0, breaks=0),
    case(enumerate_zip_reversed, 1, breaks=0),
    case(loop_over_input_list, [1, 2, 3], breaks=0),
    case(loop_over_input_list_with_break, [1, 2, 3], breaks=1),
    case(enumerate_with_break, 0, breaks=1),
    case(zip_with_break, 0, breaks=1),
    case(reversed_with_break, 0, breaks=1),
    case(list_stores_and_deletes, 5, breaks=0),
    case(list_store_out_of_range, 5, breaks=1),
    case(input_dict_len, {"a": 1, "b": 2}, breaks=0),
    case(enumerate_with_start_keyword, [3, 1, 4], breaks=0),
    case(input_dict_iterated, {"a": 1, "b": 2, 3: 4}, breaks=0),
    case(input_dict_iterated, {}, breaks=0),
    case(input_dict_values_replaced, {1: 1, 2: 2}, breaks=0),
    case(input_dict_grows_raises, {1: 1}, breaks=0, fallbacks=1),
    case(input_dict_items_changed, {1: 1, 2: 2}, breaks=0, fallbacks=1),
    case(input_dict_loop_with_break, {1: "x", 2: "y"}, breaks=1),
    case(input_dict_grows_through_another_name, {1: 1, 2: 2}, {3: 3}, breaks=0, fallbacks=1),
    case(input_list_grows_through_another_name, [1, 2], [3], breaks=1),
    case(map_filter_loops, 1, breaks=0),
    case(zip_with_map_that_breaks, 1, breaks=2),
    case(map_with_break, 1, breaks=2),
    case(filter_side_effect_then_break, 1, breaks=by_version(3, 2, 2)),
]


@run_cases(CASES)
def test_containers(fn, args, kwargs, breaks, fallbacks, init):
    isolated_check(fn, args, kwargs, breaks, fallbacks, init)
