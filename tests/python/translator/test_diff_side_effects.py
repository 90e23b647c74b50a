"""Differential tests of side effects on objects received from outside (seed 003, PaddleSOT
test_side_effects, test_mutable_data): changes to an input list or dict (methods, item stores and deletes) are
simulated on a model of its contents and replayed once (x[:] = ..., d.clear(); d.update(...)); attribute stores
and deletes on plain instances are replayed in order; DELETE_GLOBAL; reads that could see the same object
under another name after a change break the graph (two arguments that are one list, a second changed object,
the module's namespace); an inlined call that cannot finish leaves no change behind.

Each case pins its break count: zero where everything is simulated. The harness compares the arguments
after the call and the module's g_* globals with a plain run.
PYTEST_DONT_REWRITE: the test subjects are plain Python, pytest must not rewrite them."""

from differential import by_version, case, isolated_check, run_cases  # noqa: F401


def list_append_len(xs):
    xs.append(4)
    xs.append(xs[0])
    return len(xs), xs[-1]


def list_methods_mix(xs):
    xs.extend([7, 8])
    xs.insert(0, -1)
    last = xs.pop()
    first = xs.pop(0)
    xs[1] = 100
    del xs[0]
    xs.reverse()
    return last, first, len(xs)


def list_clear_then_fill(xs):
    xs.clear()
    xs.append("a")
    return xs


def list_del_slice_all(xs):
    del xs[:]
    return len(xs)


def list_iterate_while_growing(xs):
    out = []
    for x in xs:
        if x < 3:
            xs.append(x + 10)
        out.append(x)
    return out


def aliased_arguments(a, b):
    # a and b are one list: the read of b after the change to a runs for real.
    a.append(9)
    return len(b), b[-1]


def two_lists_changed(a, b):
    a.append(1)
    b.append(2)
    return len(a) + len(b)


def dict_changes(d):
    d["new"] = 1
    d["a"] = d["a"] * 10
    v = d.pop("b")
    d.setdefault("c", 3)
    d.update({"d": 4})
    del d["new"]
    return v, len(d), "a" in d


def dict_tuple_keys(d):
    d[(1, 2)] = 3
    return len(d)


def dict_then_read_global(d):
    d["x"] = 1
    return g_value + 1


g_value = 5


class Plain:
    def __init__(self):
        self.x = 1


class WithSetattr:
    def __init__(self):
        self.x = 1

    def __setattr__(self, name, value):
        object.__setattr__(self, name, value * 2)


class WithProperty:
    def __init__(self):
        self._x = 1

    @property
    def x(self):
        return self._x

    @x.setter
    def x(self, value):
        self._x = value + 100


class Slotted:
    __slots__ = ("x",)

    def __init__(self):
        self.x = 1


def attr_store(o):
    o.y = 5
    o.x = o
    o.z = [1]
    del o.y
    return 1


def attr_store_then_read(o):
    o.x = 7
    return o.x


def attr_store_setattr():
    o = g_objects[0]
    o.x = 5
    return o.x


def attr_store_property(o):
    o.x = 5
    return 0


def attr_store_slots(o):
    o.x = 5
    return 0


def attr_del_missing(o):
    del o.nothing


g_objects = [WithSetattr()]
g_tmp = 0


def global_delete():
    global g_tmp
    g_tmp = 1
    del g_tmp
    try:
        return g_tmp
    except NameError as e:
        return str(e)


def global_delete_missing():
    global g_missing_name
    del g_missing_name


def change_then_raise(xs):
    xs.append(1)
    raise ValueError("after the change")


def helper_appends_and_prints(xs):
    xs.append(1)
    print("in helper", len(xs))
    xs.append(2)


def callee_that_breaks(xs):
    xs.append(0)
    helper_appends_and_prints(xs)
    return len(xs)


def change_after_break(xs):
    print("first")
    xs.append(5)
    xs[0] = "z"
    return xs


def global_list_changed(a):
    g_items.append(a)
    g_items[0] = -1
    return len(g_items)


g_items = [0, 1]


def sort_mutation_detected(a):
    # The key function changes the list being sorted and undoes it: the sort still notices (the change is
    # replayed as the same operations, not as the final contents).
    values = [3, 1, a]

    def key(x):
        values.append(0)
        values.pop()
        return x
    try:
        values.sort(key=key)
    except ValueError as e:
        return str(e)
    return values


CASES = [
    case(list_append_len, [1, 2, 3], breaks=0),
    case(list_methods_mix, [1, 2, 3], breaks=0),
    case(list_clear_then_fill, [1, 2], breaks=0),
    case(list_del_slice_all, [1, 2], breaks=0),
    case(list_iterate_while_growing, [1, 2, 3], breaks=0),
    case(two_lists_changed, [1], [2], breaks=1),
    case(dict_changes, {"a": 1, "b": 2}, breaks=0),
    case(dict_tuple_keys, {(0, 0): 1}, breaks=1),
    case(dict_then_read_global, {"k": 0}, breaks=0),
    case(attr_store, Plain(), breaks=0),
    case(attr_store_then_read, Plain(), breaks=0),
    case(attr_store_setattr, breaks=3),
    case(attr_store_property, WithProperty(), breaks=1),
    case(attr_store_slots, Slotted(), breaks=1),
    case(attr_del_missing, Plain(), breaks=1),
    case(global_delete, init={"g_tmp": 0}, breaks=1),
    case(global_delete_missing, breaks=1),
    case(change_then_raise, [0], breaks=2),
    case(callee_that_breaks, [], breaks=2),
    case(change_after_break, [1, 2], breaks=1),
    case(global_list_changed, 3, init={"g_items": [0, 1]}, breaks=0),
    case(sort_mutation_detected, 2, breaks=1),
]


@run_cases(CASES)
def test_side_effects(fn, args, kwargs, breaks, fallbacks, init):
    isolated_check(fn, args, kwargs, breaks, fallbacks, init)


def test_aliased_arguments():
    # One list passed twice: the change through one name is seen through the other.
    shared = [1, 2]
    import differential
    records = differential.check(aliased_arguments, shared, shared, breaks=1)
    assert any("may be one" in b["reason"] for r in records for b in r["breaks"])


def dict_step_from_other(params, grads):
    # Reads grads[k] after params changed: right while they are two dicts (guarded), and a break
    # when they are one.
    for k in params:
        params[k] = params[k] - 0.5 * grads[k]
    return sorted(params.items())


def list_read_other_item(a, b):
    a.append(9)
    return b[0] + len(a)


class Holder:
    def __init__(self):
        self.w = 1


def attribute_after_dict_change(d, obj):
    # d may be obj.__dict__: the attribute read after the change must see it.
    d["w"] = 5
    return obj.w + 1


def nested_item_after_change(a, box):
    # box[0] may be a: an item read through another container after the change.
    a.append(3)
    inner = box[0]
    return len(inner), inner[-1]


def test_distinct_inputs_guarded():
    # Two objects from outside: the read of one after a change to the other needs no break, under a
    # guard that they stay two objects.
    import differential
    p, g = {"w": 1.0, "b": 2.0}, {"w": 0.5, "b": 4.0}
    records = differential.check(dict_step_from_other, p, g, breaks=0)
    assert any("grads: not the object at params" in line for r in records for line in r["guards"])
    records = differential.check(list_read_other_item, [1], [2], breaks=0)
    assert any("b: not the object at a" in line for r in records for line in r["guards"])


def test_distinct_inputs_then_one_object():
    # The same translated function called with two objects, then with one object twice, then with
    # two again: the cache entry made for two objects must not be used for one.
    import differential
    shared = {"w": 1.0, "b": 2.0}
    differential.check_varied(dict_step_from_other, [
        (({"w": 1.0, "b": 2.0}, {"w": 0.5, "b": 4.0}), {}),
        ((shared, shared), {}),
        (({"b": 3.0, "w": 1.0}, {"b": 1.0, "w": 8.0}), {}),
    ])
    one = [4]
    differential.check_varied(list_read_other_item, [
        (([1], [2]), {}), ((one, one), {}), (([5, 6], [7]), {})])
    inner = [1]
    differential.check_varied(nested_item_after_change, [
        (([1], ([2],)), {}), ((inner, (inner,)), {}), (([1], ([2, 5],)), {})])


def test_attribute_read_after_dict_change():
    import differential
    h = Holder()
    differential.check_varied(attribute_after_dict_change, [
        (({}, Holder()), {}), ((h.__dict__, h), {})])
