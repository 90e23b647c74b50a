"""Differential tests, pure Python: constants, operators, locals, globals, strings, containers, jumps, loops,
builtins, unpacking. Each runs plainly and translated (first call and from the cache) and pins its break count."""

import math

import pytest
from differential import check

K = 10
NAME = "sot"
PAIR = (3, 4)


def add(a, b):
    return a + b


def arith(a, b):
    return a * b - a // b + a % b + a ** 2 - (a << 2) + (b >> 1) + (a & b) + (a | b) + (a ^ b)


def floats(x, y):
    return x / y + x * 1.5 - y ** 0.5


def mixed(a, x):
    return a + x, a * x, a / 2, a // 2, -a, +x, ~a, abs(-a), abs(x)


def complexes(z):
    return z * 2 + 1j, z.real, z.imag, abs(z)


def big_ints(n):
    return n ** 20, (n ** 20) % 97, n << 70


def local_chain(a):
    b = a + 1
    c = b * 2
    d = c - a
    return d


def reassign(a):
    a = a + 1
    a = a * 3
    return a


def uses_globals(a):
    return a * K + len(NAME)


def compare_all(a, b):
    return a < b, a <= b, a == b, a != b, a > b, a >= b


def chained(a, b, c):
    return a < b < c, a == b == c, a < b > c


def booleans(a, b):
    return (a and b), (a or b), (not a), (a and not b)


def identity(a):
    return a is None, a is not None, a is True


def ternary(a):
    return "big" if a > 10 else "small"


def branches(a):
    if a > 100:
        r = 3
    elif a > 10:
        r = 2
    elif a > 0:
        r = 1
    else:
        r = 0
    return r


def early_return(a):
    if a == 0:
        return "zero"
    return "nonzero"


def none_checks(a):
    if a is None:
        return 0
    return a + 1


def while_loop(n):
    total = 0
    i = 0
    while i < n:
        total += i
        i += 1
    return total


def for_range(n):
    total = 0
    for i in range(n):
        total += i * i
    return total


def for_range_step(n):
    out = []
    for i in range(n, 0, -2):
        out.append(i)
    return out


def for_tuple(t):
    total = 0
    for x in t:
        total += x
    return total


def for_string(s):
    n = 0
    for ch in s:
        if ch == "a":
            n += 1
    return n


def nested_loops(n):
    total = 0
    for i in range(n):
        for j in range(i):
            total += i * j
    return total


def loop_break_continue(n):
    total = 0
    for i in range(n):
        if i % 2:
            continue
        if i > 10:
            break
        total += i
    return total


def for_else(n):
    for i in range(n):
        if i == 5:
            break
    else:
        return "no five"
    return "found five"


def strings(s):
    return s.upper(), s + "!", s * 2, s[1:], s[::-1], len(s), s.startswith("a"), "-".join((s, s))


def fstrings(a, x, s):
    return f"{a}", f"{a:>5}", f"{x:.2f}", f"{s!r}", f"{a} and {s}", f"{a + 1:03d}"


def percent_format(a, s):
    return "%d-%s" % (a, s)


def string_methods(s):
    return s.split(","), s.replace("a", "b"), s.strip(), s.find("b"), s.count("a")


def tuples(a, b):
    t = (a, b, a + b)
    return t, t[0], t[-1], t[1:], len(t), t + (1,), t * 2


def tuple_const():
    return PAIR[0] * PAIR[1]


def lists(a, b):
    xs = [a, b, a * b]
    return xs, xs[0], xs[-1], len(xs)


def list_concat(a):
    xs = [a] + [a + 1]
    return xs


def unpack(t):
    a, b = t
    return b, a


def unpack_nested(a, b):
    x, (y, z) = a, (b, a + b)
    return x + y + z


def swap(a, b):
    a, b = b, a
    return a - b


def star_unpack_build(a, b):
    return (*(a, b), a)


def slices(t, i, j):
    return t[i:j], t[:j], t[i:], t[::2], t[i:j:1]


def subscripts(t, i):
    return t[i], t[-1]


def builtins_pure(a, b):
    return min(a, b), max(a, b), sum((a, b, 3)), abs(a - b), divmod(a, b), round(a / b, 2)


def builtins_conv(a, s):
    return int(s), float(a), str(a), repr(s), bool(a), hex(a), bin(a), oct(a), chr(a + 60), ord(s[0])


def builtins_seq(t):
    return sorted(t), tuple(t), any(t), all(t), len(t), min(t), max(t)


def math_module(x):
    return math.sqrt(x), math.floor(x), math.ceil(x), math.log(x), math.pi * x


def contains(a, t):
    return a in t, a not in t, "o" in "foo"


def aug_assign(a):
    a += 1
    a -= 2
    a *= 3
    a //= 2
    a **= 2
    a %= 1000
    a <<= 1
    a >>= 1
    a |= 8
    a &= 255
    a ^= 3
    return a


def zero_division(a):
    return 10 / a


def name_error():
    return undefined_name  # noqa: F821


def index_error(t):
    return t[10]


def unbound_local(flag):
    if flag:
        x = 1
    return x  # noqa: F821 - raises UnboundLocalError when flag is false


def value_error(s):
    return int(s)


def deep_expression(a):
    return ((a + 1) * (a + 2) - (a + 3)) // ((a % 7) + 1) + sum(range(a % 5))


def keyword_builtin(a):
    return int("ff", 16) + a, sorted((3, 1, 2))


def none_return(a):
    a + 1


def many_locals(a):
    b = a + 1
    c = b + 1
    d = c + 1
    e = d + 1
    f = e + 1
    g = f + 1
    h = g + 1
    return a + b + c + d + e + f + g + h


CASES = [
    (add, (1, 2), 0), (add, (1.5, 2), 0), (add, ("a", "b"), 0), (add, ((1,), (2,)), 0),
    (arith, (17, 5), 0), (arith, (-17, 5), 0), (floats, (3.5, 2.0), 0), (mixed, (7, 2.5), 0),
    (complexes, (3 + 4j,), 0), (big_ints, (12345,), 0), (local_chain, (5,), 0), (reassign, (5,), 0),
    (uses_globals, (3,), 0), (compare_all, (1, 2), 0), (compare_all, (2.0, 2), 0), (compare_all, ("a", "b"), 0),
    (chained, (1, 2, 3), 0), (chained, (3, 3, 3), 0), (booleans, (0, 5), 0), (booleans, (3, 0), 0),
    (booleans, ("", "x"), 0), (identity, (None,), 0), (identity, (True,), 0), (identity, (0,), 0),
    (ternary, (50,), 0), (ternary, (5,), 0), (branches, (500,), 0), (branches, (50,), 0), (branches, (5,), 0),
    (branches, (-5,), 0), (early_return, (0,), 0), (early_return, (2,), 0), (none_checks, (None,), 0),
    (none_checks, (4,), 0), (while_loop, (10,), 0), (for_range, (20,), 0), (for_range_step, (9,), 0),
    (for_tuple, ((1, 2, 3, 4),), 0), (for_string, ("banana",), 0), (nested_loops, (6,), 0),
    (loop_break_continue, (30,), 0), (for_else, (10,), 0), (for_else, (3,), 0), (strings, ("abc",), 0),
    (fstrings, (42, 3.14159, "hi"), 0), (percent_format, (3, "x"), 0), (string_methods, ("a,b, c ",), 0),
    (tuples, (1, 2), 0), (tuple_const, (), 0), (lists, (3, 4), 0), (list_concat, (1,), 0),
    (unpack, ((1, 2),), 0), (unpack_nested, (1, 2), 0), (swap, (1, 2), 0), (star_unpack_build, (1, 2), 0),
    (slices, ((1, 2, 3, 4, 5), 1, 4), 0), (slices, ("abcdef", 1, 4), 0), (subscripts, ((5, 6, 7), 1), 0),
    (builtins_pure, (7, 3), 0), (builtins_conv, (10, "42"), 0), (builtins_seq, ((3, 1, 2),), 0),
    (builtins_seq, ((0, 1),), 0), (math_module, (2.5,), 0), (contains, (2, (1, 2, 3)), 0),
    (contains, ("z", "abc"), 0), (aug_assign, (11,), 0), (deep_expression, (13,), 0),
    (keyword_builtin, (1,), 0), (none_return, (1,), 0), (many_locals, (1,), 0),
]


@pytest.mark.parametrize("fn,args,breaks", CASES, ids=[f"{c[0].__name__}-{i}" for i, c in enumerate(CASES)])
def test_pure_python_folds_without_breaks(fn, args, breaks):
    check(fn, *args, breaks=breaks)


# Errors raise from the real instruction: the translator breaks the graph there instead of folding.
ERROR_CASES = [
    (zero_division, (0,)), (name_error, ()), (index_error, ((1, 2),)), (unbound_local, (False,)),
    (value_error, ("x",)),
]


@pytest.mark.parametrize("fn,args", ERROR_CASES, ids=[c[0].__name__ for c in ERROR_CASES])
def test_errors_raise_from_the_real_instruction(fn, args):
    check(fn, *args, breaks=1)
