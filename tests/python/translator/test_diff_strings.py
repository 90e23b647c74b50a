"""Strings and bytes survive the translator's code generation whole: constants and strings the frame computed,
with NULs anywhere, only a NUL, identifier-like text built at run time (loaded so that it stays a new object, not
the interned literal), non-ASCII and surrogate characters, bytes; returned directly, live across a graph break
(so generated code must rebuild them) and fed to functions that reject a NUL (int, float). Each case runs with
two argument sets of the same types. PYTEST_DONT_REWRITE."""

import pytest
from differential import case, isolated_check, run_cases  # noqa: F401


def const_with_nul():
    return "a\x00b"


def only_nul():
    return "\x00"


def built_with_nul(s):
    t = s + "\x00" + s
    return t, len(t)


def nul_live_across_break(s):
    t = s + "\x00z"
    print("break")
    return t, len(t)


def identifier_like_across_break(s):
    t = s + "abc"
    print("break")
    return t, t is s, t == "xabc"


def identifier_like_with_trailing_nul(s):
    t = s + "abc\x00"
    print("break")
    return t


def int_of_nul(s):
    return int(s + "\x00")


def float_of_nul(s):
    return float(s + "\x00")


def non_ascii_across_break(s):
    t = s + "\u00e9\x00\u00fc\udcff"
    print("break")
    return t


def bytes_with_nul(b):
    c = b + b"\x00" + b
    print("break")
    return c, len(c)


def dict_key_with_nul(s):
    d = {s + "\x00": 1, s: 2}
    print("break")
    return d


CASES = []
for s, b in (("x", b"x"), ("12", b"\x00\x01")):
    CASES += [
        case(built_with_nul, s),
        case(nul_live_across_break, s, breaks=1),
        case(identifier_like_across_break, s, breaks=2),
        case(identifier_like_with_trailing_nul, s, breaks=1),
        case(int_of_nul, s, breaks=1),
        case(float_of_nul, s, breaks=1),
        case(non_ascii_across_break, s, breaks=1),
        case(bytes_with_nul, b, breaks=1),
        case(dict_key_with_nul, s, breaks=1),
    ]
CASES += [case(const_with_nul), case(only_nul)]


@run_cases(CASES)
def test_strings(fn, args, kwargs, breaks, fallbacks, init):
    isolated_check(fn, args, kwargs, breaks, fallbacks, init)
