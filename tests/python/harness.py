"""What the differential harnesses share: running a case in a forked child (a crash of the translated code fails
that case, not the whole pytest session), the checks every translation's records must pass, and the varied calls
(``vary``: argument sets of the same types with other values, derived from a case's own) that each case also
makes through one translated function, where a missing guard shows."""

import copy
import math
import os
import sys
import traceback

import pytest

import sot
from sot import capture as cap

# The cuda tests run on the real device where SOT_CUDA_REAL=1 (tests/device/cuda_check.sh, on a GPU), else on the
# simulated one, whose counts (cuda_simulated_counts) only it keeps.
CUDA_REAL = os.environ.get("SOT_CUDA_REAL") == "1"


def in_child(body):
    """Calls ``body()`` in a forked child; its exception (traceback) or crash (signal) fails the calling test."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report a failure's traceback through the pipe, then leave without cleanup
        os.close(read_end)
        try:
            body()
            report = b""
        except BaseException:  # noqa: BLE001 - everything goes back to the parent
            report = traceback.format_exc().encode()
        with os.fdopen(write_end, "wb") as pipe:
            pipe.write(report)
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        report = pipe.read().decode()
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        pytest.fail(f"the translated run crashed (signal {os.WTERMSIG(status)})", pytrace=False)
    if report:
        pytest.fail(report, pytrace=False)


def assert_codes_hashable(records):
    """Every transformed code object and resume function is hashable (tools such as IPython's traceback
    formatting hash code objects)."""
    for r in records:
        for code in [r["transformed"]] + [x["code"] for x in r["resumes"]]:
            if code is not None:
                hash(code)


def compare_varied(fn, calls, run, same, check_graphs=False):
    """``fn`` called with each of ``calls`` (``(args, kwargs)`` pairs of the same types with other values, lengths,
    item types, dtypes or shapes) through ONE translated function, every call twice and interleaved (a cache hit
    with other arguments is where a missing guard shows), each compared with the plain run of that call.
    ``run(args, kwargs, translator)`` runs one call (plainly when ``translator`` is None) and returns what a caller
    can see as a dict; ``same`` compares two such entries. No graph or break counts are pinned: what is folded or
    captured may depend on the arguments."""
    plain = [run(args, kwargs, None) for args, kwargs in calls]
    sot.reset()
    cap.clear(fn)
    translator = sot.translate.new_translator(records=True)
    if check_graphs:
        translator.check_graphs = True
    for round_ in range(2):
        for i, (args, kwargs) in enumerate(calls):
            got = run(args, kwargs, translator)
            for key, want in plain[i].items():
                assert same(got[key], want), (
                    f"call {i} ({args!r}, {kwargs!r}), round {round_ + 1}: translated differs in {key}: "
                    f"{got[key]!r} != {want!r}")
    assert_codes_hashable(translator.records())


VARIANTS = 3  # ``vary``'s argument sets: 0 other values, 1 longer (an item more, dims + 1), 2 shorter or other dtype
_OTHER_DTYPE = {"f8": "f4", "f4": "f8", "f2": "f4", "c16": "c8", "c8": "c16", "i8": "i4", "i4": "i8", "i2": "i4",
                "i1": "i2", "u8": "u4", "u4": "u8", "u2": "u4", "u1": "u2"}


def _same_items(new, old):
    """Nothing varied: as many items, each the same object."""
    return len(new) == len(old) and all(a is b for a, b in zip(new, old))


class _Varier:
    """One variant ``k`` of a case's arguments: the same types (exactly: subclasses and everything else are kept)
    with other values. Equal values map to equal values and one object to one object (aliasing is kept)."""

    def __init__(self, k):
        self.k = k
        self.memo = {}
        self.changed = False
        self.np = sys.modules.get("numpy")  # no array can be in the arguments when NumPy was never imported
        self.rng = self.np.random.default_rng(1000 + k) if self.np else None

    def __call__(self, x):
        if id(x) in self.memo:
            return self.memo[id(x)]
        self.memo[id(x)] = x  # while x's items are varied: a cycle back to x keeps x
        y = self._vary(x)
        self.memo[id(x)] = y
        self.changed = self.changed or y is not x
        return y

    def _vary(self, x):
        k, t, np = self.k, type(x), self.np
        if t is bool:
            return x if k else not x
        if t is int:  # the same sign, small steps: a loop bound or a recursion depth stays about as cheap
            if x == 0:
                return 1 if k == 0 else x
            step = (1, 2, -1)[k] * (1 if x > 0 else -1)
            return x + step if abs(x + step) >= 1 else x
        if t is float:
            if not math.isfinite(x):
                return x
            return (x + math.copysign(0.5, x), x * 2.0, x / 2.0)[k] if x else (0.5, x, 1.5)[k]
        if t is complex:
            return (x + (0.5 + 0.5j), x * 2, x / 2)[k] if x else (0.5 + 0.5j, x, 1.5 - 1j)[k]
        if t in (str, bytes):  # another length, the same characters
            if not x:
                return x if k else t("x", "ascii") if t is bytes else "x"
            return (x + x[-1:], x + x, x[:-1])[k]
        if t in (list, tuple):
            items = [self(v) for v in x]
            if k == 1 and items:
                items.append(copy.deepcopy(items[-1]))  # a case's arguments can be deep-copied (each run does)
            elif k == 2 and items:
                items.pop()
            return x if _same_items(items, x) else t(items)
        if t is dict:
            out = {key: self(v) for key, v in x.items()}
            if k == 1 and x:
                key = list(x)[-1]
                new_key = _Varier(0)(key)
                if new_key not in out and type(new_key) is type(key):
                    out[new_key] = copy.deepcopy(out[key])
            elif k == 2 and len(x) > 1:
                out.pop(list(x)[-1])
            unchanged = _same_items(list(out), list(x)) and _same_items(list(out.values()), list(x.values()))
            return x if unchanged else out
        if t in (set, frozenset):
            items = sorted(x, key=repr)
            new = [self(v) for v in items]
            if k == 1 and items:
                new.append(_Varier(0)(new[-1]))
            elif k == 2 and len(items) > 1:
                new.pop()
            return x if _same_items(new, items) else t(new)
        if np is not None and t is np.ndarray:
            return self._array(x)
        if np is not None and isinstance(x, np.generic) and x.dtype.kind in "biufc":
            try:
                return t(self._vary(x.item()))
            except (OverflowError, ValueError):
                return x
        return x  # None, objects of user classes, functions, modules, ranges, subclasses of the above...

    def _array(self, a):
        """Other values drawn from the array's own (float and complex ones scaled by 0.5 to 1.5: signs, NaN and
        infinities stay); variant 1: every dimension of 2 or more one longer (the same mapping for every array, so
        what broadcast still does); variant 2: another dtype of the same kind, and a first dimension of 1 (of 2-d
        and larger arrays: it broadcasts against what it matched)."""
        np, k = self.np, self.k
        if a.dtype.kind not in "biufc":
            return a
        shape = tuple(d + 1 if d >= 2 else d for d in a.shape) if k == 1 else a.shape
        if k == 2 and a.ndim >= 2 and shape[0] >= 2:  # a first dimension of 1 (broadcast) where it was not
            shape = (1,) + shape[1:]
        dtype = np.dtype(_OTHER_DTYPE.get(a.dtype.str[1:], a.dtype.str)) if k == 2 else a.dtype
        flat = a.ravel()
        if flat.size == 0:
            return np.empty(shape, dtype)
        values = self.rng.choice(flat, size=shape)
        if a.dtype.kind in "fc":
            values = values * self.rng.uniform(0.5, 1.5, shape)
        elif a.dtype.kind in "iu" and flat.min() == flat.max():  # one value only: another one
            values = np.where(values < np.iinfo(a.dtype).max, values + 1, values - 1)
        elif a.dtype.kind == "b" and flat.size == 1:
            values = ~values
        out = np.empty_like(a) if k == 0 else np.empty(shape, dtype)  # variant 0 keeps the memory order
        out[...] = np.asarray(values).astype(dtype)
        return out


def varied_calls(args, kwargs, variants):
    """The calls a differential ``check`` makes through one fresh translated function after its own: the case's
    arguments, then ``vary``'s (``variants=None``), the case's own ``variants`` (``(args, kwargs)`` pairs: for a
    function that only makes sense for some values), or none (``variants=False``)."""
    extra = vary(args, kwargs) if variants is None else list(variants or [])
    return [(args, kwargs)] + extra if extra else []


def vary(args, kwargs, count=VARIANTS):
    """Up to ``count`` ``(args, kwargs)`` pairs derived from a case's own arguments (deterministically): the same
    types with other values - ints (sign and small magnitude kept, 0 and 1 sometimes kept), bools flipped, floats,
    strings of other lengths, lists and tuples of other lengths and items, dicts and sets with other values and
    one more or one less key, NumPy arrays with other values, dimensions one longer, or another dtype of the same
    kind and a first dimension of 1. Keyword names are kept. A variant that changes nothing is left out."""
    out = []
    for k in range(count):
        varier = _Varier(k)
        new_args = tuple(varier(a) for a in args)
        new_kwargs = {name: varier(v) for name, v in kwargs.items()}
        if varier.changed:
            out.append((new_args, new_kwargs))
    return out


def warned(call):
    """``call()``'s result and the messages of the warnings it gave (every one, in order)."""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = call()
    return result, [str(w.message) for w in caught]
