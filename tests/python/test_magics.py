"""The notebook magics in an in-process IPython shell: %%sot runs the cell unchanged and reports what the
translator did (breaks at the cell's lines, graphs, guards, bytecode side by side, SVG drawings), its options,
errors in the cell, and the line magics %sot, %sot_explain, %sot_bytecode, %sot_reset."""

import io
from contextlib import redirect_stdout

import pytest

pytest.importorskip("IPython")
np = pytest.importorskip("numpy")

from IPython.core.interactiveshell import InteractiveShell  # noqa: E402

from sot import render  # noqa: E402

DEFINE = '''import numpy as np
def f(x):
    y = x * 2
    if y.sum() > 0:
        print("positive")
    return y + 1
'''


@pytest.fixture(scope="module")
def shell():
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "sot_magics")
    ip.run_cell(DEFINE)
    return ip


@pytest.fixture
def magics(shell):
    return shell.magics_manager.registry["SotMagics"]


def run(shell, source):
    """Runs a cell; returns (stdout, displayed bundles, the run's result)."""
    shown = []
    shell.display_pub.publish = lambda data, **kw: shown.append(data)  # noqa: ARG005
    out = io.StringIO()
    with redirect_stdout(out):
        result = shell.run_cell(source)
    return out.getvalue(), shown, result


def test_report_lists_exactly_the_two_breaks_at_their_lines(shell, magics):
    shell.run_line_magic("sot_reset", "")
    stdout, shown, _ = run(shell, "%%sot\nout = f(np.ones(3))\n")
    assert "positive" in stdout
    report = magics.last_report
    assert [fn.name for fn in report.functions] == ["f"]
    breaks = report.functions[0].breaks
    # line 4: the data-dependent if; line 5: print (lines of the cell that defines f)
    assert [(b.lineno, b.source.strip()) for b in breaks] == [(4, "if y.sum() > 0:"), (5, 'print("positive")')]
    assert breaks[0].reason.startswith("data-dependent branch")
    assert "print" in breaks[1].reason
    assert report.functions[0].graph_count == 2
    html = shown[-1]["text/html"]
    assert 'class="sot-breaks"' in html and "sot-line-hit" in html and 'class="sot-bytecode"' in html
    assert "sot-new" in html and "__sot_resume_" in html
    assert "break at line 4" in shown[-1]["text/plain"]
    assert np.array_equal(shell.user_ns["out"], np.ones(3) * 2 + 1)


def test_cell_value_and_output_are_unchanged(shell):
    stdout, _, _ = run(shell, "%%sot --quiet\nprint('hello')\nv = f(-np.ones(2))\n")
    assert stdout == "hello\n"
    assert np.array_equal(shell.user_ns["v"], -np.ones(2) * 2 + 1)


def test_graph_and_guards_options(shell, magics):
    _, shown, _ = run(shell, "%%sot --graph --guards --no-bytecode\nf(np.ones((2, 2)))\n")
    html = shown[-1]["text/html"]
    assert "<svg" in html and "multiply" in html and "guards (" in html
    assert 'class="sot-bytecode"' not in html
    assert "x: array format d shape (" in html and "x: type numpy.ndarray" in html


def test_a_cell_that_hits_the_cache_still_reports_the_function(shell, magics):
    run(shell, "%%sot --quiet\nf(np.ones(5))\n")
    run(shell, "%%sot --quiet\nf(np.ones(5))\n")
    report = magics.last_report
    assert [fn.name for fn in report.functions] == ["f"]
    assert report.functions[0].stats["hits"] >= 1 and report.functions[0].break_count == 2


def test_quiet_shows_nothing(shell):
    _, shown, _ = run(shell, "%%sot --quiet\nf(np.ones(2))\n")
    assert not [s for s in shown if "text/html" in s and "sot-report" in s["text/html"]]


def test_strict_raises_at_the_first_break(shell, magics):
    run(shell, "%%sot --strict --quiet\nf(np.ones(2))\n")
    error = magics.last_result.error_in_exec
    assert isinstance(error, RuntimeError) and "graph break" in str(error)
    run(shell, "%%sot --quiet\nf(np.ones(2))\n")  # strict mode is off again
    assert magics.last_result.error_in_exec is None


def usage_error(shell, source):
    """The UsageError message a magic raised running ``source`` (IPython shows it as "UsageError: ...")."""
    from IPython.core.error import UsageError

    _, _, result = run(shell, source)
    assert isinstance(result.error_in_exec, UsageError), result.error_in_exec
    return str(result.error_in_exec)


def test_unknown_backend_and_bad_option_are_usage_errors(shell):
    shell.user_ns.pop("ran", None)
    assert "unknown backend 'nope'" in usage_error(shell, "%%sot --backend nope\nran = 1\n")
    assert "unrecognized arguments: --frobnicate" in usage_error(shell, "%%sot --frobnicate\nran = 1\n")
    assert "ran" not in shell.user_ns  # the cell did not run


def test_exception_in_the_cell_is_the_users(shell, magics):
    run(shell, "%%sot --quiet\ndef g(v):\n    return 10 / v\ng(0)\n")
    error = magics.last_result.error_in_exec
    assert isinstance(error, ZeroDivisionError)
    frames = [(fs.name, fs.line) for fs in __import__("traceback").extract_tb(error.__traceback__)]
    assert ("g", "return 10 / v") in frames and not any("sot_magics" in (n or "") for n, _ in frames)
    run(shell, "%%sot --quiet\ndef broken(:\n")
    assert isinstance(magics.last_result.error_before_exec, SyntaxError)
    # Without --quiet, a cell that failed before anything was translated shows no report, only its traceback.
    _, shown, _ = run(shell, "%%sot\nx = 1\nundefined_name + x\n")
    assert isinstance(magics.last_result.error_in_exec, NameError) and shown == []
    _, shown, _ = run(shell, "%%sot\ndef broken(:\n")
    assert isinstance(magics.last_result.error_before_exec, SyntaxError) and shown == []


def test_translator_failure_is_a_warning_and_the_cell_runs(shell, magics):
    """A function the translator gives up on (a loop unrolled past its step limit: its body appends to a list,
    so it is not a loop op) runs as is, with the right result, and the report says so as a warning, not as
    a recompile reason."""
    shell.run_line_magic("sot_reset", "")
    run(shell, "def many(v):\n    seen = []\n    for i in range(20000):\n        v = v + i\n"
               "        seen.append(i)\n    return v\n")
    _, shown, _ = run(shell, "%%sot --no-bytecode\nout = many(np.zeros(2))\n")
    assert magics.last_result.success and shell.user_ns["out"].tolist() == [199990000.0, 199990000.0]
    (f,) = magics.last_report.functions
    assert f.name == "many" and len(f.failures) == 1 and "instructions simulated" in f.failures[0]
    assert f.recompile_reasons == [] and len(f.fallback_reasons) == 1
    text, html = shown[0]["text/plain"], shown[0]["text/html"]
    assert "WARNING: runs as is: many: more than 20000 instructions simulated" in text and "recompile" not in text
    assert 'class="sot-warn"' in html and "the original code ran" in html
    # The second failure reaches the failure limit: the function is given up on, and later cells say so.
    run(shell, "%%sot --no-bytecode\nout = many(np.ones(2))\n")
    _, shown, _ = run(shell, "%%sot --no-bytecode\nout = many(np.ones(3))\n")
    assert magics.last_result.success and shell.user_ns["out"].tolist() == [199990001.0] * 3
    (f,) = magics.last_report.functions
    assert f.stats["gave_up"].startswith("gave up after 2 failed translations")
    assert "WARNING: no longer translated, every call runs as is: gave up after 2" in shown[0]["text/plain"]


def test_only_notebook_functions_unless_all(shell, magics, tmp_path, monkeypatch):
    (tmp_path / "helper_mod_for_sot.py").write_text("def helper(x):\n    return x * 3\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    run(shell, "import helper_mod_for_sot\ndef use(x):\n    return helper_mod_for_sot.helper(x) + 1\n")
    run(shell, "%%sot --quiet\nuse(np.ones(2))\n")
    names = {fn.name for fn in magics.last_report.functions}
    assert names == {"use"}
    shell.run_line_magic("sot_reset", "")
    run(shell, "%%sot --quiet --all\nuse(np.ones(2))\n")
    assert {fn.name for fn in magics.last_report.functions} >= {"use"}
    # (with --all the helper is inlined into use's translation or translated itself)


def test_line_magics(shell, magics):
    stdout, _, _ = run(shell, "%sot status")
    assert "capture off" in stdout
    stdout, _, _ = run(shell, "%sot on")
    assert "capture on" in stdout
    run(shell, "def h(x):\n    return x + 1\n")
    run(shell, "h(np.ones(2))\nh(np.ones(2))\n")
    stdout, _, _ = run(shell, "%sot status")
    assert "capture on" in stdout and "translations" in stdout
    stdout, _, _ = run(shell, "%sot off")
    assert "capture off" in stdout
    import sot

    assert sot.capture.depth() == 0  # no capture scope left open
    assert "invalid choice: 'bogus'" in usage_error(shell, "%sot bogus")
    assert "%sot_explain" in usage_error(shell, "%sot_explain 1 +")
    assert "usage: %sot_explain" in usage_error(shell, "%sot_explain f")
    stdout, _, _ = run(shell, "%sot_bytecode h")
    assert "1 cache entry" in stdout and "transformed code" in stdout
    value = shell.run_line_magic("sot_explain", "f(np.ones(3))")  # (explain starts afresh: resets caches)
    assert np.array_equal(value, np.ones(3) * 2 + 1)
    assert magics.last_report.functions[0].break_count == 2
    assert "no 'nothing_here'" in usage_error(shell, "%sot_bytecode nothing_here")
    stdout, _, _ = run(shell, "%sot_reset")
    assert "forgotten" in stdout


def test_usage_is_printed_by_help(shell):
    doc = shell.find_cell_magic("sot").__doc__
    for option in ("--bytecode", "--no-bytecode", "--graph", "--guards", "--backend", "--strict", "--quiet", "--all"):
        assert option in doc


def test_bytecode_rows_align_and_mark_new_instructions():
    def plain(a):
        return a + 1

    import sot

    t = sot.translate.new_translator(records=True)
    with sot.capture.capture(t):
        plain(np.ones(2))
    r = t.records()[0]
    rows = render.bytecode_rows(r["original"], r["transformed"])
    kinds = {k for k, _, _ in rows}
    assert {"src", "new"} <= kinds
    assert any("RESUME" in left and "RESUME" in right for k, left, right in rows if k == "same")
    text = render.bytecode_text(r["original"], r["transformed"], "plain")
    assert text.startswith("--- plain (original)") and "+" in text


def test_graph_dot_draws_inputs_ops_and_outputs():
    import sot

    e = sot.explain(lambda x: (x * 2).sum(axis=0), np.ones((2, 3)))
    dot = render.graph_dot(e.graphs[0]["json"])
    assert "shape=ellipse" in dot and "multiply" in dot and "sum" in dot and "output 0" in dot
    svg = render.graph_svg(e.graphs[0]["json"])
    assert svg is None or svg.startswith("<svg")


def test_graph_dot_escapes_names_and_constants():
    """Quotes and backslashes in a title, an input name or a constant's repr stay inside their DOT strings."""
    import shutil  # noqa: PLC0415

    graph = {"inputs": [{"id": 0, "name": 'x"\\', "dtype": "float64", "shape": [2]}],
             "constants": [{"id": 1, "repr": "'a\\'"}],
             "ops": [{"id": 2, "op": "add", "in_place": False, "view": False, "dtype": "float64", "shape": [2],
                      "args": [{"value": 0}, {"value": 1}], "kwargs": {}}],
             "outputs": [2]}
    dot = render.graph_dot(graph, 'f"q')
    assert 'digraph "f\\"q"' in dot and 'label="x\\"\\\\\\nfloat64[2]"' in dot
    if shutil.which("dot"):
        svg = render.graph_svg(graph, 'f"q')
        assert svg is not None and "add" in svg


def test_report_benchmark_runs_on_the_function_it_promises():
    """`make bench` times the report of a ~300-instruction function with 5 resume functions; this keeps the
    benchmark itself working (one run each, no timing asserted)."""
    import importlib.util  # noqa: PLC0415
    from pathlib import Path  # noqa: PLC0415

    spec = importlib.util.spec_from_file_location(
        "bench_report", Path(__file__).resolve().parents[1] / "bench" / "bench_report.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    out = io.StringIO()
    with redirect_stdout(out):
        got = bench.main(runs=1)
    assert got["instructions"] >= 300 and got["breaks"] == 5 and got["resumes"] == 5, got
    assert "goal: under 200 ms" in out.getvalue()


def test_a_report_displays_itself_as_the_magic_shows_it():
    import sot

    def doubled(x):
        return x * 2

    t = sot.translate.new_translator(records=True)
    with sot.capture.capture(t):
        doubled(np.ones(2))
    report = sot.report.build(t.records())
    bundle = report._repr_mimebundle_()
    assert bundle["text/html"] == render.to_html(report, render.Options())
    assert bundle["text/plain"] == render.to_text(report, render.Options())
    assert "doubled" in bundle["text/plain"]
