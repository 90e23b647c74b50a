"""NumPy values whose dtype the graph rules do not model (strings, bytes, objects, datetimes, timedeltas, structured
records, non-native byte order) are opaque: every kind of operation on them (unary, subscript, slice, comparison,
attributes, methods, NumPy functions, iteration, item stores, reductions) breaks the graph and runs as plain Python
does, with the same values, exceptions and mutations. Each operation runs on two argument sets of the same kind
through one translated function (a crash fails only its case: each runs in a forked child)."""

import pytest

np = pytest.importorskip("numpy")

from harness import in_child  # noqa: E402
from numpy_differential import check_varied  # noqa: E402

ARRAYS = {
    "str": (np.array(["a", "bc", "d"]), np.array(["xyz", "w"])),
    "bytes": (np.array([b"a", b"b\x00"]), np.array([b"qq", b"r", b"s"])),
    "object": (np.array([1, "a", None], dtype=object), np.array([2.5, (1, 2)], dtype=object)),
    "datetime": (np.array(["2024-01-01", "2024-02-29"], dtype="datetime64[D]"),
                 np.array(["1999-12-31", "2000-01-01", "2000-03-01"], dtype="datetime64[D]")),
    "timedelta": (np.array([1, 2, 3], dtype="timedelta64[s]"), np.array([7, 0], dtype="timedelta64[s]")),
    "structured": (np.array([(1, 2.0), (3, 4.5)], dtype=[("a", "i4"), ("b", "f8")]),
                   np.array([(5, -1.0)], dtype=[("a", "i4"), ("b", "f8")])),
    "big-endian float": (np.arange(4.0).astype(">f8"), (np.arange(6.0) * 2.5).astype(">f8")),
    "big-endian int": (np.arange(5).astype(">i4"), np.array([7, -3], dtype=">i4")),
    "str scalar": (np.str_("abc"), np.str_("de")),
    "datetime scalar": (np.datetime64("2024-01-01"), np.datetime64("1970-01-02")),
}


def negate(u):
    return -u


def first(u):
    return u[0]


def tail(u):
    return u[1:]


def equal_self(u):
    return u == u


def attributes(u):
    return u.shape, u.dtype, u.ndim, u.size


def copied(u):
    return u.copy()


def listed(u):
    return [v for v in u]


def doubled(u):
    return np.concatenate([u, u])


def store_last_first(u):
    u[0] = u[-1]
    return u


def summed(u):
    return u.sum()


def mixed_with_modelled(u):
    x = np.arange(3.0) * 2.0 + 1.0
    return x.sum(), len(u), x[1]


OPERATIONS = [negate, first, tail, equal_self, attributes, copied, listed, doubled, store_last_first, summed,
              mixed_with_modelled]


@pytest.mark.parametrize("kind", list(ARRAYS))
@pytest.mark.parametrize("fn", OPERATIONS, ids=lambda f: f.__name__)
def test_unmodelled_dtypes_run_as_plain(fn, kind):
    sets = [(a,) for a in ARRAYS[kind]]
    in_child(lambda: check_varied(fn, sets))
