"""The cuda backend's device arrays as Python code outside a translated function meets them.

``sot.DeviceArray`` (C++: ``graph/backends/cuda/device_array_type.cpp``) is what a function translated for the
``cuda`` backend hands back when its results stay on the device (device arrays in, or ``device_results=True``), and
what ``sot.to_device`` makes. Passed to another such function it is used in place. Elsewhere it behaves as the NumPy
array it stands for: NumPy's functions and ufuncs, and the operators, read its values (copied out once, and kept
coherent with the device) and give NumPy results; in-place operators and item assignment write its values, which the
device reads again before a kernel next needs them.
"""

import operator

from . import _sot

# (NumPy is imported when a device array first meets it, not with sot: sot imports without NumPy)

DeviceArray = _sot.graph.DeviceArray


def _host(x):
    """``x`` with every DeviceArray in it (a list or tuple's items too) as a NumPy array."""
    if type(x) is DeviceArray:
        return x._host_form()
    if type(x) in (list, tuple):
        return type(x)(_host(i) for i in x)
    return x


def _np():
    import numpy

    return numpy


def _array_ufunc(self, ufunc, method, *inputs, **kwargs):
    out = kwargs.get("out")
    written = []  # (DeviceArray, its host form) of each DeviceArray written through out=
    if out is not None:
        hosts = []
        for o in out:
            hosts.append(o._host_form() if type(o) is DeviceArray else o)
            if type(o) is DeviceArray:
                written.append((o, hosts[-1]))
        kwargs["out"] = tuple(hosts)
    result = getattr(ufunc, method)(*(_host(i) for i in inputs), **kwargs)
    for o, _ in written:
        o._host_changed()

    def as_given(r):  # (an out= DeviceArray comes back as itself, as an ndarray out= does)
        return next((o for o, h in written if r is h), r)

    return tuple(as_given(r) for r in result) if type(result) is tuple else as_given(result)


# NumPy functions that write into an array argument.
_MUTATORS = {"copyto", "put", "place", "putmask", "fill_diagonal", "put_along_axis"}


def _array_function(self, func, types, args, kwargs):
    result = func(*_host(args), **{k: _host(v) for k, v in kwargs.items()})
    if func.__name__ in _MUTATORS or kwargs.get("out") is not None:
        for a in list(args) + list(kwargs.values()):
            if type(a) is DeviceArray:
                a._host_changed()
    return result


def _binary(name):
    def forward(self, other):
        return getattr(_np(), name)(self, other)

    def reflected(self, other):
        return getattr(_np(), name)(other, self)

    def in_place(self, other):
        getattr(_np(), name)(self, other, out=(self,))
        return self

    return forward, reflected, in_place


def _unary(name):
    return lambda self: getattr(_np(), name)(self)


# Python's operator name -> NumPy's ufunc
_BINARY = {"add": "add", "sub": "subtract", "mul": "multiply", "truediv": "true_divide",
           "floordiv": "floor_divide", "mod": "remainder", "pow": "power", "matmul": "matmul",
           "and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor", "lshift": "left_shift",
           "rshift": "right_shift"}
_COMPARE = {"lt": "less", "le": "less_equal", "gt": "greater", "ge": "greater_equal", "eq": "equal",
            "ne": "not_equal"}
_UNARY = {"neg": "negative", "pos": "positive", "abs": "absolute", "invert": "invert"}


def _install():
    DeviceArray.__array_ufunc__ = _array_ufunc
    DeviceArray.__array_function__ = _array_function
    for name, ufunc in _BINARY.items():
        forward, reflected, in_place = _binary(ufunc)
        setattr(DeviceArray, f"__{name}__", forward)
        setattr(DeviceArray, f"__r{name}__", reflected)
        if name != "matmul":  # (NumPy has no in-place @ of a general shape either)
            setattr(DeviceArray, f"__i{name}__", in_place)
    for name, ufunc in _COMPARE.items():
        setattr(DeviceArray, f"__{name}__", _binary(ufunc)[0])
    DeviceArray.__hash__ = None  # (as an ndarray: == is elementwise)
    DeviceArray.__repr__ = lambda self: repr(self._host_form())  # (NumPy's, as CuPy's arrays print)
    for name, ufunc in _UNARY.items():
        setattr(DeviceArray, f"__{name}__", _unary(ufunc))
    # What NumPy's array attributes and methods say, read from the values (none is the C++ type's own).
    for name in ("sum", "mean", "max", "min", "prod", "std", "var", "any", "all", "argmax", "argmin", "cumsum",
                 "astype", "copy", "reshape", "ravel", "flatten", "tolist", "item", "round", "clip", "dot",
                 "transpose", "squeeze", "nonzero", "sort", "argsort", "fill", "view", "__iter__", "__contains__",
                 "__complex__", "__round__", "__format__", "__str__"):
        setattr(DeviceArray, name, _method(name))


def _method(name):
    caller = operator.methodcaller  # (bound per call below: the arguments differ)
    mutates = name in ("sort", "fill")

    def method(self, *args, **kwargs):
        host = self._host_form()
        if name == "__iter__":
            return iter(host.copy())  # (rows that are not views of the host copy)
        result = caller(name, *_host(args), **{k: _host(v) for k, v in kwargs.items()})(host)
        if mutates:
            self._host_changed()
        elif isinstance(result, _np().ndarray) and _np().shares_memory(result, host):
            result = result.copy()  # (nothing would keep a view of the host copy coherent)
        return result

    method.__name__ = name
    return method


_install()
