"""Report rendering benchmark (the notebook view of ``%%sot``): a NumPy function of at least 300 bytecode
instructions (380 on 3.11, about 330 on 3.12 and 3.13) with five ``print`` calls, so five graph breaks and five resume functions, is translated and run; then
its report is built and rendered as ``%%sot`` does (HTML and the plain-text fallback), with the default options
(bytecode side by side) and with everything on (guards, graphs as text and SVG through graphviz ``dot``).

The baseline in the same run is the ``dis`` text of the same code objects (what a user gets without the view).
Times are the best of 7 runs.

    python tests/bench/bench_report.py
"""

import dis
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import sot

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "magics"))
from sot import render  # noqa: E402

SEGMENT = """    a = a * 1.5 + b
    b = np.tanh(a) - b * 0.25
    c = (a @ w).sum(axis=0) + b.mean()
    a = np.maximum(a, 0.0) + c[0]
    b = b / (np.abs(b).max() + 1.0)
    a = a - np.sqrt(np.abs(b)) * 0.125
"""


def make_function(breaks=5):
    """A function with ``breaks`` prints between array math segments, written to a file so that its source
    lines show in the report as a cell's would."""
    body = [f"    print('step {k}', a.shape)\n" + SEGMENT for k in range(breaks)]
    src = "import numpy as np\n\ndef big(a, b, w):\n" + "".join(body) + "    return a + b\n"
    fd, path = tempfile.mkstemp(suffix=".py", prefix="sot_bench_report_")
    with os.fdopen(fd, "w") as f:
        f.write(src)
    ns = {}
    exec(compile(src, path, "exec"), ns)  # noqa: S102 - the benchmark's own generated source
    return ns["big"], path


def best(fn, runs=7):
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main(runs=7):
    fn, path = make_function()
    try:
        instructions = len(list(dis.get_instructions(fn.__code__)))
        a, b, w = np.ones((4, 4)), np.ones((4, 4)), np.eye(4)
        translator = sot.translate.new_translator(records=True)
        with open(os.devnull, "w") as devnull:
            stdout, sys.stdout = sys.stdout, devnull
            try:
                with sot.capture.capture(translator):
                    fn(a, b, w)
            finally:
                sys.stdout = stdout
        records = translator.records()
        report = sot.report.build(records)
        (f,) = report.functions
        resumes = sum(1 for t in f.translations if t.original is not fn.__code__)
        print(f"report benchmark: {f.name}, {instructions} instructions, {f.break_count} graph breaks, "
              f"{resumes} resume functions, {f.graph_count} graphs, {len(f.guards)} guards")

        codes = [t.original for t in f.translations] + [t.transformed for t in f.translations]
        baseline = best(runs=runs, fn=lambda: [dis.Bytecode(c).dis() for c in codes])
        build = best(runs=runs, fn=lambda: sot.report.build(records))
        default = render.Options()
        full = render.Options(bytecode=True, graph=True, guards=True)
        html_default = best(runs=runs, fn=lambda: render.to_html(sot.report.build(records), default))
        both_default = best(runs=runs, fn=lambda: (render.to_html(r := sot.report.build(records), default),
                                     render.to_text(r, default)))
        both_full = best(runs=runs, fn=lambda: (render.to_html(r := sot.report.build(records), full),
                                                render.to_text(r, full)))
        size = len(render.to_html(report, default)) + len(render.to_text(report, default))
        print(f"  dis text of the {len(codes)} code objects (baseline): {baseline * 1e3:8.2f} ms")
        print(f"  report.build from the records:              {build * 1e3:8.2f} ms")
        print(f"  HTML, default options (bytecode):           {html_default * 1e3:8.2f} ms")
        print(f"  HTML + text, default options:               {both_default * 1e3:8.2f} ms  "
              f"({both_default / baseline:.1f}x the baseline, {size / 1024:.0f} KiB)")
        print(f"  HTML + text, --graph --guards (SVG by dot): {both_full * 1e3:8.2f} ms  "
              f"({both_full / baseline:.1f}x the baseline)")
        print(f"  goal: under 200 ms for the default report: {'met' if both_default < 0.2 else 'NOT met'}")
        return {"instructions": instructions, "breaks": f.break_count, "resumes": resumes, "seconds": both_default}
    finally:
        os.unlink(path)


if __name__ == "__main__":
    main()
