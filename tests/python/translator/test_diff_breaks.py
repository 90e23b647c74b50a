"""Differential tests ported from PaddleSOT's suite, the part that leaves pure Python: graph breaks (print and
user calls in the middle), what a break carries over (unbound locals, partial values on the stack, cells, varargs),
frame introspection, calls and argument unpacking, make_function and closures, globals, side effects on the
arguments, user classes, exceptions, with statements, generators consumed by a caller, builtin dispatch.

Each case runs plainly and translated (first call and from the cache), in a forked child so that a translator
crash fails that case only, and pins its break and fallback counts (``by_version`` where the bytecode of 3.11,
3.12 and 3.13 differs). Known translator bugs are strict xfails (``Bug``).
PYTEST_DONT_REWRITE: the ``assert`` statements below are test subjects, pytest must not rewrite them."""

import asyncio
import functools
import math
import operator
import os
import sys
import traceback

import pytest
from differential import Bug, by_version, case, isolated_check, run_cases  # noqa: F401


# ---------------------------------------------------------------------------------------------------------
# Helpers the test functions call (user functions: each call is a break, the callee is translated too).

def helper_add(a, b):
    return a + b


def helper_print(x):
    print("helper", x)
    return x * 2


def helper_kw(a, b=2, *, c=3):
    return a * 100 + b * 10 + c


def helper_varargs(*args, **kwargs):
    return args, sorted(kwargs.items())


def helper_raise(x):
    if x < 0:
        raise ValueError("negative: " + str(x))
    return x


def helper_mutate(xs):
    xs.append(len(xs))
    return xs


# ---------------------------------------------------------------------------------------------------------
# Break graph: print and user calls in the middle of pure code (PaddleSOT test_break_graph).

def print_middle(a, b):
    c = a + b
    print("sum", c)
    return c * 2


def print_twice(a):
    x = a * 3
    print("first", x)
    y = x + 1
    print("second", y)
    return x + y


def print_start_end(a):
    print("start")
    r = a ** 2
    print("end", r)
    return r


def print_in_branch(a):
    if a > 0:
        print("positive", a)
        a = a - 1
    else:
        print("non-positive")
    return a


def print_keeps_locals(a, b):
    s = "x" * a
    t = (a, b, s)
    print(s)
    return t, s + str(b)


def print_many_args(a):
    print(a, a + 1, "three", 4.0, None, sep="|", end="!\n")
    return a


def print_returns_none(a):
    r = print(a)
    return r is None, a


def user_call_middle(a, b):
    x = a * 2
    y = helper_add(x, b)
    return x + y


def user_call_printing(a):
    r = helper_print(a + 1)
    return r + a


def user_call_nested(a):
    return helper_add(helper_add(a, 1), helper_add(a, 2))


def user_call_then_fold(a):
    v = helper_add(a, a)
    t = (v, v * 2, str(v))
    return t, len(t[2])


def break_then_loop(n):
    print("before", n)
    total = 0
    for i in range(n):
        total += i
    return total


def loop_then_break(n):
    total = 0
    for i in range(n):
        total += i
    print("after", total)
    return total


def break_inside_loop(n):
    total = 0
    for i in range(n):
        print("i", i)
        total += i
    return total


def break_inside_while(n):
    while n > 0:
        n = helper_add(n, -3)
    return n


def break_inside_try(a):
    try:
        print("in try", a)
        r = a + 1
    except Exception:
        r = 0
    return r


def break_in_return_expr(a):
    return helper_add(a, 1) * 2 + helper_add(a, 2)


def break_keeps_stack(a):
    # The call happens with partial results on the value stack.
    return (a, a + 1, helper_add(a, 3), a + 4)


BREAK_CASES = [
    case(print_middle, 1, 2, breaks=1),
    case(print_twice, 4, breaks=2),
    case(print_start_end, 3, breaks=2),
    case(print_in_branch, 5, breaks=1),
    case(print_in_branch, -5, breaks=1),
    case(print_keeps_locals, 3, 7, breaks=1),
    case(print_many_args, 1, breaks=1),
    case(print_returns_none, 9, breaks=1),
    case(user_call_middle, 3, 4, breaks=0),
    case(user_call_printing, 5, breaks=2),
    case(user_call_nested, 1, breaks=0),
    case(user_call_then_fold, 21, breaks=0),
    case(break_then_loop, 10, breaks=1),
    case(loop_then_break, 10, breaks=1),
    case(break_inside_loop, 3, breaks=1),
    case(break_inside_while, 10, breaks=0),
    case(break_inside_try, 1, breaks=1),
    case(break_in_return_expr, 5, breaks=0),
    case(break_keeps_stack, 5, breaks=0),
]


@run_cases(BREAK_CASES)
def test_break_graph(fn, args, kwargs, breaks, fallbacks, init):
    isolated_check(fn, args, kwargs, breaks, fallbacks, init)


# ---------------------------------------------------------------------------------------------------------
# What a break must carry over to its resume function: unbound locals, partial values on the stack (a list or
# string being built, a comparison chain, keyword names), short-circuit operators.

def unbound_after_break(a):
    x = a
    del x
    print("mid")
    return x  # noqa: F821 - raises UnboundLocalError


def maybe_unbound_after_break(flag):
    if flag:
        y = 1
    print("mid")
    return y  # noqa: F821 - raises UnboundLocalError when flag is false


def many_locals_across_break(a):
    b, c, d, e = a + 1, a * 2, str(a), (a,)
    f = [a]
    print("mid")
    return a, b, c, d, e, f


def break_in_list_display(a, t):
    return [a, *t, helper_add(a, 1), a]


def break_in_fstring(a):
    return f"{a} then {helper_add(a, 1)} and {a:>4}"


def break_in_compare_chain(a):
    return 0 < helper_add(a, 1) < 10


def break_in_keyword_value(a):
    return helper_kw(a, c=helper_add(a, 1))


def break_in_short_circuit(a):
    return a and print("truthy") or "falsy"


def break_in_unpack(a):
    x, y = helper_add(a, 1), helper_add(a, 2)
    return y, x


def break_in_subscript_augassign(a):
    xs = [a, 0]
    xs[0] += helper_add(a, 1)
    return xs


def break_in_conditional_expr(a):
    return helper_add(a, 1) if a > 0 else helper_add(a, -1)


def print_star_args(t):
    print(*t, sep=",")
    return len(t)


def break_in_dict_display(a):
    return {"k": helper_add(a, 1), "j": a}


STACK_CASES = [
    case(unbound_after_break, 1, breaks=2),
    case(maybe_unbound_after_break, True, breaks=1),
    case(maybe_unbound_after_break, False, breaks=2),
    case(many_locals_across_break, 3, breaks=1),
    case(break_in_list_display, 1, (2, 3), breaks=0),
    case(break_in_fstring, 5, breaks=0),
    case(break_in_compare_chain, 3, breaks=0),
    case(break_in_keyword_value, 3, breaks=0),
    case(break_in_short_circuit, 1, breaks=1),
    case(break_in_short_circuit, 0),
    case(break_in_unpack, 1, breaks=0),
    case(break_in_subscript_augassign, 1, breaks=0),
    case(break_in_conditional_expr, 1, breaks=0),
    case(break_in_conditional_expr, -1, breaks=0),
    case(print_star_args, (1, "a"), breaks=1),
    case(break_in_dict_display, 1, breaks=0),
]


@run_cases(STACK_CASES)
def test_stack_across_breaks(fn, args, kwargs, breaks, fallbacks, init):
    isolated_check(fn, args, kwargs, breaks, fallbacks, init)


# ---------------------------------------------------------------------------------------------------------
# What the code after a break must see afresh: cells rebound after the break, a list inside a tuple argument
# mutated, a builtin shadowed by a module global, a module constant rebound, varargs and defaults, recursion.

def cell_arg_after_break(a):
    def get():
        return a
    print("mid")
    a = 5
    return get()


def cell_local_after_break(a):
    x = a

    def get():
        return x
    print("mid")
    x = 100
    return get()


def tuple_inner_list(t):
    n1 = len(t[0])
    t[0].append(2)
    n2 = len(t[0])
    return n1, n2


def folded_len(t):
    return len(t)


def shadow_builtin(t):
    first = folded_len(t)
    globals()["len"] = lambda x: 42
    second = folded_len(t)
    del globals()["len"]
    third = folded_len(t)
    return first, second, third


SCALE = 3


def read_scale():
    return SCALE * 2


def rebind_module_constant(a):
    global SCALE
    first = read_scale()
    SCALE = a
    second = read_scale()
    SCALE = 3
    return first, second


def recursive(n):
    if n <= 1:
        return 1
    return n * recursive(n - 1)


def varargs_after_break(*args, **kwargs):
    print("mid")
    return args, sorted(kwargs.items())


def defaults_after_break(a, b=5, *, c=(1, 2)):
    print("mid")
    return a + b, c


def locals_after_break(a):
    b = a + 1
    print("mid")
    return sorted(locals())


def calls_locals_user(a):
    # A function that calls locals() is declined (it looks at its own frame); its caller is translated.
    return locals_after_break(a)


FRESH_CASES = [
    case(cell_arg_after_break, 1, breaks=2),
    case(cell_local_after_break, 1, breaks=2),
    case(tuple_inner_list, ([1],), breaks=1),
    # del globals()[...] breaks on the module dict: describing it must not repr() what the module holds.
    case(shadow_builtin, (1, 2), breaks=4),
    case(rebind_module_constant, 7, breaks=0),
    case(recursive, 5, breaks=0),
    case(varargs_after_break, 1, 2, k=3, breaks=1),
    case(defaults_after_break, 1, breaks=1),
    case(defaults_after_break, 1, 2, c=None, breaks=1),
    case(calls_locals_user, 1, breaks=1),
]


@run_cases(FRESH_CASES)
def test_fresh_state_after_breaks(fn, args, kwargs, breaks, fallbacks, init):
    isolated_check(fn, args, kwargs, breaks, fallbacks, init)


# ---------------------------------------------------------------------------------------------------------
# Frame introspection after a break: the code that runs is a resume function, it must look like the original.

def frame_name_after_break(a):
    print("mid")
    return sys._getframe().f_code.co_name


def frame_line_after_break(a):
    print("mid")
    return sys._getframe().f_lineno - a


def calls_frame_readers(a):
    # Functions that call sys._getframe are declined (they look at their own frame); their caller is translated.
    return frame_name_after_break(a), frame_line_after_break(a)


def who_called():
    code = sys._getframe(1).f_code
    return code.co_name, code.co_qualname


def caller_identity_after_break(a):
    print("mid")
    return who_called()


FRAME_CASES = [
    case(calls_frame_readers, 1, breaks=2),
    case(caller_identity_after_break, 1, breaks=2),
]


@run_cases(FRAME_CASES)
def test_frame_introspection(fn, args, kwargs, breaks, fallbacks, init):
    isolated_check(fn, args, kwargs, breaks, fallbacks, init)


# ---------------------------------------------------------------------------------------------------------
# Calls and argument unpacking: keywords, defaults, *args, **kwargs (PaddleSOT test_06_call_function,
# test_07_unpack, test_call_object).

def call_keywords(a):
    return helper_kw(a, c=5), helper_kw(a, b=1), helper_kw(b=4, a=a)


def call_defaults(a):
    return helper_kw(a)


def call_star_args(t):
    return helper_add(*t)


def call_star_kwargs(a):
    return helper_kw(**{"a": a, "b": 7, "c": 8})


def call_varargs(a, b):
    return helper_varargs(a, b, x=1, y=2)


def call_varargs_star(t):
    return helper_varargs(*t, *t)


def own_varargs(*args):
    return len(args), args[0] + args[-1]


def own_kwargs(**kwargs):
    return sorted(kwargs), len(kwargs)


def own_mixed(a, *args, k=1, **kwargs):
    return a, args, k, len(kwargs)


def kw_only(a, *, b, c=10):
    return a + b + c


def positional_only(a, b, /, c):
    return a * b - c


def builtin_keywords(t):
    return sorted(t, reverse=True), max(t, default=0), min((), default=-1)


def builtin_key_lambda(t):
    return sorted(t, key=lambda x: -x)


def call_bad_arity(a):
    return helper_add(a)


def call_bad_keyword(a):
    return helper_kw(a, d=1)


CALL_CASES = [
    case(call_keywords, 1, breaks=0),
    case(call_defaults, 2, breaks=0),
    case(call_star_args, (3, 4), breaks=0),
    case(call_star_kwargs, 1, breaks=0),
    case(call_varargs, 1, 2, breaks=0),
    case(call_varargs_star, (1, 2), breaks=0),
    case(own_varargs, 1, 2, 3),
    case(own_kwargs, x=1, y=2, breaks=0),
    case(own_mixed, 1, 2, 3, k=4, z=5, breaks=0),
    case(kw_only, 1, b=2),
    case(kw_only, 1, b=2, c=3),
    case(positional_only, 3, 4, c=5),
    case(builtin_keywords, (3, 1, 2), breaks=3),
    case(builtin_key_lambda, (3, 1, 2), breaks=1),
    case(call_bad_arity, 1, breaks=1),
    case(call_bad_keyword, 1, breaks=1),
]


@run_cases(CALL_CASES)
def test_calls(fn, args, kwargs, breaks, fallbacks, init):
    isolated_check(fn, args, kwargs, breaks, fallbacks, init)


# ---------------------------------------------------------------------------------------------------------
# make_function and closures: lambdas, nested defs, defaults, nonlocal (PaddleSOT
# test_13_make_function, test_19_closure).

def lambda_call(a):
    f = lambda x: x + 1  # noqa: E731
    return f(a)


def lambda_default(a):
    f = lambda x, y=10: x * y  # noqa: E731
    return f(a), f(a, 2)


def nested_def(a):
    def inner(x):
        return x * 3
    return inner(a) + 1


def nested_def_defaults(a):
    def inner(x, y=a):
        return x - y
    return inner(10)


def closure_read(a):
    def inner():
        return a * 2
    return inner()


def closure_nonlocal(a):
    count = a

    def bump():
        nonlocal count
        count += 1
    bump()
    bump()
    return count


def closure_counter(n):
    def make():
        c = 0

        def step():
            nonlocal c
            c += n
            return c
        return step
    s = make()
    s()
    return s()


def closure_cell_after_break(a):
    x = a + 1
    print("x", x)

    def inner():
        return x * 2
    return inner()


def returns_function(a):
    def inner(b):
        return a + b
    return inner(1), inner.__name__


def closure_late_binding(n):
    fs = [lambda: i for i in range(n)]  # noqa: B023
    return fs[0]()


def closure_late_binding_caller(n):
    # from 3.12 closure_late_binding itself is declined (an inlined comprehension whose variable is a cell)
    return closure_late_binding(n)


def decorated(a):
    @functools.wraps(helper_add)
    def wrapper(x, y):
        return helper_add(x, y) * 2
    return wrapper(a, 1), wrapper.__name__


def partial_call(a):
    p = functools.partial(helper_add, 10)
    return p(a)


CLOSURE_CASES = [
    case(lambda_call, 1, breaks=0),
    case(lambda_default, 3, breaks=0),
    case(nested_def, 2, breaks=0),
    case(nested_def_defaults, 4, breaks=0),
    case(closure_read, 5, breaks=0),
    case(closure_nonlocal, 1, breaks=0),
    case(closure_counter, 3, breaks=0),
    case(closure_cell_after_break, 3, breaks=1),
    case(returns_function, 3, breaks=1),
    case(closure_late_binding_caller, 3, breaks=by_version(0, 1, 1)),
    case(decorated, 1, breaks=3),
    case(partial_call, 1, breaks=2),
]


@run_cases(CLOSURE_CASES)
def test_closures(fn, args, kwargs, breaks, fallbacks, init):
    isolated_check(fn, args, kwargs, breaks, fallbacks, init)


# ---------------------------------------------------------------------------------------------------------
# Globals: reading constants and mutable globals, STORE_GLOBAL, global mutation through methods
# (PaddleSOT test_21_global).

g_counter = 0
g_list = []
g_dict = {}
g_name = "sot"
G_CONST = (1, 2, 3)


def read_global_const(a):
    return G_CONST[a] + len(G_CONST)


def read_global_str(a):
    return g_name * a


def write_global(a):
    global g_counter
    g_counter = a * 2
    return g_counter


def increment_global(a):
    global g_counter
    g_counter += a
    g_counter += 1
    return g_counter


def write_global_twice(a):
    global g_counter, g_name
    g_counter = a
    g_name = "name" + str(a)
    return g_name


def global_list_append(a):
    g_list.append(a)
    g_list.append(a + 1)
    return len(g_list)


def global_dict_setitem(a):
    g_dict["k"] = a
    g_dict[a] = "v"
    return sorted(g_dict.items(), key=str)


def global_rebind_list(a):
    global g_list
    g_list = [a, a]
    g_list.append(3)
    return g_list


def delete_global(a):
    global g_counter
    del g_counter
    return a


def global_read_after_write(a):
    global g_counter
    g_counter = a + 1
    return helper_add(g_counter, 1)


GLOBAL_CASES = [
    case(read_global_const, 1),
    case(read_global_str, 2, init={"g_name": "ab"}),
    case(write_global, 5, init={"g_counter": 0}, breaks=0),
    case(increment_global, 5, init={"g_counter": 10}, breaks=0),
    case(write_global_twice, 3, init={"g_counter": 0, "g_name": "x"}, breaks=0),
    case(global_list_append, 1, init={"g_list": [0]}, breaks=0),
    case(global_dict_setitem, 1, init={"g_dict": {}}, breaks=1),
    case(global_rebind_list, 1, init={"g_list": []}, breaks=0),
    case(delete_global, 1, init={"g_counter": 1}, breaks=0),
    case(global_read_after_write, 4, init={"g_counter": 0}, breaks=0),
]


@run_cases(GLOBAL_CASES)
def test_globals(fn, args, kwargs, breaks, fallbacks, init):
    isolated_check(fn, args, kwargs, breaks, fallbacks, init)


# ---------------------------------------------------------------------------------------------------------
# Side effects on the arguments: list and dict mutations the caller sees (PaddleSOT test_side_effects).

def list_append_arg(xs):
    xs.append(4)
    return xs


def list_setitem_arg(xs):
    xs[0] = 100
    xs[-1] = -1
    return len(xs)


def list_delitem_arg(xs):
    del xs[0]
    return xs


def list_pop_arg(xs):
    x = xs.pop()
    y = xs.pop(0)
    return x, y, xs


def list_sort_arg(xs):
    xs.sort()
    xs.reverse()
    return None


def list_extend_arg(xs):
    xs.extend((7, 8))
    xs += [9]
    return xs


def list_clear_arg(xs):
    xs.clear()
    return len(xs)


def list_insert_remove_arg(xs):
    xs.insert(0, "first")
    xs.remove(2)
    return xs


def list_slice_assign_arg(xs):
    xs[1:3] = [0, 0, 0]
    return xs


def dict_setitem_arg(d):
    d["new"] = 1
    d["a"] = d["a"] + 1
    return d


def dict_update_arg(d):
    d.update({"x": 1}, y=2)
    return len(d)


def dict_pop_arg(d):
    v = d.pop("a")
    w = d.pop("missing", None)
    return v, w, d


def dict_clear_arg(d):
    d.clear()
    d["only"] = 0
    return d


def dict_setdefault_arg(d):
    d.setdefault("a", 100)
    d.setdefault("z", []).append(1)
    return d


def dict_del_arg(d):
    del d["a"]
    return sorted(d)


def nested_mutation(d):
    d["list"].append(3)
    d["list"][0] = "changed"
    return d


def mutate_through_helper(xs):
    helper_mutate(xs)
    return xs


def mutate_then_raise(xs):
    xs.append(1)
    raise RuntimeError("after mutation")


def alias_mutation(xs):
    ys = xs
    ys.append("via alias")
    return xs is ys


def set_mutation(s):
    s.add(4)
    s.discard(1)
    return len(s)


def local_list_escapes(a):
    xs = [a]
    xs.append(a + 1)
    print(xs)
    xs.append(a + 2)
    return xs


SIDE_EFFECT_CASES = [
    case(list_append_arg, [1, 2, 3], breaks=0),
    case(list_setitem_arg, [1, 2, 3], breaks=0),
    case(list_delitem_arg, [1, 2, 3], breaks=0),
    case(list_pop_arg, [1, 2, 3, 4], breaks=0),
    case(list_sort_arg, [3, 1, 2], breaks=2),
    case(list_extend_arg, [1], breaks=2),
    case(list_clear_arg, [1, 2], breaks=0),
    case(list_insert_remove_arg, [1, 2, 3], breaks=2),
    case(list_slice_assign_arg, [1, 2, 3, 4], breaks=1),
    case(dict_setitem_arg, {"a": 1}, breaks=0),
    case(dict_update_arg, {"a": 1}, breaks=1),
    case(dict_pop_arg, {"a": 1, "b": 2}, breaks=0),
    case(dict_clear_arg, {"a": 1}, breaks=0),
    case(dict_setdefault_arg, {"a": 1}, breaks=0),
    case(dict_del_arg, {"a": 1, "b": 2}),  # sorted() reads the changed dict through its model
    case(nested_mutation, {"list": [1, 2]}, breaks=1),
    case(mutate_through_helper, [5], breaks=0),
    case(mutate_then_raise, [0], breaks=2),
    case(alias_mutation, [0], breaks=0),
    case(set_mutation, {1, 2, 3}, breaks=5),
    case(local_list_escapes, 1, breaks=1),
]


@run_cases(SIDE_EFFECT_CASES)
def test_side_effects(fn, args, kwargs, breaks, fallbacks, init):
    isolated_check(fn, args, kwargs, breaks, fallbacks, init)


# ---------------------------------------------------------------------------------------------------------
# User classes: attributes, properties, methods, super(), dunder methods.

class Point:
    def __init__(self, x, y):
        self.x = x
        self.y = y

    def norm2(self):
        return self.x * self.x + self.y * self.y

    def moved(self, dx):
        return Point(self.x + dx, self.y)

    def __eq__(self, other):
        return isinstance(other, Point) and (self.x, self.y) == (other.x, other.y)

    def __repr__(self):
        return f"Point({self.x}, {self.y})"


class Temperature:
    def __init__(self, c):
        self._c = c

    @property
    def f(self):
        return self._c * 9 / 5 + 32

    @f.setter
    def f(self, value):
        self._c = (value - 32) * 5 / 9

    def __eq__(self, other):
        return isinstance(other, Temperature) and self._c == other._c


class Base:
    kind = "base"

    def describe(self):
        return "I am " + self.kind

    @classmethod
    def make(cls):
        return cls()

    @staticmethod
    def twice(x):
        return 2 * x


class Derived(Base):
    kind = "derived"

    def describe(self):
        return super().describe() + "!"


class Loud(Base):
    def describe(self):
        print("describing")
        return super().describe() + "?"


class Vector:
    def __init__(self, *xs):
        self.xs = xs

    def __add__(self, other):
        return Vector(*(a + b for a, b in zip(self.xs, other.xs)))

    def __len__(self):
        return len(self.xs)

    def __getitem__(self, i):
        return self.xs[i]

    def __eq__(self, other):
        return isinstance(other, Vector) and self.xs == other.xs


def make_point(a, b):
    p = Point(a, b)
    return p.x + p.y


def point_method(p):
    return p.norm2()


def point_set_attr(p):
    p.x = 100
    p.z = "new"
    return p.x


def point_moved(p):
    q = p.moved(5)
    return q == Point(p.x + 5, p.y), repr(q)


def property_get_set(t):
    before = t.f
    t.f = 212
    return before, t._c


def super_call(a):
    return Derived().describe(), Base().describe()


def super_after_print(a):
    return Loud().describe()


def class_and_static(a):
    return type(Derived.make()).__name__, Base.twice(a)


def dunder_methods(a):
    v = Vector(1, 2) + Vector(a, a)
    return len(v), v[0], v[-1]


def isinstance_checks(a):
    d = Derived()
    return isinstance(d, Base), isinstance(a, int), issubclass(Derived, Base), type(a) is int


def getattr_default(p):
    return getattr(p, "x"), getattr(p, "missing", "default"), hasattr(p, "y")


def missing_attribute(p):
    return p.nope


def class_attr_read(a):
    return Base.kind + Derived.kind * a


g_repr_calls = []


class PrintingRepr:
    v = 2

    def __repr__(self):
        print("repr called")
        return "PrintingRepr()"

    def __eq__(self, other):
        return isinstance(other, PrintingRepr)


class RecordingRepr:
    v = 3

    def __repr__(self):
        g_repr_calls.append("repr")
        return "RecordingRepr()"

    def __eq__(self, other):
        return isinstance(other, RecordingRepr)


def attribute_of_printing_repr(o):
    return o.v + 1


def attribute_of_recording_repr(o):
    return o.v * 2


def class_body_with_print(a):
    class Body:
        x = a
        print("class body", x)
        y = x + 1
        z = [x, y]
    return Body.x, Body.y, Body.z


def local_class(a):
    class Local:
        value = a

        def get(self):
            return self.value * 2
    return Local().get()


CLASS_CASES = [
    case(make_point, 1, 2, breaks=0),
    case(point_method, Point(3, 4), breaks=0),
    case(point_set_attr, Point(1, 2), breaks=0),
    case(point_moved, Point(1, 2), breaks=2),
    case(property_get_set, Temperature(100), breaks=1),
    case(super_call, 1, breaks=0),
    case(super_after_print, 1, breaks=1),
    case(class_and_static, 3, breaks=1),
    case(dunder_methods, 5, breaks=6),
    case(isinstance_checks, 1, breaks=1),
    case(getattr_default, Point(1, 2), breaks=3),
    case(missing_attribute, Point(1, 2), breaks=1),
    case(class_attr_read, 2, breaks=0),
    case(attribute_of_printing_repr, PrintingRepr(), breaks=0),
    case(attribute_of_recording_repr, RecordingRepr(), init={"g_repr_calls": []}, breaks=0),
    case(class_body_with_print, 3, breaks=2),
    case(local_class, 3, breaks=2),
]


@run_cases(CLASS_CASES)
def test_user_classes(fn, args, kwargs, breaks, fallbacks, init):
    isolated_check(fn, args, kwargs, breaks, fallbacks, init)


# ---------------------------------------------------------------------------------------------------------
# Exceptions: try/except/finally, raise, custom exceptions, exceptions from callees (PaddleSOT
# test_exception).

class CustomError(Exception):
    def __init__(self, code):
        super().__init__(f"custom error {code}")
        self.code = code


def try_no_error(a):
    try:
        r = a + 1
    except ZeroDivisionError:
        r = -1
    return r


def try_catches(a):
    try:
        r = 10 // a
    except ZeroDivisionError:
        r = -1
    return r


def try_finally(a):
    out = []
    try:
        out.append(a)
    finally:
        out.append("finally")
    return out


def try_else(a):
    try:
        r = a * 2
    except Exception:
        r = 0
    else:
        r += 1
    return r


def raise_value_error(a):
    if a > 0:
        raise ValueError(f"bad value {a}")
    return a


def raise_custom(a):
    raise CustomError(a)


def raise_from(a):
    try:
        return 1 // a
    except ZeroDivisionError as e:
        raise RuntimeError("wrapped") from e


def catch_custom(a):
    try:
        raise_custom(a)
    except CustomError as e:
        return e.code, str(e)


def catch_from_callee(a):
    try:
        return helper_raise(a)
    except ValueError as e:
        return str(e)


def callee_raises(a):
    x = a + 1
    return helper_raise(-x)


def reraise(a):
    try:
        raise KeyError(a)
    except KeyError:
        raise


def nested_try(a):
    try:
        try:
            1 // a
        finally:
            print("inner finally")
    except ZeroDivisionError:
        return "caught"
    return "no error"


def assert_fails(a):
    assert a > 10, "too small"
    return a


def exception_object(a):
    e = ValueError("msg", a)
    return e.args, type(e).__name__


def except_tuple(a):
    try:
        (1, 2)[a]
    except (IndexError, KeyError) as e:
        return type(e).__name__
    return "ok"


EXCEPTION_CASES = [
    case(try_no_error, 1),
    case(try_catches, 0, breaks=1),
    case(try_catches, 5),
    case(try_finally, 1),
    case(try_else, 3),
    case(raise_value_error, 1, breaks=2),
    case(raise_value_error, -1),
    case(raise_custom, 3, breaks=2),
    case(raise_from, 0, breaks=1),
    case(catch_custom, 2, breaks=3),
    case(catch_from_callee, -1, breaks=3),
    case(catch_from_callee, 4, breaks=0),
    case(callee_raises, 2, breaks=3),
    case(reraise, 1, breaks=1),
    case(nested_try, 0, breaks=1),
    case(nested_try, 1, breaks=1),
    case(assert_fails, 1, breaks=3),
    case(assert_fails, 11),
    case(exception_object, 1, breaks=3),
    case(except_tuple, 5, breaks=1),
    case(except_tuple, 1),
]


@run_cases(EXCEPTION_CASES)
def test_exceptions(fn, args, kwargs, breaks, fallbacks, init):
    isolated_check(fn, args, kwargs, breaks, fallbacks, init)


# ---------------------------------------------------------------------------------------------------------
# With statements: a context manager class, exceptions through __exit__.

class Recorder:
    def __init__(self, name, swallow=False):
        self.name = name
        self.swallow = swallow

    def __enter__(self):
        print("enter", self.name)
        return self

    def __exit__(self, exc_type, exc, tb):
        print("exit", self.name, exc_type.__name__ if exc_type else None)
        return self.swallow


def with_basic(a):
    with Recorder("r"):
        r = a + 1
    return r


def with_as(a):
    with Recorder("named") as rec:
        name = rec.name
    return name * a


def with_swallows(a):
    with Recorder("swallow", swallow=True):
        1 // a
    return "after"


def with_propagates(a):
    with Recorder("propagate"):
        raise KeyError(a)


def with_nested(a):
    with Recorder("outer"), Recorder("inner"):
        r = a * 2
    return r


def with_return_inside(a):
    with Recorder("ret"):
        return a + 1


WITH_CASES = [
    case(with_basic, 1, breaks=4),
    case(with_as, 2, breaks=4),
    case(with_swallows, 0, breaks=6),
    case(with_propagates, 1, breaks=6),
    case(with_nested, 3, breaks=4),
    case(with_return_inside, 3, breaks=4),
]


@run_cases(WITH_CASES)
def test_with_statements(fn, args, kwargs, breaks, fallbacks, init):
    isolated_check(fn, args, kwargs, breaks, fallbacks, init)


# ---------------------------------------------------------------------------------------------------------
# Generators consumed by a caller: the generator itself is never translated, its caller is.

def gen_range(n):
    for i in range(n):
        yield i * i


def gen_with_return(n):
    yield n
    yield n + 1
    return "done"


def gen_send():
    total = 0
    while True:
        x = yield total
        if x is None:
            return total
        total += x


async def coroutine(a):
    print("in coroutine", a)
    await asyncio.sleep(0)
    return a * 2


def consume_coroutine(a):
    return asyncio.run(coroutine(a))


def consume_list(n):
    return list(gen_range(n))


def consume_sum(n):
    return sum(gen_range(n))


def consume_next(n):
    g = gen_range(n)
    first = next(g)
    second = next(g)
    return first, second


def consume_return_value(n):
    g = gen_with_return(n)
    out = list(g)
    return out


def consume_stop_iteration(n):
    g = gen_with_return(n)
    next(g)
    next(g)
    try:
        next(g)
    except StopIteration as e:
        return e.value


def consume_send(a):
    g = gen_send()
    next(g)
    g.send(a)
    return g.send(a * 2)


def consume_for(n):
    total = 0
    for x in gen_range(n):
        total += x
    return total


def genexp_sum(n):
    return sum(x * 2 for x in range(n))


def consume_yield_from(n):
    def outer():
        yield from gen_range(n)
        yield -1
    return list(outer())


def genexp_side_effects(log, n):
    total = sum(log.append(i) or i * i for i in range(n))
    log.append("sum")
    return total, list(log)


def genexp_of_a_closure(xs, k):
    scale = k * 2
    return sorted(x * scale for x in xs if x != k), max(len(str(x)) for x in xs)


def genexp_into_min_and_tuple(xs):
    return min(-x for x in xs), tuple(str(x) for x in xs if x > 2)


def genexp_into_set(xs):
    return set(x % 3 for x in xs)  # (set() of the list is not simulated: it breaks there)


def genexp_any_breaks(xs):
    return any(x > 2 for x in xs)


def genexp_kept_breaks(n):
    g = (i * 2 for i in range(n))
    return sum(g)


def genexp_raises_breaks(xs):
    return sum(10 // x for x in xs)


def gen_function_with_return(n):
    return list(gen_with_return(n)), tuple(gen_range(n))


def genexp_yield_from_breaks(n):
    def outer():
        yield from gen_range(n)
    return sum(outer())


GENERATOR_CASES = [
    case(consume_list, 5, breaks=0),  # (run to its end inline: list() takes every item)
    case(consume_sum, 5, breaks=0),
    case(consume_next, 5, breaks=3),
    case(consume_return_value, 2, breaks=2),
    case(consume_stop_iteration, 2, breaks=4),
    case(consume_send, 3, breaks=6),
    case(consume_for, 5, breaks=3),
    case(genexp_sum, 5, breaks=0),
    case(consume_coroutine, 2, breaks=2),
    case(consume_yield_from, 3, breaks=2),
    case(genexp_side_effects, [], 4, breaks=0),
    case(genexp_of_a_closure, [3, 1, 4, 1, 5], 1, breaks=0),
    case(genexp_into_min_and_tuple, (7, 2, 9, 4), breaks=0),
    case(genexp_into_set, (7, 2, 9, 4), breaks=1),
    case(genexp_any_breaks, (1, 2, 3), breaks=2),
    case(genexp_kept_breaks, 4, breaks=2),
    case(genexp_raises_breaks, (5, 2, 0), breaks=2),
    case(gen_function_with_return, 3, breaks=0),
    case(genexp_yield_from_breaks, 3, breaks=2),
]


@run_cases(GENERATOR_CASES)
def test_generators(fn, args, kwargs, breaks, fallbacks, init):
    isolated_check(fn, args, kwargs, breaks, fallbacks, init)


# ---------------------------------------------------------------------------------------------------------
# Builtin dispatch: builtins on constants fold, on objects they break (PaddleSOT test_builtin_dispatch).

def dispatch_len(xs, t):
    return len(xs), len(t), len("abc")


def dispatch_bool(a, xs):
    return bool(a), bool(xs), bool(()), bool("")


def dispatch_abs_neg(a, x):
    return abs(a), abs(x), -a, operator.neg(a)


def dispatch_operator_module(a, b):
    return operator.add(a, b), operator.mul(a, b), operator.getitem((a, b), 1)


def dispatch_math(x):
    return math.floor(x), math.isnan(x), math.hypot(x, 1.0), math.isinf(x)


def dispatch_isinstance(a):
    return isinstance(a, (int, float)), isinstance(a, str)


def dispatch_list_builtins(xs):
    return sum(xs), max(xs), sorted(xs), list(reversed(xs))


def dispatch_zip_enumerate(t):
    return list(zip(t, t)), list(enumerate(t))


def dispatch_map_filter(t):
    return list(map(str, t)), list(filter(None, t))


def dispatch_id_hash(s):
    return hash(s) == hash(s), id(s) == id(s)


def dispatch_type(a):
    return type(a), type(a).__name__


def dispatch_range(n):
    r = range(n)
    return len(r), r[-1], tuple(r)


def dispatch_chr_ord(a):
    return chr(a), ord(chr(a)), "%c" % a


def dispatch_pow_divmod(a, b):
    return pow(a, b), pow(a, b, 7), divmod(a, b)


def dispatch_round(x):
    return round(x), round(x, 1), round(-x)


BUILTIN_CASES = [
    case(dispatch_len, [1, 2], (1, 2, 3), breaks=0),
    case(dispatch_bool, 0, [1], breaks=1),
    case(dispatch_abs_neg, -3, -2.5, breaks=1),
    case(dispatch_operator_module, 2, 3, breaks=3),
    case(dispatch_math, 2.5),
    case(dispatch_isinstance, 1, breaks=0),
    case(dispatch_list_builtins, [3, 1, 2], breaks=4),
    case(dispatch_zip_enumerate, (1, 2), breaks=0),
    case(dispatch_map_filter, (0, 1, 2), breaks=0),
    case(dispatch_id_hash, "abc", breaks=2),
    case(dispatch_type, 3, breaks=1),
    case(dispatch_range, 5),
    case(dispatch_chr_ord, 65),
    case(dispatch_pow_divmod, 3, 4, breaks=2),
    case(dispatch_round, 2.35),
]


@run_cases(BUILTIN_CASES)
def test_builtin_dispatch(fn, args, kwargs, breaks, fallbacks, init):
    isolated_check(fn, args, kwargs, breaks, fallbacks, init)
