"""Differential tests ported from PaddleSOT's suite, the mostly pure-Python part: basics and in-place stores,
tuple, list, dict and set operations, rotations (ROT/SWAP), f-strings, jumps and loops, operators, slicing,
strings, comprehensions, folding edge cases (exact types, -0.0, NaN, bools), subclasses of folded types, big code
objects (EXTENDED_ARG), guards (a translated callee called again with other values), mutable data built inside
the function.

Each case runs plainly and translated (first call and from the cache), in a forked child so that a translator
crash fails that case only, and pins its break and fallback counts (``by_version`` where the bytecode of 3.11,
3.12 and 3.13 differs). Known translator bugs are strict xfails (``Bug``).
PYTEST_DONT_REWRITE: the test subjects are plain Python, pytest must not rewrite them."""

import collections
import enum
import operator
import os
import sys
import traceback

import pytest
from differential import Bug, by_version, case, isolated_check, run_cases  # noqa: F401


# ---------------------------------------------------------------------------------------------------------
# Basics and in-place stores (PaddleSOT test_01_basic, test_02_store_inplace).

def basic_add_sub(a, b):
    return a + b - 1


def basic_str_concat(s):
    return s + "-" + s


def inplace_ops(a):
    a += 3
    a *= 2
    a -= 1
    a /= 2
    return a


def inplace_str(s):
    s += "x"
    s *= 2
    return s


def inplace_tuple(t):
    t += (9,)
    t *= 2
    return t


def inplace_local_list(a):
    xs = [a]
    xs += [a + 1]
    xs *= 2
    return xs


def inplace_arg_list(xs):
    xs += [0]
    return xs


def store_subscr_local(a):
    xs = [0, 0, 0]
    xs[1] = a
    xs[-1] = a * 2
    return xs


def store_and_delete(a):
    b = a + 1
    del b
    b = a + 2
    return b


def multiple_targets(a):
    x = y = a * 2
    return x + y


BASIC_CASES = [
    case(basic_add_sub, 1, 2),
    case(basic_add_sub, 1.5, -2),
    case(basic_str_concat, "ab"),
    case(inplace_ops, 5),
    case(inplace_str, "ab"),
    case(inplace_tuple, (1, 2)),
    case(inplace_local_list, 1, breaks=2),
    case(inplace_arg_list, [1], breaks=1),
    case(store_subscr_local, 4, breaks=0),
    case(store_and_delete, 1),
    case(multiple_targets, 3),
]


@run_cases(BASIC_CASES)
def test_basics(fn, args, kwargs, breaks, fallbacks, init):
    isolated_check(fn, args, kwargs, breaks, fallbacks, init)


# ---------------------------------------------------------------------------------------------------------
# Tuples, lists, dicts, sets built inside the function (PaddleSOT test_03_tuple, test_04_list,
# test_05_dict, test_07_unpack, test_10_build_unpack).

def tuple_index_count(t):
    return t.index(2), t.count(1), t[1:3], t[-1]


def tuple_compare(a, b):
    return (a, 1) < (b, 2), (a,) == (a,), (1, 2) + (a,) > (1, 2)


def tuple_nested(a):
    t = ((a, 2), (3, (4, a)))
    return t[1][1][1], len(t), t[0] + t[1]


def tuple_unpack_star(t):
    first, *rest = t
    *init, last = t
    return first, rest, init, last


def tuple_unpack_middle(t):
    a, *mid, b = t
    return a, mid, b


def list_methods(a):
    xs = [3, 1, a]
    xs.append(4)
    xs.insert(0, 7)
    xs.extend((8, 9))
    p = xs.pop()
    q = xs.pop(0)
    return xs, p, q


def list_index_count(a):
    xs = [1, 2, a, 2]
    return xs.index(2), xs.count(2), a in xs


def list_sort_reverse(a):
    xs = [3, a, 1]
    xs.sort()
    ys = [3, a, 1]
    ys.reverse()
    return xs, ys


def list_remove_clear(a):
    xs = [1, a, 3]
    xs.remove(a)
    ys = [1, 2]
    ys.clear()
    return xs, ys


def list_copy_concat(a):
    xs = [a, a + 1]
    ys = xs.copy()
    ys.append(0)
    return xs, ys, xs + ys, xs * 2


def list_del_item(a):
    xs = [1, 2, 3, a]
    del xs[0]
    del xs[-1]
    return xs


def list_slice_store(a):
    xs = [1, 2, 3, 4]
    xs[1:3] = [a]
    return xs


def list_to_tuple(a):
    xs = [a, 2]
    return tuple(xs), list((a, 3)), list("ab")


def list_nested_build(a):
    return [[a], [a, a], []]


def list_compare(a):
    return [1, a] == [1, a], [1] < [a], [] == []


def dict_build(a, b):
    d = {"a": a, "b": b}
    return d


def dict_get_keys(a):
    d = {"x": a, "y": 2}
    return d["x"], d.get("z", 0), sorted(d.keys()), sorted(d.values()), len(d)


def dict_setitem_local(a):
    d = {}
    d["k"] = a
    d["k"] += 1
    return d


def dict_update_local(a):
    d = {"a": 1}
    d.update({"b": a})
    return d


def dict_items_loop(a):
    d = {"a": a, "b": 2}
    total = 0
    for k, v in d.items():
        total += v
    return total


def dict_missing_key(a):
    d = {"a": a}
    return d["missing"]


def dict_merge(a):
    d1 = {"a": a}
    d2 = {"b": 2}
    return {**d1, **d2}


def dict_from_pairs(a):
    return dict([("a", a), ("b", 2)]), dict(x=a)


def set_build(a):
    s = {a, 1, 2, a}
    return len(s), a in s, sorted(s)


def set_ops(a):
    s1 = {1, 2, a}
    s2 = {2, 3}
    return sorted(s1 | s2), sorted(s1 & s2), sorted(s1 - s2), sorted(s1 ^ s2)


def frozenset_ops(a):
    f = frozenset((1, 2, a))
    return len(f), 2 in f, sorted(f)


CONTAINER_CASES = [
    case(tuple_index_count, (1, 2, 3, 1)),
    case(tuple_compare, 1, 2),
    case(tuple_nested, 5),
    case(tuple_unpack_star, (1, 2, 3, 4), breaks=2),
    case(tuple_unpack_middle, (1, 2, 3, 4, 5), breaks=1),
    case(list_methods, 5, breaks=1),
    case(list_index_count, 2, breaks=4),
    case(list_sort_reverse, 2, breaks=2),
    case(list_remove_clear, 9, breaks=2),
    case(list_copy_concat, 1, breaks=1),
    case(list_del_item, 4, breaks=0),
    case(list_slice_store, 0, breaks=1),
    case(list_to_tuple, 1, breaks=1),
    case(list_nested_build, 1),
    case(list_compare, 2),
    case(dict_build, 1, 2, breaks=0),
    case(dict_get_keys, 1, breaks=0),
    case(dict_setitem_local, 1, breaks=0),
    case(dict_update_local, 1, breaks=0),
    case(dict_items_loop, 1, breaks=0),
    case(dict_missing_key, 1, breaks=1),
    case(dict_merge, 1, breaks=0),
    case(dict_from_pairs, 1, breaks=2),
    case(set_build, 3, breaks=0),
    case(set_ops, 3, breaks=8),
    case(frozenset_ops, 3),
]


@run_cases(CONTAINER_CASES)
def test_containers(fn, args, kwargs, breaks, fallbacks, init):
    isolated_check(fn, args, kwargs, breaks, fallbacks, init)


# ---------------------------------------------------------------------------------------------------------
# Rotations: the ROT_N / SWAP / COPY patterns of multiple assignment (PaddleSOT test_08_rot).

def rot_two(a, b):
    a, b = b, a
    return a, b


def rot_three(a, b, c):
    a, b, c = c, a, b
    return a, b, c


def rot_four(a, b, c, d):
    a, b, c, d = d, c, b, a
    return a, b, c, d


def rot_five(a, b, c, d, e):
    a, b, c, d, e = e, a, d, b, c
    return a * 10000 + b * 1000 + c * 100 + d * 10 + e


def rot_subscript(a):
    xs = [a, a + 1, a + 2]
    xs[0], xs[2] = xs[2], xs[0]
    return xs


def rot_chained_compare(a, b, c):
    return a < b < c < 10


def rot_augmented_subscript(a):
    xs = [a, 1]
    xs[0] += 5
    return xs


def rot_with_print(a, b, c):
    print(a, b, c)
    a, b, c = c, a, b
    return a, b, c


ROT_CASES = [
    case(rot_two, 1, 2),
    case(rot_three, 1, 2, 3),
    case(rot_four, 1, 2, 3, 4),
    case(rot_five, 1, 2, 3, 4, 5),
    case(rot_subscript, 1, breaks=0),
    case(rot_chained_compare, 1, 2, 3),
    case(rot_chained_compare, 1, 3, 2),
    case(rot_augmented_subscript, 1, breaks=0),
    case(rot_with_print, 1, "b", 3.0, breaks=1),
]


@run_cases(ROT_CASES)
def test_rotations(fn, args, kwargs, breaks, fallbacks, init):
    isolated_check(fn, args, kwargs, breaks, fallbacks, init)


# ---------------------------------------------------------------------------------------------------------
# f-strings and formatting (PaddleSOT test_09_f_string).

def fstring_basic(a, s):
    return f"a={a}, s={s}"


def fstring_specs(x):
    return f"{x:8.3f}|{x:<8}|{x:e}|{x:%}"


def fstring_conversions(s):
    return f"{s!r} {s!s} {s!a}"


def fstring_nested_spec(x, width):
    return f"{x:{width}.{width - 2}f}"


def fstring_expressions(a):
    return f"{a + 1} {a * 2:03} {[a, a][0]} {'x' if a else 'y'}"


def fstring_with_print(a):
    msg = f"value {a}"
    print(msg)
    return msg


def fstring_of_object(xs):
    return f"{xs}"


def format_builtin(a):
    return format(a, "08b"), "{:>4}".format(a), "{0}-{0}".format(a)


FSTRING_CASES = [
    case(fstring_basic, 1, "x"),
    case(fstring_specs, 3.14159),
    case(fstring_conversions, "é"),
    case(fstring_nested_spec, 2.5, 7),
    case(fstring_expressions, 3),
    case(fstring_with_print, 3, breaks=1),
    case(fstring_of_object, [1, 2], breaks=1),
    case(format_builtin, 5),
]


@run_cases(FSTRING_CASES)
def test_fstrings(fn, args, kwargs, breaks, fallbacks, init):
    isolated_check(fn, args, kwargs, breaks, fallbacks, init)


# ---------------------------------------------------------------------------------------------------------
# Jumps and loops (PaddleSOT test_11_jumps, test_12_for_loop).

def jump_if_none(a):
    return "none" if a is None else "some"


def jump_on_truthiness(t):
    if t:
        return len(t)
    return -1


def jump_and_or_chain(a, b, c):
    if a and (b or c):
        return 1
    if not a or c:
        return 2
    return 3


def jump_on_object(xs):
    if xs:
        return "nonempty"
    return "empty"


def while_break_else(n):
    i = 0
    while i < n:
        if i == 3:
            break
        i += 1
    else:
        i = -1
    return i


def while_true_break(n):
    i = 0
    while True:
        i += 2
        if i > n:
            break
    return i


def for_enumerate(t):
    total = 0
    for i, x in enumerate(t):
        total += i * x
    return total


def for_zip(a, b):
    out = []
    for x, y in zip(a, b):
        out.append(x + y)
    return out


def for_nested_break(n):
    found = None
    for i in range(n):
        for j in range(n):
            if i * j == 6:
                found = (i, j)
                break
        if found:
            break
    return found


def for_over_arg_list(xs):
    total = 0
    for x in xs:
        total += x
    return total


def for_with_print_after(n):
    total = 0
    for i in range(n):
        total += i
    print("total", total)
    return total


def for_reversed_dict_keys(a):
    total = 0
    for k in reversed((1, 2, a)):
        total = total * 10 + k
    return total


def while_counts_down(n):
    out = ()
    while n:
        out += (n,)
        n -= 1
    return out


LOOP_CASES = [
    case(jump_if_none, None),
    case(jump_if_none, 0),
    case(jump_on_truthiness, ()),
    case(jump_on_truthiness, (1, 2)),
    case(jump_and_or_chain, 1, 0, 1),
    case(jump_and_or_chain, 0, 0, 0),
    case(jump_and_or_chain, 1, 0, 0),
    case(jump_on_object, [1], breaks=1),
    case(jump_on_object, [], breaks=1),
    case(while_break_else, 10),
    case(while_break_else, 2),
    case(while_true_break, 7),
    case(for_enumerate, (3, 4, 5), breaks=0),
    case(for_zip, (1, 2), (3, 4), breaks=0),
    case(for_nested_break, 5),
    case(for_over_arg_list, [1, 2, 3], breaks=0),
    case(for_with_print_after, 4, breaks=1),
    case(for_reversed_dict_keys, 3, breaks=3),
    case(while_counts_down, 4),
]


@run_cases(LOOP_CASES)
def test_jumps_and_loops(fn, args, kwargs, breaks, fallbacks, init):
    isolated_check(fn, args, kwargs, breaks, fallbacks, init)


# ---------------------------------------------------------------------------------------------------------
# Operators: every binary/unary/comparison operator, on ints, floats, bools, strings, and through the
# operator module (PaddleSOT test_14_operators).

def op_true_division(a, b):
    return a / b, a // b, a % b, -a // b, -a % b


def op_bool_arith(a, b):
    return a + b, a * 3, a & b, a | b, a ^ b, ~a, -b


def op_float_edge(x):
    return x * 0.0, x / 3, x ** 0.5, x % 1.5, x // 0.5


def op_int_float_compare(a, x):
    return a == x, a < x, a >= x, a != x


def op_string_compare(a, b):
    return a < b, a == b, a * 2 > b, b in a


def op_bit_shifts(a):
    return a << 3, a >> 1, -a >> 1, a & 0xF0, a | 1


def op_module_functions(a, b):
    return operator.add(a, b), operator.sub(a, b), operator.lt(a, b), operator.not_(a)


def op_matmul_unsupported(a, b):
    return a @ b


def op_type_error(a, s):
    return a + s


def op_pow_negative(a):
    return a ** -2, (-8) ** (1 / 3)


def op_unary_not(a, s):
    return not a, not s, not not a


OPERATOR_CASES = [
    case(op_true_division, 17, 5),
    case(op_true_division, 17, -5),
    case(op_bool_arith, True, False, breaks=1),  # (~a: Python 3.12+ warns on each call, never folded)
    case(op_float_edge, 7.25),
    case(op_int_float_compare, 2, 2.0),
    case(op_int_float_compare, 2, 2.5),
    case(op_string_compare, "abc", "abd"),
    case(op_bit_shifts, 0x1234),
    case(op_module_functions, 3, 4, breaks=4),
    case(op_matmul_unsupported, 1, 2, breaks=1),
    case(op_type_error, 1, "x", breaks=1),
    case(op_pow_negative, 2),
    case(op_unary_not, 0, "s"),
]


@run_cases(OPERATOR_CASES)
def test_operators(fn, args, kwargs, breaks, fallbacks, init):
    isolated_check(fn, args, kwargs, breaks, fallbacks, init)


# ---------------------------------------------------------------------------------------------------------
# Slicing (PaddleSOT test_15_slice).

def slice_negative(t):
    return t[-3:], t[:-1], t[-4:-1], t[::-1], t[::-2]


def slice_out_of_range(t):
    return t[5:100], t[-100:2], t[3:1]


def slice_object(t, i, j):
    s = slice(i, j)
    return t[s], s.start


def slice_local_list(a):
    xs = [a, a + 1, a + 2, a + 3]
    return xs[1:], xs[:2], xs[::2]


def slice_arg_list(xs):
    return xs[1:3]


def slice_zero_step(t):
    return t[::0]


def slice_none_bounds(t, i):
    return t[None:i], t[i:None]


SLICE_CASES = [
    case(slice_negative, (1, 2, 3, 4, 5)),
    case(slice_negative, "abcdef"),
    case(slice_out_of_range, (1, 2, 3)),
    case(slice_object, (1, 2, 3, 4), 1, 3, breaks=1),
    case(slice_local_list, 1),
    case(slice_arg_list, [1, 2, 3, 4], breaks=1),
    case(slice_zero_step, (1, 2), breaks=1),
    case(slice_none_bounds, (1, 2, 3), 2),
]


@run_cases(SLICE_CASES)
def test_slicing(fn, args, kwargs, breaks, fallbacks, init):
    isolated_check(fn, args, kwargs, breaks, fallbacks, init)


# ---------------------------------------------------------------------------------------------------------
# Strings (PaddleSOT test_20_string).

def str_methods_case(s):
    return s.lower(), s.upper(), s.title(), s.capitalize(), s.swapcase()


def str_predicates(s):
    return s.isdigit(), s.isalpha(), s.isspace(), s.endswith("c"), s.startswith(("x", "a"))


def str_split_join(s):
    parts = s.split()
    return "+".join(parts), s.rsplit(" ", 1), s.partition(" ")


def str_pad_strip(s):
    return s.center(9, "*"), s.ljust(6, "."), s.rjust(6), s.zfill(6), s.lstrip("a")


def str_encode(s):
    return s.encode(), s.encode("utf-8")[1:], bytes(s, "ascii")


def str_bytes_ops(b):
    return b + b"!", b[0], b[1:], len(b), b.upper(), b.decode()


def str_index_error(s):
    return s.index("zzz")


def str_iterate_build(s):
    out = ""
    for ch in s:
        out = ch + out
    return out


def str_in_and_compare(s):
    return "b" in s, s == "abc", s < "b", s.find("c")


def str_format_percent(a, x):
    return "%5d|%-5s|%.3f|%x" % (a, "ab", x, a)


STRING_CASES = [
    case(str_methods_case, "hello World"),
    case(str_predicates, "abc"),
    case(str_predicates, "123"),
    case(str_split_join, "a b  c"),
    case(str_pad_strip, "abc"),
    case(str_encode, "abc", breaks=1),
    case(str_bytes_ops, b"abc"),
    case(str_index_error, "abc", breaks=1),
    case(str_iterate_build, "abc"),
    case(str_in_and_compare, "abc"),
    case(str_format_percent, 42, 2.5),
]


@run_cases(STRING_CASES)
def test_strings(fn, args, kwargs, breaks, fallbacks, init):
    isolated_check(fn, args, kwargs, breaks, fallbacks, init)


# ---------------------------------------------------------------------------------------------------------
# Comprehensions: list, dict, set, generator expressions. 3.11 compiles them
# into functions of their own; 3.12+ inlines them (PEP 709).

def listcomp_simple(n):
    return [i * i for i in range(n)]


def listcomp_filter(t):
    return [x for x in t if x % 2]


def listcomp_nested(n):
    return [(i, j) for i in range(n) for j in range(i)]


def listcomp_over_arg_list(xs):
    return [x + 1 for x in xs]


def dictcomp_simple(n):
    return {i: i * i for i in range(n)}


def setcomp_simple(t):
    return sorted({x % 3 for x in t})


def genexp_tuple(n):
    return tuple(i * 2 for i in range(n))


def genexp_any_all(t):
    return any(x > 2 for x in t), all(x > 0 for x in t)


def listcomp_uses_outer_local(n):
    k = n * 10
    return [k + i for i in range(n)]


def listcomp_with_print(n):
    return [print(i) for i in range(n)]


def listcomp_shadowing(n):
    i = "outer"
    xs = [i for i in range(n)]
    return i, xs


COMPREHENSION_CASES = [
    case(listcomp_simple, 5, breaks=0),
    case(listcomp_filter, (1, 2, 3, 4, 5), breaks=0),
    case(listcomp_nested, 4, breaks=0),
    case(listcomp_over_arg_list, [1, 2], breaks=0),
    case(dictcomp_simple, 4, breaks=0),
    case(setcomp_simple, (1, 2, 3, 4), breaks=0),
    case(genexp_tuple, 4, breaks=0),  # (run to its end: tuple() takes every item)
    case(genexp_any_all, (1, 2, 3), breaks=4),
    case(listcomp_uses_outer_local, 3, breaks=0),
    case(listcomp_with_print, 3, breaks=by_version(2, 1, 1)),
    case(listcomp_shadowing, 3, breaks=0),
]


@run_cases(COMPREHENSION_CASES)
def test_comprehensions(fn, args, kwargs, breaks, fallbacks, init):
    isolated_check(fn, args, kwargs, breaks, fallbacks, init)


# ---------------------------------------------------------------------------------------------------------
# Folding edge cases: the folded result must keep Python's exact types and values (0 vs 0.0 vs False vs -0.0,
# NaN identity, bool arithmetic, rounding), newer syntax (walrus, match, f"{x=}").

def const_collisions(a):
    z = a - a
    return z, z * 1.0, z == 0, -(z * 1.0), bool(z), z + 0j


def nan_identity(a):
    x = float("nan") * a
    return (x,) == (x,), x == x, x in (x,), [x] == [x]


def minmax_types(a):
    return min(a, 1.0), max(1.0, a), max(True, a), sum((True, True)), sorted((a, 1.0, True))


def round_cases(a):
    return round(0.5 * a), round(1.5 * a), round(2.675 * a, 2), round(-0.5 * a), round(a * 25, -1)


def float_edges(a):
    return 1e308 * 10 * a, -0.0 * a, str(-0.0 * a), 10 % -3 * a, -7 // 2 * a, (-2 * a) ** 0.5


def bool_ops(a):
    t = a > 0
    return t + t, t * 3, -t, t & 1, t | False, t ^ True, abs(t), int(t), str(t)


def string_edges(a):
    return "abc" * -a, "%d" % (3.7 * a), "%s" % None, "ß".upper() * a, "İ".lower(), "a,b,c".split(",", a)


def large_ints(a):
    return 2 ** 100 * a, 1 << 64, (10 ** 30) // 7, -(2 ** 63) * a, int("9" * 30)


def int_conversions(a):
    return int(2.9 * a), int(-2.9 * a), int("  12 "), int(True), float("1e3"), int("0x1f", 16), int("z", 36)


def complex_ops(a):
    z = complex(a, 2)
    return z * z, abs(z), z.conjugate(), z == a + 2j


def walrus(t):
    if (n := len(t)) > 2:
        return n
    return -n


def match_statement(x):
    match x:
        case (a, b):
            return a + b
        case int(v) if v > 0:
            return v
        case _:
            return "other"


def fstring_self_documenting(a):
    return f"{a=}", f"{a + 1 = }"


EDGE_CASES = [
    case(const_collisions, 1),
    case(nan_identity, 1),
    case(minmax_types, 1),
    case(round_cases, 1),
    case(float_edges, 1),
    case(bool_ops, 1),
    case(bool_ops, 0),
    case(string_edges, 1),
    case(large_ints, 3),
    case(int_conversions, 1),
    case(complex_ops, 1),
    case(walrus, (1, 2, 3)),
    case(walrus, ()),
    case(match_statement, (1, 2), breaks=2),
    case(match_statement, 5, breaks=2),
    case(match_statement, "s", breaks=2),
    case(fstring_self_documenting, 3),
]


@run_cases(EDGE_CASES)
def test_folding_edges(fn, args, kwargs, breaks, fallbacks, init):
    isolated_check(fn, args, kwargs, breaks, fallbacks, init)


# ---------------------------------------------------------------------------------------------------------
# Subclasses of the types the translator folds: their overridden methods must run, not the base type's.

class MyStr(str):
    def upper(self):
        return "custom upper"

    def __add__(self, other):
        return "custom add"


class MyInt(int):
    def __add__(self, other):
        return "custom int add"

    def __str__(self):
        return "myint"


class MyFloat(float):
    def __mul__(self, other):
        return "custom mul"


class MyTuple(tuple):
    def __len__(self):
        return 99

    def __getitem__(self, i):
        return "custom item"


class Color(enum.IntEnum):
    RED = 1
    GREEN = 2


Pair = collections.namedtuple("Pair", "x y")


def str_subclass(s):
    return s.upper(), s + "x", len(s), str(s), type(s).__name__


def int_subclass(a):
    return a + 1, str(a), a * 2, f"{a}", type(a).__name__


def float_subclass(x):
    return x * 2, x + 1


def tuple_subclass(t):
    return len(t), t[0], t[1:], tuple(t)


def int_enum(c):
    return str(c), c + 1, repr(c), f"{c}", c == 1, c.name


def namedtuple_ops(p):
    return p[0] + p[1], len(p), p + (3,), tuple(p), p.x


SUBCLASS_CASES = [
    case(str_subclass, MyStr("ab"), breaks=4),
    case(int_subclass, MyInt(4), breaks=5),
    case(float_subclass, MyFloat(1.5), breaks=2),
    case(tuple_subclass, MyTuple((1, 2, 3)), breaks=4),
    case(int_enum, Color.RED, breaks=6),
    case(namedtuple_ops, Pair(1, 2), breaks=6),
]


@run_cases(SUBCLASS_CASES)
def test_subclasses_of_folded_types(fn, args, kwargs, breaks, fallbacks, init):
    isolated_check(fn, args, kwargs, breaks, fallbacks, init)


# ---------------------------------------------------------------------------------------------------------
# Big code objects: more than 256 locals or constants and jumps over long bodies need EXTENDED_ARG, in the
# transformed code and in the resume functions. They are generated (compiled with this file's name).

def _define(name, source):
    exec(compile(source, __file__, "exec"), globals())
    return globals()[name]


many_locals = _define("many_locals", "def many_locals(a):\n" + "".join(f"    v{i} = a + {i}\n" for i in range(300))
                      + "    print('mid')\n    return " + " + ".join(f"v{i}" for i in range(0, 300, 7)) + "\n")
many_constants = _define("many_constants", "def many_constants(a):\n    t = ("
                         + ", ".join(f"{i}.5" for i in range(300)) + ")\n    print('mid')\n"
                         + "    return t[a] + " + " + ".join(f"{i}.25" for i in range(300, 320)) + "\n")
long_jump = _define("long_jump", "def long_jump(a):\n    if a > 0:\n        print('start')\n"
                    + "".join(f"        a = a + {i}\n" for i in range(200)) + "        print('end')\n    return a\n")


BIG_CODE_CASES = [
    case(many_locals, 1, breaks=1),
    case(many_constants, 3, breaks=1),
    case(long_jump, 1, breaks=2),
    case(long_jump, 0),
]


@run_cases(BIG_CODE_CASES)
def test_big_code_objects(fn, args, kwargs, breaks, fallbacks, init):
    isolated_check(fn, args, kwargs, breaks, fallbacks, init)


# ---------------------------------------------------------------------------------------------------------
# Guards: a translated callee called again with other values and types must not reuse a translation made
# for the first ones. Each call of the callee is a break in the caller.

def guarded_add(a, b):
    return a + b


def guarded_branch(a):
    if a > 0:
        return "pos"
    return "non-pos"


def guarded_len(t):
    return len(t) * 2


def guarded_global():
    return g_scale * 2


g_scale = 1


def guard_types(a):
    return guarded_add(a, 1), guarded_add(a * 1.5, 1), guarded_add(str(a), "x"), guarded_add((a,), (2,))


def guard_values(a):
    return guarded_branch(a), guarded_branch(-a), guarded_branch(0)


def guard_lengths(a):
    return guarded_len((a,)), guarded_len((a, a)), guarded_len("abc"), guarded_len([a])


def guard_global_changes(a):
    global g_scale
    g_scale = a
    first = guarded_global()
    g_scale = a + 1
    second = guarded_global()
    return first, second


def guard_bool_vs_int(a):
    return guarded_add(True, True), guarded_add(a, a), guarded_add(1.0, a)


def guarded_str(x):
    return str(x)


def guard_negative_zero(a):
    return guarded_str(0.0), guarded_str(-0.0)


def guard_tuple_element_types(a):
    return guarded_str((1,)), guarded_str((True,)), guarded_str((1.0,))


def guard_tuple_negative_zero(a):
    return guarded_str((0.0, a)), guarded_str((-0.0, a))


def guard_global_element_types(a):
    global g_scale
    g_scale = (1, a)
    first = guarded_global()
    g_scale = (True, a)
    second = guarded_global()
    return first, second


GUARD_CASES = [
    case(guard_types, 3, breaks=0),
    case(guard_values, 3, breaks=0),
    case(guard_lengths, 3, breaks=0),
    case(guard_global_changes, 5, init={"g_scale": 1}, breaks=0),
    case(guard_bool_vs_int, 2, breaks=0),
    case(guard_negative_zero, 1, breaks=0),
    case(guard_tuple_element_types, 1, breaks=0),
    case(guard_tuple_negative_zero, 1, breaks=0),
    case(guard_global_element_types, 1, init={"g_scale": 1}, breaks=0),
]


@run_cases(GUARD_CASES)
def test_guards(fn, args, kwargs, breaks, fallbacks, init):
    isolated_check(fn, args, kwargs, breaks, fallbacks, init)


# ---------------------------------------------------------------------------------------------------------
# Mutable data: a list built inside the function, then handed out, aliased, or mutated after a break.

def mutable_alias_local(a):
    xs = [a]
    ys = xs
    ys.append(2)
    return xs, xs is ys


def mutable_returned_twice(a):
    xs = [a]
    return xs, xs


def mutable_after_print(a):
    xs = [a]
    print("xs", xs)
    xs.append(a + 1)
    xs[0] = -1
    return xs


def mutable_inner_list(a):
    xs = [[a], [a + 1]]
    xs[0].append(3)
    return xs


def mutable_pop_empty(a):
    xs = []
    return xs.pop()


def mutable_list_in_tuple(a):
    xs = [a]
    t = (xs, xs)
    xs.append(2)
    return t


def mutable_to_global(a):
    global g_saved
    xs = [a]
    g_saved = xs
    xs.append(a + 1)
    return len(g_saved)


g_saved = None


def helper_extend(xs):
    xs.append(len(xs))


def set_value(v):
    global g_value
    g_value = v


g_value = 0


def mutable_local_to_callee(a):
    xs = [a]
    helper_extend(xs)
    return xs, len(xs)


def mutable_local_into_arg(d, a):
    xs = [a]
    d["k"] = xs
    xs.append(a + 1)
    return d


def mutable_grows_in_loop(a):
    xs = [a, a + 1]
    for x in xs:
        if x < 10:
            xs.append(x + 10)
    return xs


def global_changed_by_callee(a):
    before = g_value
    set_value(a)
    return before, g_value


def global_changed_twice(a):
    set_value(a)
    first = g_value * 2
    set_value(first)
    return first, g_value


def identity_of_fresh_objects(a):
    b = a * 1
    s = "x" * a
    return a is b, s is s, (a,) is (a,)



def identity_of_computed_strings(a):
    s1 = "ab" * a
    s2 = "ab" * a
    return s1 is s2, s1 == s2


def identity_of_computed_ints(a):
    x = a * 1000
    y = a * 1000
    return x is y, x == y


MUTABLE_CASES = [
    case(mutable_alias_local, 1, breaks=0),
    case(mutable_returned_twice, 1),
    case(mutable_after_print, 1, breaks=1),
    case(mutable_inner_list, 1),
    case(mutable_pop_empty, 1, breaks=1),
    case(mutable_list_in_tuple, 1),
    case(mutable_to_global, 1, init={"g_saved": None}, breaks=0),
    case(mutable_local_to_callee, 1, breaks=0),
    case(mutable_local_into_arg, {}, 1, breaks=0),
    case(mutable_grows_in_loop, 1, breaks=0),
    case(global_changed_by_callee, 7, init={"g_value": 1}, breaks=0),
    case(global_changed_twice, 7, init={"g_value": 1}, breaks=0),
    case(identity_of_computed_strings, 3, breaks=1),
    case(identity_of_computed_ints, 1000, breaks=1),
    case(identity_of_fresh_objects, 10 ** 6, breaks=4),
]


@run_cases(MUTABLE_CASES)
def test_mutable_data(fn, args, kwargs, breaks, fallbacks, init):
    isolated_check(fn, args, kwargs, breaks, fallbacks, init)
