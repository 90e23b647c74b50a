"""The symbolic opcode translator (C++, ``sot._sot.translator``) as the user meets it.

    @sot.jit                      # or f = sot.symbolic_translate(f)
    def f(x, y): ...

    f(1, 2)                       # f, and what it calls outside skipped modules, run translated
    e = sot.explain(g, 1, 2)      # what translating g(1, 2) did: breaks and reasons, guards, bytecode
    sot.reset()                   # forget every translation

Each function's frames are simulated opcode by opcode; what the translator can decide is folded and guarded,
and where it cannot go on it breaks the graph: the transformed code runs that instruction for real and calls a
resume function (``__sot_resume_<offset>``) for the rest, which is translated in its turn. Whatever it cannot do
soundly runs the original code, with the reason recorded (``sot.capture.stats(f)["reasons"]``).
"""

import dataclasses
import functools

from . import _sot
from . import capture as _capture
from . import report as _report
from .bytecode import dis as _dis
from .config import config

_t = _sot.translator

SymbolicTranslator = _t.SymbolicTranslator

_LOG_BITS = {"breaks": _t.LOG_BREAKS, "bytecode": _t.LOG_BYTECODE, "guards": _t.LOG_GUARDS,
             "graph": _t.LOG_GRAPHS}


def _check_backend(backend):
    names = _sot.graph.backends()
    if backend not in names:
        raise ValueError(f"unknown backend {backend!r}; available: {', '.join(map(repr, names))}")
    return backend


def new_translator(records=False, backend=None):
    """A translator configured from ``sot.config`` (strict mode, log channels, graph backend)."""
    t = SymbolicTranslator()
    t.keep_records = records
    t.strict = config.strict
    t.log = sum(bit for channel, bit in _LOG_BITS.items() if config.logs(channel))
    t.backend = _check_backend(backend if backend is not None else config.backend)
    t.check_graphs = config.check_graphs
    t.dynamic_shapes = config.dynamic_shapes
    return t


_defaults = {}


def default_translator(backend=None):
    """The translator that ``symbolic_translate``/``jit`` functions of one backend share (made on first use)."""
    key = backend if backend is not None else config.backend
    if key not in _defaults:
        _defaults[key] = new_translator(backend=key)
    return _defaults[key]


def symbolic_translate(fn, backend=None, device_results=False):
    """A callable that runs ``fn`` with capture on for ``fn`` and everything it calls outside skipped modules;
    captured NumPy graphs run on ``backend`` (a name from ``sot._sot.graph.backends()``; default
    ``sot.config.backend``). With ``device_results=True`` (the ``cuda`` backend) the arrays the graphs made on
    the device come back as device arrays (``sot.DeviceArray``), not copied to the host; device arrays given to
    the call (CuPy's, anything with ``__cuda_array_interface__``) always give device results."""
    if not callable(fn):
        raise TypeError(f"symbolic_translate expects a callable, not {type(fn).__name__}")
    if backend is not None:
        _check_backend(backend)
    if device_results and backend not in (None, "cuda"):
        raise ValueError(f"device_results=True needs the 'cuda' backend, not {backend!r}")

    # A C callable (vectorcall): the capture scope opens and closes around fn's call with no Python
    # frame of its own; the translator is default_translator(backend), resolved once per name.
    translated = _capture.jit_function(fn, default_translator, config, backend, bool(device_results))
    functools.update_wrapper(translated, fn)
    translated.__sot_original__ = fn
    translated.__sot_backend__ = backend  # (None: sot.config.backend at each translation)
    return translated


def jit(fn=None, *, backend=None, device_results=False):
    """Decorator form of ``symbolic_translate``: ``@jit``, ``@jit(backend="numpy")`` or
    ``jit(f, backend="cuda", device_results=True)``."""
    if fn is None:
        return lambda f: symbolic_translate(f, backend=backend, device_results=device_results)
    return symbolic_translate(fn, backend=backend, device_results=device_results)


def reset():
    """Forget every translation: the cache entries and counters of every code object translated so far."""
    for code in SymbolicTranslator.seen_codes():
        _capture.clear(code)


@dataclasses.dataclass
class BreakReason:
    reason: str
    filename: str
    lineno: int
    function: str


@dataclasses.dataclass
class Explanation:
    """What translating one call did: the NumPy graphs captured (``graphs``: one dict per graph with its text,
    JSON form, op counts and the function it belongs to), breaks, guards, bytecode."""
    value: object
    graph_count: int
    graph_break_count: int
    op_count: int
    graphs: list
    break_reasons: list
    guards: list
    original_bytecode: str
    transformed_bytecode: str
    compile_time_s: float
    fallbacks: list
    translations: list

    def __str__(self):
        lines = [f"graphs: {self.graph_count}, graph breaks: {self.graph_break_count}, ops: {self.op_count}, "
                 f"translation time: {self.compile_time_s * 1e3:.2f} ms"]
        for g in self.graphs:
            counts = _report.op_counts_text(g["op_counts"])
            lines.append(f"graph of {g['function']}: {g['ops']} ops ({counts})")
            lines.extend(f"  {line}" for line in g["text"].splitlines())
            plan = _report.plan_of(g.get("compiled"))
            if plan.get("groups"):
                lines.append(f"  {_report.plan_summary(plan)}")
                lines.extend(f"    {line}" for line in _report.plan_lines(plan))
        for b in self.break_reasons:
            lines.append(f"  break in {b.function} at {b.filename}:{b.lineno}: {b.reason}")
        for f in self.fallbacks:
            lines.append(f"  runs as is: {f}")
        if self.guards:
            lines.append("guards:")
            lines.extend(f"  {g}" for g in self.guards)
        return "\n".join(lines)


def _dis_text(code):
    return _dis(code, recursive=False)




def explain(fn, *args, **kwargs):
    """Translate and run ``fn(*args, **kwargs)`` afresh (every translation is reset first) and report what was
    done: breaks with their reasons and lines, guards, original and transformed bytecode (with every resume
    function), translation time. The call's result is ``.value``; an exception it raises propagates. A function
    made by ``jit``/``symbolic_translate`` with a backend is explained with that backend."""
    backend = getattr(fn, "__sot_backend__", None)
    fn = getattr(fn, "__sot_original__", fn)
    reset()
    translator = new_translator(records=True, backend=backend)
    with _capture.capture(translator):
        value = fn(*args, **kwargs)
    records = translator.records()
    breaks, guards, fallbacks, original, transformed, graphs = [], [], [], [], [], []
    for r in records:
        name = _report.code_name(r.original)
        if r.transformed is not None:
            graphs.extend(dict(g.to_dict(), function=name) for g in r.graphs)
        breaks.extend(BreakReason(b.reason, b.filename, b.lineno, name) for b in r.breaks)
        guards.extend(f"{name}: {g}" for g in r.guards)
        if r.failure:
            fallbacks.append(f"{name}: {r.failure}")
        original.append(f"--- {name} (original)\n{_dis_text(r.original)}")
        if r.transformed is not None:
            transformed.append(f"--- {name} (transformed)\n{_dis_text(r.transformed)}")
            for resume in r.resumes:
                transformed.append(f"--- {_report.code_name(resume.code)} (resume function)\n{_dis_text(resume.code)}")
    return Explanation(
        value=value, graph_count=len(graphs), graph_break_count=len(breaks),
        op_count=sum(g["ops"] for g in graphs), graphs=graphs, break_reasons=breaks,
        guards=guards, original_bytecode="\n".join(original), transformed_bytecode="\n".join(transformed),
        compile_time_s=sum(r.seconds for r in records), fallbacks=fallbacks, translations=records)


__all__ = ["BreakReason", "Explanation", "SymbolicTranslator", "default_translator", "explain", "jit",
           "new_translator", "reset", "symbolic_translate"]
