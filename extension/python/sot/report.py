"""What translating some calls did, as data: the one model that ``sot.explain``, the notebook's ``%%sot`` report
and logs are made from.

    report = sot.report.build(translator.records())
    for fn in report.functions:          # one per user function (its resume functions folded in)
        fn.graph_count, fn.break_count, fn.breaks, fn.graphs, fn.guards, fn.stats, fn.seconds

Each user function gathers its translations (the function's own code and every resume function made for it,
``f.__sot_resume_<offset>``), the graph breaks with their reasons and source lines, the NumPy graphs captured,
the guards, the cache entries and recompile reasons of its code objects, and the translation time.
"""

import dataclasses
import linecache

from . import _sot
from . import capture as _capture


# How the capture runtime's reasons list (capture.stats(fn)["reasons"]) begins a failed guard's entry.
GUARD_FAILED = "guard failed"


def op_counts_text(op_counts):
    """``{"add": 2, "exp": 1}`` as ``add 2, exp 1`` (sorted by op name)."""
    return ", ".join(f"{k} {v}" for k, v in sorted(op_counts.items()))


def plan_of(compiled):
    """The backend's plan of a compiled graph (``compiled.plan()``), or ``{}``."""
    try:
        return dict(compiled.plan())
    except Exception:  # noqa: BLE001 - a graph without a plan (another backend) shows none
        return {}


def plan_summary(plan):
    """One line: ``cpu: 3 groups, 1 fused (tier A 2 runs, tier B 0, op by op 0)``, or for the cuda backend
    ``cuda: 3 groups, 1 on the device (device 2 runs, host 0)``; "" for the reference backend. Every backend that
    runs groups gives one plan schema (graph/exec/grouped_runner.hpp): its names for the ways a kernel runs
    (``paths``), for the fallback and for the groups whose kernel is usable (``kernel_label``)."""
    groups = plan.get("groups")
    if not groups:
        return ""
    n = f"{plan['backend']}: {len(groups)} group{'s' if len(groups) != 1 else ''}"
    kernels = [g for g in groups if "path_runs" in g]
    usable = sum(1 for g in kernels if g["usable"])
    runs = [sum(g["path_runs"][k] for g in kernels) for k in range(len(plan["paths"]))]
    fallback = sum(g["fallback_runs"] for g in kernels)
    parts = [f"{name} {r}" + (f" run{'s' if r != 1 else ''}" if k == 0 else "")
             for k, (name, r) in enumerate(zip(plan["paths"], runs))]
    parts.append(f"{plan['fallback']} {fallback}")
    return f"{n}, {usable} {plan['kernel_label']} ({', '.join(parts)})"


def _bytes(n):
    """``512 B``, ``2.0 KB``, ``3.5 MB``."""
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def _group_runs(g, plan):
    """A group's runs per path (tier A and B; the device) and on the fallback, and why it last left the fast
    path; a group without a kernel: why it has none."""
    if "path_runs" not in g:
        return f" - {g['why']}" if g["why"] else ""
    parts = [f"{name} {r}" for name, r in zip(plan["paths"], g["path_runs"])]
    parts.append(f"{plan['fallback']} {g['fallback_runs']}")
    if "bytes_in" in g:  # (a device's: what its runs moved each way)
        parts.append(f"moved {_bytes(g['bytes_in'])} in, {_bytes(g['bytes_out'])} out, "
                     f"{g['launches']} launch{'es' if g['launches'] != 1 else ''}")
        if g.get("device_seconds"):
            parts.append(f"device {g['device_seconds'] * 1e3:.3f} ms")
    text = " - " + ("" if g["usable"] else f"{g['status']}, ") + ", ".join(parts)
    if g["last_fallback"]:
        return text + f" (last: {g['last_fallback']})"
    if g["fallback_runs"] == 1 and not any(g["path_runs"]) and "bytes_in" in g:
        text += " (a device's first run of a group is the host's: it checks the kernel's result dtypes)"
    return text


def _value_ranges(ids):
    """``%0, %3-%9, %12``: value ids, runs of consecutive ones as ranges."""
    parts, start = [], None
    for k, v in enumerate(ids):
        if start is None:
            start = v
        if k + 1 == len(ids) or ids[k + 1] != v + 1:
            parts.append(f"%{start}" if start == v else f"%{start}-%{v}")
            start = None
    return ", ".join(parts)


def plan_lines(plan, kernels=True):
    """The plan's groups, a line each (kind, ops, runs per tier or per place, time when profiled, why a group is
    not fused or why it last ran op by op or on the host), each fused group's tier B state and kernel below it
    when ``kernels``."""
    lines = []
    whole = plan.get("whole")
    if whole:
        runs = whole["runs"]
        lines.append(f"tier C, the whole graph: {whole['status']} ({runs} native run{'s' if runs != 1 else ''})")
    resident = plan.get("resident")
    if resident and resident["runs"]:
        runs = resident["runs"]
        taken, kept = resident.get("inputs_on_device", 0), resident.get("results_on_device", 0)
        where = ""
        if taken:
            where += f"; {taken} of the caller's device array{'s' if taken != 1 else ''} used in place"
        if kept:
            where += f"; {kept} result{'s' if kept != 1 else ''} handed back on the device"
        library = resident.get("library_steps", 0)
        if library:
            where += f"; {library} library step{'s' if library != 1 else ''} (products, reductions, copies and fills) run there"
        replayed = resident.get("replayed_steps", 0)
        if replayed:
            where += f"; {replayed} loop step{'s' if replayed != 1 else ''} replayed (their launches queued again)"
        lines.append(f"on the device: {runs} run{'s' if runs != 1 else ''} copied {resident['arrays_in']} "
                     f"array{'s' if resident['arrays_in'] != 1 else ''} in ({_bytes(resident['bytes_in'])}) and "
                     f"{resident['arrays_out']} out ({_bytes(resident['bytes_out'])}){where}; every other value "
                     f"stayed there")
    lived = plan.get("lived")
    if lived and (lived["device"] or lived["host"]):
        places = [f"{where} {_value_ranges(lived[key])}" for key, where in (("device", "on the device"),
                                                                              ("host", "on the host"))
                  if lived[key]]
        lines.append("values in the last run: " + "; ".join(places))
    for k, g in enumerate(plan.get("groups", [])):
        ops = ", ".join(g["op_names"])
        line = f"group {k} {g['kind']}: {ops}"
        if g.get("hoisted"):
            n = len(g["hoisted"])
            line += f" (after {n} slice{'s' if n != 1 else ''} moved ahead of it)"
        line += _group_runs(g, plan)
        if g.get("seconds"):
            line += f" - {g['seconds'] * 1e3:.3f} ms"
        lines.append(line)
        for loop in g.get("loops", []):
            lines.append(f"  tier C: {loop['status']} ({loop['runs']} native run{'s' if loop['runs'] != 1 else ''})")
        for body in g.get("bodies", []):  # (a loop op's body, a cond op's ways: each a plan of its own)
            summary = plan_summary(body["plan"])
            lines.append(f"  {body['label']}" + (f": {summary}" if summary else ""))
            lines.extend("    " + t for t in plan_lines(body["plan"], kernels))
        if kernels and g.get("kernel"):
            lines.append(f"  {plan['status_name']}: {g['status']}")
            lines.extend("  " + t for t in g["kernel"].splitlines())
    return lines


@dataclasses.dataclass
class BreakInfo:
    reason: str
    filename: str
    lineno: int
    source: str  # the line's text ("" when the source is not available)
    in_place: bool
    function: str  # the code it happened in ("f", "f.__sot_resume_42")


@dataclasses.dataclass
class GraphInfo:
    function: str
    text: str
    json: dict
    op_counts: dict
    ops: int
    inputs: int
    outputs: int
    plan: dict = dataclasses.field(default_factory=dict)  # the backend's plan (compiled.plan()): groups, tiers


@dataclasses.dataclass
class CodeReport:
    """One translation: of the user's function or of one of its resume functions."""
    name: str
    original: object  # code object
    transformed: object  # code object, or None when the original runs
    resumes: list  # resume functions made here: dicts with "code", "offset"
    breaks: list
    graphs: list
    guards: list
    failure: str
    declined: str
    seconds: float
    instructions: int
    simulated: int


@dataclasses.dataclass
class FunctionReport:
    name: str  # qualified name of the user's function
    filename: str
    firstlineno: int
    code: object  # the user's code object
    translations: list  # CodeReport, in the order they were made
    stats: dict  # capture counters of the user's code: hits, misses, translations, fallbacks, ... and reasons

    @property
    def breaks(self):
        return [b for t in self.translations for b in t.breaks]

    @property
    def graphs(self):
        return [g for t in self.translations if t.transformed is not None for g in t.graphs]

    @property
    def guards(self):
        return [f"{t.name}: {g}" for t in self.translations for g in t.guards]

    @property
    def failures(self):
        return [f"{t.name}: {t.failure}" for t in self.translations if t.failure]

    @property
    def graph_count(self):
        return len(self.graphs)

    @property
    def break_count(self):
        return len(self.breaks)

    @property
    def op_count(self):
        return sum(g.ops for g in self.graphs)

    @property
    def seconds(self):
        return sum(t.seconds for t in self.translations)

    @property
    def recompile_reasons(self):
        """Why cached entries did not fit (the failing guards), as the runtime recorded them."""
        return [r for r in self.stats.get("reasons", []) if r.startswith(GUARD_FAILED)]

    @property
    def fallback_reasons(self):
        """Why the runtime ran the original code instead (translation failures), as it recorded them."""
        return [r for r in self.stats.get("reasons", []) if not r.startswith(GUARD_FAILED)]


@dataclasses.dataclass
class Report:
    functions: list

    @property
    def graph_count(self):
        return sum(f.graph_count for f in self.functions)

    @property
    def break_count(self):
        return sum(f.break_count for f in self.functions)

    @property
    def op_count(self):
        return sum(f.op_count for f in self.functions)

    @property
    def seconds(self):
        return sum(f.seconds for f in self.functions)

    @property
    def failures(self):
        return [x for f in self.functions for x in f.failures]

    def function(self, name):
        """The report of the function called ``name`` (its qualified or plain name)."""
        for f in self.functions:
            if name in (f.name, f.name.rsplit(".", 1)[-1]):
                return f
        raise KeyError(name)

    def _repr_mimebundle_(self, include=None, exclude=None):
        """Shown by Jupyter as the ``%%sot`` report is (HTML, plain text): ``sot.report.build(records)`` as a cell's
        value displays itself (``sot.render``)."""
        from . import render  # noqa: PLC0415 - the renderer reads this module: imported when a report is shown

        options = render.Options()
        return {"text/html": render.to_html(self, options), "text/plain": render.to_text(self, options)}


def code_name(code):
    """The function's qualified name; "f.__sot_resume_42" for the resume function of f at offset 42."""
    name = getattr(code, "co_qualname", code.co_name)
    info = _sot.translator.resume_info(code)
    return name if info is None else f"{name}.__sot_resume_{info[1]}"


def user_code(code):
    """The user's code object a (possibly resume) code object belongs to."""
    info = _sot.translator.resume_info(code)
    return code if info is None else info[0]


def _stats(code):
    try:
        return dict(_capture.stats(code))
    except Exception:  # noqa: BLE001 - a code object the runtime never saw
        return {}


def build(records):
    """A Report from a translator's records (``SymbolicTranslator.records()``: ``TranslationRecord``s)."""
    by_code = {}
    for r in records:
        original = r.original
        if r.declined and r.transformed is None and not r.breaks:
            continue  # module bodies and the like: nothing to report
        user = user_code(original)
        key = id(user)
        if key not in by_code:
            by_code[key] = FunctionReport(
                name=getattr(user, "co_qualname", user.co_name), filename=user.co_filename,
                firstlineno=user.co_firstlineno, code=user, translations=[], stats={})
        name = code_name(original)
        breaks = [BreakInfo(b.reason, b.filename, b.lineno,
                            linecache.getline(b.filename, b.lineno).rstrip("\n") if b.lineno > 0 else "",
                            b.in_place, name) for b in r.breaks]
        graphs = [GraphInfo(name, g.text, g.json, dict(g.op_counts), g.ops, g.inputs, g.outputs,
                            plan_of(g.compiled))
                  for g in r.graphs]
        by_code[key].translations.append(CodeReport(
            name=name, original=original, transformed=r.transformed, resumes=list(r.resumes), breaks=breaks,
            graphs=graphs, guards=list(r.guards), failure=r.failure, declined=r.declined,
            seconds=r.seconds, instructions=r.instructions, simulated=r.simulated))
    for f in by_code.values():
        f.stats = _stats(f.code)
    return Report(functions=list(by_code.values()))


__all__ = ["BreakInfo", "CodeReport", "FunctionReport", "GraphInfo", "Report", "build", "code_name", "plan_lines",
           "plan_of", "plan_summary", "user_code"]
