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


@pytest.mark.parametrize("axis", [None, 0, 1, -1, (0, 2), (-1, 0), (), 3, (1, 1)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reduced_shape_matches_numpy(axis, keepdims):
    x = np.zeros((2, 3, 4))
    try:
        expected = x.sum(axis=axis, keepdims=keepdims).shape
    except (ValueError, np.AxisError):
        with pytest.raises(ValueError):
            rules.reduced_shape((2, 3, 4), axis, keepdims)
        return
    assert rules.reduced_shape((2, 3, 4), axis, keepdims) == expected
