"""Renders a ``sot.report.Report`` for the notebook: HTML (JupyterLab, Notebook, VS Code) with a plain-text
fallback. Sections per translated function: graphs (count, ops), graph breaks (reason, the cell's source line
highlighted), failures, guards, cache entries and recompile reasons, translation time; the original and the
transformed bytecode side by side (aligned, new instructions highlighted, jump targets marked, source lines
interleaved, every resume function, collapsible); each graph as text and as an SVG drawing (graphviz ``dot``).

Part of the ``sot`` package (a report displays itself through it); the magics (``sot_magics``) use it as they use
the rest of the sot API, and ``sot`` never imports the magics."""

import difflib
import dis
import html
import linecache
import shutil
import subprocess
from dataclasses import dataclass

from .report import op_counts_text, plan_lines, plan_summary


@dataclass
class Options:
    bytecode: bool = True
    graph: bool = False
    guards: bool = False


CSS = """
<style>
.sot-report{font-family:var(--jp-ui-font-family,sans-serif);font-size:13px;margin:4px 0;
  color:var(--jp-ui-font-color1,#1f2328)}
.sot-report .sot-head{font-weight:600;margin:2px 0 6px;color:var(--jp-ui-font-color0,#000)}
.sot-report details{border:1px solid var(--jp-border-color2,#ddd);border-radius:4px;margin:4px 0;padding:2px 6px;
  background:var(--jp-layout-color0,#fff);color:var(--jp-ui-font-color1,#1f2328)}
.sot-report summary{cursor:pointer;color:var(--jp-ui-font-color1,#1f2328)}
.sot-report summary:hover{color:var(--jp-brand-color1,#1976d2)}
.sot-report table{border-collapse:collapse;margin:4px 0;color:var(--jp-ui-font-color1,#1f2328);table-layout:auto;
  display:block;max-width:100%;overflow-x:auto}
.sot-report td,.sot-report th{border:1px solid var(--jp-border-color2,#e3e3e3);padding:2px 6px;text-align:left;
  vertical-align:top;color:inherit}
/* outranks JupyterLab's right-aligned cells (:not(.jp-RenderedMarkdown).jp-RenderedHTMLCommon td) */
.sot-report :is(table.sot-breaks,table.sot-graphs,table.sot-bytecode) :is(td,th){text-align:left}
.sot-report th{background:var(--jp-layout-color2,#eee);color:var(--jp-ui-font-color0,#000);font-weight:600}
.sot-report pre,.sot-report code{font-family:var(--jp-code-font-family,monospace);font-size:12px;color:inherit}
.sot-report td code{background:transparent;padding:0}
/* the source snippet: outranks JupyterLab's code chips (.jp-ThemedContainer .jp-RenderedHTMLCommon :not(pre)>code) */
.sot-report table.sot-breaks td code{background:transparent;padding:0;white-space:pre}
.sot-report tr td{background:var(--jp-layout-color0,#fff)}
.sot-report .sot-line-hit{background:rgba(250,204,21,.32);box-shadow:inset 3px 0 var(--jp-warn-color1,#f59e0b);
  font-weight:600;color:var(--jp-ui-font-color0,#000)}
.sot-report table.sot-breaks .sot-line-hit code{font-weight:600;color:inherit}
.sot-report tr.sot-new td{background:rgba(34,197,94,.22);color:var(--jp-ui-font-color0,#000)}
.sot-report tr.sot-gone td{background:rgba(239,68,68,.16);color:var(--jp-ui-font-color1,#374151)}
.sot-report tr.sot-src td{background:var(--jp-layout-color2,#f6f8fa);color:var(--jp-ui-font-color1,#444);
  font-style:italic}
.sot-report .sot-warn{color:var(--jp-ui-font-color0,#000);background:rgba(249,115,22,.16);padding:2px 6px;
  border-left:3px solid var(--jp-warn-color1,#f97316)}
.sot-report table.sot-bytecode td{font-family:var(--jp-code-font-family,monospace);font-size:12px;white-space:pre}
.sot-report .sot-graph svg{display:block;max-width:100%;height:auto;margin:4px 0;padding:6px;background:#fff;
  border:1px solid var(--jp-border-color2,#ddd);border-radius:4px}
[data-jp-theme-light="false"] .sot-report .sot-graph svg{filter:invert(0.88) hue-rotate(180deg)}
</style>
"""


def _esc(text):
    return html.escape(str(text), quote=True)


def _snippet(filename, lineno, context=1):
    """The cell's lines around ``lineno``, the line itself highlighted (HTML)."""
    rows = []
    for n in range(max(1, lineno - context), lineno + context + 1):
        text = linecache.getline(filename, n)
        if not text:
            continue
        cls = ' class="sot-line-hit"' if n == lineno else ""
        rows.append(f"<div{cls}><code>{n:>4}  {_esc(text.rstrip())}</code></div>")
    return "".join(rows)


# ---- bytecode side by side ----

def _instructions(code):
    return list(dis.get_instructions(code))


def _ins_text(ins):
    target = ">>" if ins.is_jump_target else "  "
    arg = f" {ins.argrepr}" if ins.argrepr else (f" {ins.arg}" if ins.arg is not None else "")
    return f"{target}{ins.offset:>5} {ins.opname}{arg}"


def _key(ins):
    return (ins.opname, ins.argrepr)


def _line_of(ins):
    pos = getattr(ins, "positions", None)
    if pos is not None and pos.lineno is not None:
        return pos.lineno
    return ins.starts_line


def bytecode_rows(original, transformed):
    """Aligned rows (kind, left, right): kind is "same", "new" (only in the transformed code), "gone" (only in
    the original) or "src" (a source line, in ``left``)."""
    left = _instructions(original)
    right = _instructions(transformed) if transformed is not None else []
    rows = []
    last_line = None
    matcher = difflib.SequenceMatcher(a=[_key(i) for i in left], b=[_key(i) for i in right], autojunk=False)

    def source_row(ins):
        nonlocal last_line
        line = _line_of(ins)
        if line is not None and line != last_line and line > 0:
            last_line = line
            text = linecache.getline(original.co_filename, line).strip()
            rows.append(("src", f"line {line}: {text}", ""))

    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            for a, b in zip(left[i1:i2], right[j1:j2]):
                source_row(a)
                rows.append(("same", _ins_text(a), _ins_text(b)))
            continue
        for a in left[i1:i2]:
            source_row(a)
            rows.append(("gone", _ins_text(a), ""))
        for b in right[j1:j2]:
            source_row(b)
            rows.append(("new", "", _ins_text(b)))
    return rows


def bytecode_html(original, transformed, title):
    rows = bytecode_rows(original, transformed)
    out = [f"<details><summary>bytecode: {_esc(title)} (original | transformed; "
           f"{sum(1 for r in rows if r[0] == 'new')} new instructions)</summary>",
           '<table class="sot-bytecode"><tr><th>original</th><th>transformed</th></tr>']
    for kind, left, right in rows:
        if kind == "src":
            out.append(f'<tr class="sot-src"><td colspan="2">{_esc(left)}</td></tr>')
        else:
            cls = {"new": ' class="sot-new"', "gone": ' class="sot-gone"'}.get(kind, "")
            out.append(f"<tr{cls}><td>{_esc(left)}</td><td>{_esc(right)}</td></tr>")
    out.append("</table></details>")
    return "".join(out)


def bytecode_text(original, transformed, title):
    """A unified diff of the two dis listings (the plain-text fallback)."""
    a = [_ins_text(i) for i in _instructions(original)]
    b = [_ins_text(i) for i in _instructions(transformed)] if transformed is not None else []
    diff = difflib.unified_diff(a, b, f"{title} (original)", f"{title} (transformed)", lineterm="", n=2)
    return "\n".join(diff)


# ---- graphs ----

def _dot_str(text):
    """Text for a DOT quoted string: backslashes and quotes escaped (a label's own line breaks are added after)."""
    return str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ")


def graph_dot(graph_json, title="graph", plan=None):
    """A graphviz DOT drawing of a graph's JSON form: inputs as ellipses, ops as boxes with op name, dtype and
    shape, edges from arguments; with a backend ``plan`` (``compiled.plan()``), each fused group's ops outlined
    as a cluster named after its kernel."""

    def label(entry):
        if "parts" in entry:
            return f"tuple of {entry['parts']}"  # (np.linalg.qr's results, an index key)
        shape = ", ".join(str(d) for d in entry["shape"])
        kind = "scalar" if entry.get("scalar") else f"[{shape}]"
        return f"{entry['dtype']}{kind}"

    lines = [f'digraph "{_dot_str(title)}" {{', "  rankdir=TB;", '  node [fontname="monospace", fontsize=10];']
    for entry in graph_json["inputs"]:
        name = _dot_str(entry["name"])
        lines.append(f'  v{entry["id"]} [shape=ellipse, label="{name}\\n{label(entry)}"];')
    for entry in graph_json["constants"]:
        text = _dot_str(entry["repr"][:30])
        lines.append(f'  v{entry["id"]} [shape=plaintext, label="{text}"];')
    for op in graph_json["ops"]:
        extra = " (in place)" if op["in_place"] else (" (view)" if op["view"] else "")
        lines.append(f'  v{op["id"]} [shape=box, label="%{op["id"]} {op["op"]}{extra}\\n{label(op)}"];')
        sources = []
        for arg in list(op["args"]) + list(op["kwargs"].values()):
            if "value" in arg:
                sources.append(arg["value"])
            sources.extend(arg.get("list", []) + arg.get("tuple", []))
        for src in sources:
            lines.append(f"  v{src} -> v{op['id']};")
    kernel = 0
    for group in (plan or {}).get("groups", []):
        if group["kind"] != "fused":
            continue
        ids = " ".join(f"v{graph_json['ops'][i]['id']};" for i in group["ops"] if i < len(graph_json["ops"]))
        lines.append(f'  subgraph cluster_k{kernel} {{ label="kernel k{kernel} (fused)"; style=dashed; {ids} }}')
        kernel += 1
    for k, out in enumerate(graph_json["outputs"]):
        lines.append(f'  out{k} [shape=plaintext, label="output {k}"];')
        lines.append(f"  v{out} -> out{k};")
    lines.append("}")
    return "\n".join(lines)


def graph_svg(graph_json, title="graph", plan=None):
    """The SVG drawing (None when graphviz's ``dot`` is not installed or fails)."""
    dot = shutil.which("dot")
    if dot is None:
        return None
    try:
        done = subprocess.run([dot, "-Tsvg"], input=graph_dot(graph_json, title, plan).encode(), capture_output=True,
                              timeout=20, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    svg = done.stdout.decode("utf-8", "replace")
    return svg[svg.find("<svg"):] if "<svg" in svg else None


# ---- the report ----

def _summary(f):
    s = f.stats
    return (f"{f.name}: {f.graph_count} graph{'s' if f.graph_count != 1 else ''} "
            f"({', '.join(str(g.ops) for g in f.graphs) or 'no'} ops), {f.break_count} graph "
            f"break{'s' if f.break_count != 1 else ''}, translated in {f.seconds * 1e3:.2f} ms; cache: "
            f"{s.get('entries', 0)} entries, {s.get('hits', 0)} hits, {s.get('translations', 0)} translations")


def _headline(report):
    return (f"sot: {len(report.functions)} function(s) translated, {report.graph_count} graph(s), "
            f"{report.break_count} graph break(s), {report.seconds * 1e3:.2f} ms")


def to_text(report, options=Options()):
    lines = [_headline(report)]
    for f in report.functions:
        lines.append("  " + _summary(f))
        for b in f.breaks:
            lines.append(f"    break at line {b.lineno} ({b.function}): {b.reason}")
            if b.source:
                lines.append(f"      {b.lineno:>4} | {b.source.strip()}")
        for x in f.failures:
            lines.append(f"    WARNING: runs as is: {x}")
        if f.stats.get("gave_up"):
            lines.append(f"    WARNING: no longer translated, every call runs as is: {f.stats['gave_up']}")
        for r in f.recompile_reasons:
            lines.append(f"    recompile: {r}")
        if options.guards:
            lines.extend(f"    guard {g}" for g in f.guards)
        if options.graph:
            for g in f.graphs:
                lines.append(f"    graph of {g.function}:")
                lines.extend(f"      {t}" for t in g.text.splitlines())
                if g.plan.get("groups"):
                    lines.append(f"      {plan_summary(g.plan)}")
                    lines.extend(f"        {t}" for t in plan_lines(g.plan))
        else:
            for g in f.graphs:
                if g.plan.get("groups"):
                    lines.append(f"    graph of {g.function}: {plan_summary(g.plan)}")
        if options.bytecode:
            for t in f.translations:
                if t.transformed is not None:
                    lines.extend("    " + x for x in bytecode_text(t.original, t.transformed, t.name).splitlines())
    return "\n".join(lines)


def to_html(report, options=Options()):
    out = [CSS, '<div class="sot-report">', f'<div class="sot-head">{_esc(_headline(report))}</div>']
    if not report.functions:
        out.append("<div>No function defined in the notebook was called in this cell.</div>")
    for f in report.functions:
        out.append(f'<details open class="sot-function"><summary>{_esc(_summary(f))}</summary>')
        for x in f.failures:
            out.append(f'<div class="sot-warn">translator failure, the original code ran: {_esc(x)}</div>')
        if f.stats.get("gave_up"):
            out.append('<div class="sot-warn">no longer translated, every call runs as is: '
                       f'{_esc(f.stats["gave_up"])}</div>')
        if f.breaks:
            out.append('<table class="sot-breaks"><tr><th>line</th><th>in</th><th>reason</th><th>source</th></tr>')
            for b in f.breaks:
                where = " (continued in place)" if b.in_place else ""
                out.append(f"<tr><td>{b.lineno}</td><td>{_esc(b.function)}</td><td>{_esc(b.reason)}{where}</td>"
                           f"<td>{_snippet(b.filename, b.lineno)}</td></tr>")
            out.append("</table>")
        if f.graphs:
            out.append('<table class="sot-graphs"><tr><th>graph of</th><th>ops</th><th>op counts</th>'
                       '<th>backend</th></tr>')
            for g in f.graphs:
                counts = op_counts_text(g.op_counts)
                backend = plan_summary(g.plan) or g.plan.get("backend", "")
                out.append(f"<tr><td>{_esc(g.function)}</td><td>{g.ops}</td><td>{_esc(counts)}</td>"
                           f"<td>{_esc(backend)}</td></tr>")
            out.append("</table>")
        if f.recompile_reasons:
            out.append("<details><summary>cache entries and recompile reasons</summary><ul>")
            out.extend(f"<li><code>{_esc(r)}</code></li>" for r in f.recompile_reasons)
            out.append("</ul></details>")
        if options.guards and f.guards:
            out.append(f"<details><summary>guards ({len(f.guards)})</summary><pre>")
            out.append(_esc("\n".join(f.guards)))
            out.append("</pre></details>")
        if options.graph:
            for k, g in enumerate(f.graphs):
                svg = graph_svg(g.json, f"{g.function} graph {k}", g.plan)
                groups = ""
                if g.plan.get("groups"):
                    groups = (f"<details><summary>{_esc(plan_summary(g.plan))}</summary>"
                              f"<pre>{_esc(chr(10).join(plan_lines(g.plan)))}</pre></details>")
                out.append(f'<details open class="sot-graph"><summary>graph of {_esc(g.function)}: {g.ops} ops'
                           f"</summary><pre>{_esc(g.text)}</pre>{groups}{svg or ''}</details>")
        if options.bytecode:
            for t in f.translations:
                if t.transformed is not None:
                    out.append(bytecode_html(t.original, t.transformed, t.name))
        out.append("</details>")
    out.append("</div>")
    return "".join(out)


def svg_of(report):
    """Every graph of the report as one SVG each (for a separate image/svg+xml output)."""
    return [s for f in report.functions for k, g in enumerate(f.graphs)
            if (s := graph_svg(g.json, f"{g.function} graph {k}", g.plan))]
