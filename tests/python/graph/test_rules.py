"""The graph IR's NumPy rules checked against the NumPy this Python has (Debian's 1.24 on 3.11; the pyenv
interpreters have no NumPy, where this module is skipped): np.promote_types for every pair of numeric dtypes,
np.broadcast_shapes, and reduction shapes for every axis form."""

import itertools

import pytest

from sot import _sot

np = pytest.importorskip("numpy")
rules = _sot.graph


def test_promote_types_matches_numpy_for_every_pair():
    names = rules.dtypes()
    assert len(names) == 14
    mismatches = []
    for a, b in itertools.product(names, repeat=2):
        ours = rules.promote_types(a, b)
        theirs = np.promote_types(a, b).name
        if ours != theirs:
            mismatches.append((a, b, ours, theirs))
    assert not mismatches


def test_unknown_dtype_is_an_error():
    with pytest.raises(ValueError, match="not a numeric dtype"):
        rules.promote_types("object", "int8")


@pytest.mark.parametrize("a,b", [((2, 3), (3,)), ((4, 1, 5), (3, 1)), ((), (2, 2)), ((0, 1), (1, 7)),
                                 ((1,), (5, 1)), ((8, 1, 6, 1), (7, 1, 5)), ((2, 3), (4,)), ((3,), (0,))])
def test_broadcast_shapes_matches_numpy(a, b):
    try:
        expected = np.broadcast_shapes(a, b)
    except ValueError:
        with pytest.raises(ValueError, match="could not be broadcast"):
            rules.broadcast_shapes(a, b)
        return
    assert rules.broadcast_shapes(a, b) == expected


# NumPy 2 moved AxisError (a ValueError) into numpy.exceptions; 1.24 has it at the top only.
AXIS_ERROR = getattr(np, "exceptions", np).AxisError


@pytest.mark.parametrize("axis", [None, 0, 1, -1, (0, 2), (-1, 0), (), 3, (1, 1)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reduced_shape_matches_numpy(axis, keepdims):
    x = np.zeros((2, 3, 4))
    try:
        expected = x.sum(axis=axis, keepdims=keepdims).shape
    except (ValueError, AXIS_ERROR):
        with pytest.raises(ValueError):
            rules.reduced_shape((2, 3, 4), axis, keepdims)
        return
    assert rules.reduced_shape((2, 3, 4), axis, keepdims) == expected


SCALARS = [True, False, 0, 1, 100, 127, 128, 200, 255, 256, 1000, 32767, 32768, 65535, 65536, 2**31 - 1, 2**31,
           2**32 - 1, 2**32, 2**63 - 1, 2**63, 2**64 - 1, -1, -128, -129, -32768, -32769, -2**31, -2**31 - 1,
           -2**63, 0.0, 1.5, -2.5, 65000.0, 64999.0, 1e5, 3.5e38, 3e38, -1e300, float("inf"), float("nan"),
           1j, 1.5 + 2j, 1e5 + 1j, 1e39j]


class promotion_state:
    """NumPy 1.24's promotion state set for a block (and the previous one put back)."""

    def __init__(self, state):
        self.state = state

    def __enter__(self):
        self.before = np._get_promotion_state() if hasattr(np, "_get_promotion_state") else None
        if self.before is not None:
            np._set_promotion_state(self.state)

    def __exit__(self, *exc):
        if self.before is not None:
            np._set_promotion_state(self.before)


def numpy_result(dtype, scalar):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.result_type(np.empty(0, dtype), scalar).name


@pytest.mark.parametrize("dtype", [
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "float32",
    "float64", "complex64", "complex128"])
def test_value_based_scalar_promotion_matches_numpy_1(dtype):
    if not np.__version__.startswith("1."):
        pytest.skip("value-based casting is NumPy 1.x")
    mismatches = []
    with promotion_state("legacy"):
        for s in SCALARS:
            try:
                theirs = numpy_result(dtype, s)
            except (OverflowError, TypeError, ValueError):
                continue
            ours = rules.result_type_with_scalar(dtype, s, False)
            if ours != theirs:
                mismatches.append((s, ours, theirs))
    assert not mismatches


@pytest.mark.parametrize("dtype", [
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "float32",
    "float64", "complex64", "complex128"])
def test_weak_scalar_promotion_matches_nep50(dtype):
    # NumPy 1.24 has NEP 50 as an experimental state; NumPy 2 has it always.
    with promotion_state("weak"):
        mismatches = []
        for s in SCALARS:
            try:
                ours = rules.result_type_with_scalar(dtype, s, True)
            except ValueError:
                continue  # out of range for the array's integer type: NumPy 2 raises there
            theirs = numpy_result(dtype, s)
            if ours != theirs:
                mismatches.append((s, ours, theirs))
        assert not mismatches
