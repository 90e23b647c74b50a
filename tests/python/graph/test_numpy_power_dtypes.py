"""The result dtype of ``x ** <constant>`` read inside the translated function (so the translator's own idea of
it is what the function sees): NumPy computes some exponents with another ufunc (square, sqrt, reciprocal), whose
dtype can differ from power's (a bool array ** 2 is int8), and which exponents take that path differs between
NumPy 1.x and 2.x. Every dtype the graph models times the exponents NumPy special-cases and a few it does not,
for arrays and NumPy scalars, each with two argument sets through one translated function."""


import pytest

np = pytest.importorskip("numpy")

from harness import in_child  # noqa: E402
from numpy_differential import check_varied  # noqa: E402

DTYPES = ["bool", "int8", "uint8", "int32", "int64", "float16", "float32", "float64", "complex64", "complex128"]
EXPONENTS = ["2", "2.0", "0.5", "-1", "-1.0", "1", "1.0", "0", "0.0", "3", "-2", "0.25", "True"]


def power_of(exponent):
    ns = {"np": np}
    source = f"def p(x):\n    y = x ** {exponent}\n    return y.dtype, y.shape, y\n"
    exec(compile(source, f"<x ** {exponent}>", "exec"), ns)  # noqa: S102 - the test's own source
    return ns["p"]


def samples(dtype):
    if dtype == "bool":
        return [np.array([True, False, True]), np.array([False, True])]
    return [np.array([1, 2, 3]).astype(dtype), np.array([4, 1]).astype(dtype)]


@pytest.mark.parametrize("dtype", DTYPES)
def test_power_dtype_of_arrays(dtype):
    def body():
        with np.errstate(all="ignore"):
            for exponent in EXPONENTS:
                check_varied(power_of(exponent), [(x,) for x in samples(dtype)])

    in_child(body)


@pytest.mark.parametrize("dtype", DTYPES)
def test_power_dtype_of_numpy_scalars(dtype):
    def body():
        with np.errstate(all="ignore"):
            for exponent in EXPONENTS:
                check_varied(power_of(exponent), [(x[0],) for x in samples(dtype)])

    in_child(body)


def test_bool_array_to_a_numpy_scalar_power():
    def p(x, e):
        y = x ** e
        return y.dtype, y

    sets = [(np.array([True, False]), e) for e in (np.int64(2), np.float64(2.0), np.float64(3.0), np.int8(1))]
    in_child(lambda: check_varied(p, sets))


