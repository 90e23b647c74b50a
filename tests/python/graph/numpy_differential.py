"""The NumPy differential harness: run a function plainly and translated (twice: the second call from the
cache) and compare what a caller sees - the result (arrays: type, dtype, shape and every element, NaN equal to
NaN; NumPy scalars: exact type and value), which arguments the result shares memory with or is, the arguments
after the call (in-place changes), the module's ``g_*`` globals and stdout, or the exception. The reference
backend runs the user's own NumPy calls, so elements are compared exactly; so does the cpu backend. Under
``SOT_BACKEND=cuda`` float elements are compared within the GPU's tolerance (``CUDA_RTOL``, docs/executor.md):
NaN and infinities in the same places, finite values within rtol of the largest magnitude of the result (the
rtol of the result's dtype, or of the call's float32 inputs where wider).

Also checks the capture: the graphs called by the first call's translations (``graphs``), its graph breaks
(``breaks``) and that the second call hit the cache. Every op's result is checked against the dtype and shape
the translator worked out (``check_graphs``)."""

import contextlib
import copy
import io
import os

import pytest
from harness import assert_codes_hashable, compare_varied, in_child, varied_calls

import sot
from sot import capture as cap

np = pytest.importorskip("numpy")

# NumPy 1.x value-based casting (legacy), or NEP 50 (NumPy 2, or 1.24's experimental "weak" state).
LEGACY = np.__version__.startswith("1.") and (
    not hasattr(np, "_get_promotion_state") or np._get_promotion_state() == "legacy")


def native_loops():
    """True where loops of single elements or Python numbers are loop ops run as native code (the cpu backend's
    tier C on); elsewhere they are left to CPython (a graph break where they start)."""
    return sot.config.backend == "cpu" and sot._sot.graph.tier_c() != "off"


def tier_c_entries(records):
    """The tier C entries (status, runs, gave_up) of the loop ops of the graphs in ``records``, and of a graph
    whose loops are native as part of the whole graph's function (its plan's ``whole``, where it is emitted; a graph
    with no loop op that is not yet hot has none)."""
    loops = []
    for r in records:
        for g in r["graphs"]:
            plan = g["compiled"].plan() if hasattr(g["compiled"], "plan") else {}
            whole = plan.get("whole")
            if whole and not whole["status"].startswith(("not emitted", "waiting")):
                loops.append(whole)
            for group in plan.get("groups", []):
                loops.extend(group.get("loops", []))
    return loops


def native_runs(records):
    """How many times the loop ops of the graphs in ``records`` (a translator's records) ran as native code."""
    return sum(loop["runs"] for loop in tier_c_entries(records))


def tier_c_loops(fn, *args, raises=()):
    """One translated call of ``fn`` (on copies of its array arguments; an exception of the types ``raises`` is let
    pass): the tier C entries of its graphs' loop ops, and the translator's records."""
    sot.reset()
    cap.clear(fn)
    translator = sot.translate.new_translator(records=True)
    try:
        with cap.capture(translator):
            fn(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    except raises:
        pass
    records = translator.records()
    return tier_c_entries(records), records


def _arrays_in(value, out):
    if isinstance(value, np.ndarray):
        out.append(value)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _arrays_in(v, out)
    elif isinstance(value, dict):
        for v in value.values():
            _arrays_in(v, out)
    return out


class Outcome:
    def __init__(self, fn, args, kwargs, translator=None):
        self.args = copy.deepcopy(args)
        self.kwargs = copy.deepcopy(kwargs)
        out = io.StringIO()
        self.value = self.error = None
        with contextlib.redirect_stdout(out):
            try:
                with cap.capture(translator) if translator is not None else contextlib.nullcontext():
                    self.value = fn(*self.args, **self.kwargs)
            except Exception as exc:  # noqa: BLE001 - every exception is compared
                self.error = (type(exc), str(exc))
        self.stdout = out.getvalue()
        self.globals = {k: copy.deepcopy(v) for k, v in fn.__globals__.items() if k.startswith("g_")}
        # Aliasing: for each array in the result, which argument arrays it is or shares memory with.
        ins = _arrays_in((self.args, self.kwargs), [])
        self.aliases = [tuple((o is a, bool(np.shares_memory(o, a))) for a in ins)
                        for o in _arrays_in(self.value, [])]

    def view(self):
        return {"value": self.value, "error": self.error, "args": self.args, "kwargs": self.kwargs,
                "stdout": self.stdout, "globals": self.globals, "aliases": self.aliases}


# The cuda backend's float results: CUDA's math library (exp, sin, ...: within a few ulps) and its reductions'
# order (not NumPy's pairwise one) make them differ from NumPy's in the last bits; +, -, *, /, sqrt alone are
# exact. Relative to the largest magnitude in the result, so that a sum's cancellation is covered.
CUDA = os.environ.get("SOT_BACKEND") == "cuda"
CUDA_RTOL = {"float64": 1e-12, "float32": 2e-5}
# A float64 result computed from float32 data (``hist[t] = x32.sum()``) carries float32's rounding: under cuda
# each call being compared sets this to the widest tolerance of the float arrays among its own arguments.
_input_rtol = [0.0]


def _arg_rtol(obj):
    if isinstance(obj, (np.ndarray, np.generic)):
        return CUDA_RTOL.get(str(obj.dtype), 0.0)
    if isinstance(obj, (list, tuple)):
        return max((_arg_rtol(x) for x in obj), default=0.0)
    if isinstance(obj, dict):
        return max((_arg_rtol(x) for x in obj.values()), default=0.0)
    return 0.0


@contextlib.contextmanager
def _inputs_precision(args, kwargs):
    """Within: float results compared at no finer a tolerance than the float inputs of the call allow."""
    _input_rtol[0] = max(_arg_rtol(args), _arg_rtol(kwargs))
    try:
        yield
    finally:
        _input_rtol[0] = 0.0


@contextlib.contextmanager
def float_data_precision(dtype):
    """Within: float results compared at no finer a tolerance than float data of ``dtype`` (None: any) allows, for
    code that makes such data itself (the fuzzer's programs)."""
    before = _input_rtol[0]
    _input_rtol[0] = max(before, CUDA_RTOL.get(np.dtype(dtype).name, 0.0) if dtype is not None else 0.0)
    try:
        yield
    finally:
        _input_rtol[0] = before


def _close_floats(a, b):
    a, b = np.asarray(a), np.asarray(b)
    if not np.array_equal(np.isnan(a), np.isnan(b)) or not np.array_equal(np.where(np.isinf(a), a, 0),
                                                                          np.where(np.isinf(b), b, 0)):
        return False
    finite = np.isfinite(b)
    if not finite.any():
        return True
    scale = float(np.max(np.abs(b[finite])))
    rtol = max(CUDA_RTOL[str(a.dtype)], _input_rtol[0])
    return bool(np.all(np.abs(a[finite] - b[finite]) <= rtol * scale))


def same(a, b):
    """Equal in type, dtype, shape and every element (NaN equal to NaN; under SOT_BACKEND=cuda float elements
    within CUDA_RTOL)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        if CUDA and a.dtype == b.dtype and a.shape == b.shape and str(a.dtype) in CUDA_RTOL:
            return _close_floats(a, b)
        return a.dtype == b.dtype and a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
    if isinstance(a, np.generic):
        if CUDA and a.dtype == b.dtype and str(a.dtype) in CUDA_RTOL:
            return _close_floats(a, b)
        return a.dtype == b.dtype and (bool(a == b) or (a != a and b != b))
    if isinstance(a, float) and a != a:
        return b != b
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if type(a).__eq__ is object.__eq__ and hasattr(a, "__dict__"):
        return same(vars(a), vars(b))  # instances of plain classes: by their attributes
    return a == b


def check(fn, *args, graphs=1, breaks=0, fallbacks=0, variants=None, **kwargs):
    """``fn(*args, **kwargs)`` plainly and translated, pinning the first call's graphs, breaks and fallbacks;
    then the same arguments and others of the same types (``harness.vary``: other values, dimensions one longer,
    another dtype of the same kind with a first dimension of 1; or the case's own ``variants``: ``(args, kwargs)``
    pairs; ``False``: none) through one fresh translated function, each compared with its plain run, no counts
    pinned."""
    plain = Outcome(fn, args, kwargs)
    sot.reset()
    cap.clear(fn)
    translator = sot.translate.new_translator(records=True)
    translator.check_graphs = True
    runs = []
    first_records = None
    for _ in range(2):
        runs.append(Outcome(fn, args, kwargs, translator))
        if first_records is None:
            first_records = translator.records()
    expected = plain.view()
    with _inputs_precision(args, kwargs):
        for i, run in enumerate(runs):
            got = run.view()
            for key in expected:
                assert same(got[key], expected[key]), (
                    f"call {i + 1} translated differs in {key}: {got[key]!r} != {expected[key]!r}")
    assert_codes_hashable(first_records)
    failures = [f"{r['original'].co_name}: {r['failure']}" for r in first_records if r["failure"]]
    assert fallbacks is None or len(failures) == fallbacks, f"fallbacks {failures}"
    got_breaks = [b["reason"] for r in first_records for b in r["breaks"]]
    got_graphs = [g for r in first_records if r["transformed"] is not None for g in r["graphs"]]
    # (None: not pinned; the values are compared all the same)
    assert graphs is None or (len(got_graphs), len(got_breaks)) == (graphs, breaks), (
        f"{len(got_graphs)} graphs and {len(got_breaks)} breaks, expected {graphs} and {breaks}: "
        + "; ".join(got_breaks) + "\n" + "\n".join(g["text"] for g in got_graphs))
    stats = cap.stats(fn)
    if fallbacks == 0 and graphs is not None:
        assert stats["translations"] >= 1 and stats["fallbacks"] == 0, stats
        assert stats["hits"] >= 1, f"the second call did not hit the cache: {stats}"
    calls = varied_calls(args, kwargs, variants)
    if calls:
        _compare_varied(fn, calls)
    return first_records


def case(fn, *args, graphs=1, breaks=0, fallbacks=0, **kwargs):
    """One differential case: ``fn(*args, **kwargs)`` with its expected counts (a ``variants=`` keyword goes to
    ``check`` with the keyword arguments)."""
    return pytest.param(fn, args, kwargs, graphs, breaks, fallbacks, id=fn.__name__)


def run_cases(cases):
    return pytest.mark.parametrize("fn,args,kwargs,graphs,breaks,fallbacks", cases)


def isolated_check(fn, args, kwargs, graphs, breaks, fallbacks):
    """``check`` in a forked child, so that a crash fails this case and not the whole session."""
    in_child(lambda: check(fn, *args, graphs=graphs, breaks=breaks, fallbacks=fallbacks, **kwargs))


def check_varied(fn, arg_sets):
    """``harness.compare_varied`` for NumPy functions: ``arg_sets`` are positional argument tuples; every graph op
    is checked against the dtype and shape the translator worked out."""
    _compare_varied(fn, [(args, {}) for args in arg_sets])


def _compare_varied(fn, calls):
    def run(args, kwargs, translator):
        # (compare_varied compares each translated call right after running it: its own inputs' tolerance)
        _input_rtol[0] = max(_arg_rtol(args), _arg_rtol(kwargs))
        return Outcome(fn, args, kwargs, translator).view()

    try:
        compare_varied(fn, calls, run, same, check_graphs=True)
    finally:
        _input_rtol[0] = 0.0
