"""IPython magics of xeus-sot.

``%%sot [options]`` runs a cell with the symbolic opcode translator on for the functions defined in notebook
cells that the cell calls (``--all``: every function not skipped), then shows a report: per translated function
its graphs, graph breaks (reason and the cell line highlighted), guards, cache entries and recompile reasons,
translation time, the original and transformed bytecode side by side and each graph as text and SVG. The cell's
own output, value and errors are exactly those of a plain run: the cell runs through the shell's ``run_cell``,
and its line numbers in tracebacks are those of the cell as the user sees it (the ``%%sot`` line is line 1,
shown as a comment).

Line magics: ``%sot on|off|status`` (capture on for the following cells), ``%sot_explain f(x, y)`` (translate and
run one call afresh, with its report), ``%sot_bytecode f`` (f's cache entries and their transformed code),
``%sot_reset`` (forget every translation).

A magic used wrongly (an unknown option or backend, ``%sot bogus``, ``%sot_explain`` of something that is not a
call, ``%sot_bytecode`` of a missing name) raises IPython's ``UsageError``: the notebook shows "UsageError: ..."
with the magic's usage, and nothing runs.

Loaded automatically by the xsot kernel; elsewhere ``%load_ext sot_magics``.
"""

import ast
import time

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.display import display


def cell_body_source(line, cell):
    """The source run for a ``%%sot`` cell body: a comment stands in for the ``%%sot`` line (IPython drops leading
    blank lines), so that line numbers in tracebacks match the cell the user sees."""
    return f"# %%sot {line}".rstrip() + "\n" + cell


def _sot():
    import sot  # noqa: PLC0415 - imported on first use: the kernel starts without it

    return sot


def _render():
    from sot import render  # noqa: PLC0415 - the report renderer of the sot package, imported with it

    return render


@magics_class
class SotMagics(Magics):
    def __init__(self, shell):
        super().__init__(shell)
        self.last_report = None
        self.last_result = None  # the ExecutionResult of the last %%sot cell's body
        self.history = {}  # id(user code) -> its latest FunctionReport (for cells that hit the cache)
        self.always = None  # the translator of %sot on
        self.enabled = False  # its capture scope is open (between a cell's pre and post hooks)
        self.render_seconds = 0.0

    def _is_cell_code(self, code):
        """Code defined in a notebook cell (the shell's compiler knows its file name)."""
        names = getattr(self.shell.compile, "_filename_map", {})
        return code.co_filename in names

    def _hits(self):
        """Calls so far of every user code object translated (by id) that did not translate again: cache hits,
        and runs of the original code once the runtime gave up on it."""
        sot = _sot()
        out = {}
        for code in sot.translate.SymbolicTranslator.seen_codes():
            stats = sot.capture.stats(code)
            out[id(code)] = stats.get("hits", 0) + (stats.get("fallbacks", 0) if stats.get("gave_up") else 0)
        return out

    def _translator(self, backend=None, all_code=False):
        sot = _sot()
        t = sot.translate.new_translator(records=True, backend=backend)
        if not all_code:
            t.filter = self._is_cell_code
        return t

    def show(self, report, options, quiet=False):
        """Displays the report (HTML with a plain-text fallback); returns the time rendering took."""
        if quiet:
            return 0.0
        start = time.perf_counter()
        render = _render()
        data = {"text/html": render.to_html(report, options), "text/plain": render.to_text(report, options)}
        self.render_seconds = time.perf_counter() - start
        display(data, raw=True)
        return self.render_seconds

    @magic_arguments()
    @argument("--bytecode", dest="bytecode", action="store_true", default=True,
              help="show the original and transformed bytecode side by side (default)")
    @argument("--no-bytecode", dest="bytecode", action="store_false", help="leave the bytecode out")
    @argument("--graph", action="store_true", help="draw each captured graph (text and SVG)")
    @argument("--guards", action="store_true", help="list the guards of each translation")
    @argument("--backend", default=None, help="graph backend by name (default: sot.config.backend)")
    @argument("--strict", action="store_true", help="raise at the first graph break")
    @argument("--quiet", action="store_true", help="run with capture on, show no report")
    @argument("--all", action="store_true", help="translate every function not skipped, not only notebook cells'")
    @cell_magic
    def sot(self, line, cell):
        """Run the cell with the symbolic opcode translator and show what it did."""
        args = parse_argstring(self.sot, line)  # (UsageError for an unknown option)
        sot = _sot()
        try:
            translator = self._translator(args.backend, args.all)
        except ValueError as exc:
            raise UsageError(f"%%sot: {exc}") from None
        translator.strict = args.strict
        previous_strict = sot.capture.strict()
        if args.strict:
            sot.reset()  # translate afresh, so that the first break is met (and raised)
            sot.capture.set_strict(True)
        hits_before = self._hits()
        try:
            with sot.capture.capture(translator):
                self.last_result = self.shell.run_cell(cell_body_source(line, cell), store_history=False)
        finally:
            sot.capture.set_strict(previous_strict)
        report = sot.report.build(translator.records())
        # A function keeps every translation made for it by earlier cells too (its code and resume functions,
        # the latest per code object); functions this cell ran only from the cache are reported as well.
        translated = {id(f.code) for f in report.functions}
        for f in report.functions:
            earlier = self.history.get(id(f.code))
            if earlier is not None:
                latest = {id(t.original): t for t in earlier.translations + f.translations}
                f.translations = list(latest.values())
        for key, hits in self._hits().items():
            if key not in translated and hits > hits_before.get(key, 0) and key in self.history:
                report.functions.append(self.history[key])
        for f in report.functions:
            f.stats = dict(sot.capture.stats(f.code))
            self.history[id(f.code)] = f
        self.last_report = report
        # A cell that failed before translating anything (a syntax error, an exception at its top level) shows its
        # traceback alone.
        failed = self.last_result is not None and not self.last_result.success
        self.show(report, _render().Options(bytecode=args.bytecode, graph=args.graph, guards=args.guards),
                  quiet=args.quiet or (failed and not report.functions))
        return None

    @magic_arguments()
    @argument("action", nargs="?", default="status", choices=("on", "off", "status"),
              help="on: capture on for every following cell; off: stop; status (default): say which")
    @line_magic("sot")
    def sot_line(self, line):
        """%sot on|off|status: capture on (or off) for every following cell; status says which."""
        sot = _sot()
        action = parse_argstring(self.sot_line, line.strip().lower()).action
        if action == "on":
            if self.always is None:
                self.always = self._translator()
                self.shell.events.register("pre_run_cell", self._enable)
                self.shell.events.register("post_run_cell", self._disable)
            print("sot: capture on for the following cells (%sot off to stop)")
        elif action == "off":
            if self.always is not None:
                self.shell.events.unregister("pre_run_cell", self._enable)
                self.shell.events.unregister("post_run_cell", self._disable)
                self._disable()  # (this cell's scope: its post_run_cell hook is gone)
                self.always = None
            print("sot: capture off")
        else:
            state = "on" if self.always is not None else "off"
            extra = ""
            if self.always is not None:
                extra = (f": {self.always.translations} translations, {self.always.breaks} graph breaks, "
                         f"{self.always.graphs} graphs so far")
            print(f"sot: capture {state}{extra} (sot {sot.__version__}, backend {sot.config.backend})")

    def _enable(self, *args):
        if not self.enabled:
            _sot().capture.enable(self.always)
            self.enabled = True

    def _disable(self, *args):
        if self.enabled:
            _sot().capture.disable()
            self.enabled = False

    @line_magic
    def sot_explain(self, line):
        """%sot_explain f(x, y): translate and run that one call afresh and show its report; returns the value."""
        sot = _sot()
        try:
            tree = ast.parse(line.strip(), mode="eval")
        except SyntaxError as exc:
            raise UsageError(f"%sot_explain: not an expression: {exc.msg}") from None
        if not isinstance(tree.body, ast.Call):
            raise UsageError("usage: %sot_explain f(arguments)")
        ns = self.shell.user_ns
        fn = eval(compile(ast.Expression(tree.body.func), "<sot_explain>", "eval"), ns)  # noqa: S307
        call_args = [eval(compile(ast.Expression(a), "<sot_explain>", "eval"), ns) for a in tree.body.args]  # noqa: S307
        kwargs = {k.arg: eval(compile(ast.Expression(k.value), "<sot_explain>", "eval"), ns)  # noqa: S307
                  for k in tree.body.keywords}
        e = sot.explain(fn, *call_args, **kwargs)
        report = sot.report.build(e.translations)
        self.last_report = report
        self.show(report, _render().Options(bytecode=True, graph=True, guards=True))
        return e.value

    @line_magic
    def sot_bytecode(self, line):
        """%sot_bytecode f: f's cache entries and their transformed code (dis text)."""
        sot = _sot()
        name = line.strip()
        if not name:
            raise UsageError("usage: %sot_bytecode function")
        fn = self.shell.user_ns.get(name)
        if fn is None:
            raise UsageError(f"%sot_bytecode: no {name!r} in the notebook")
        code = getattr(getattr(fn, "__sot_original__", fn), "__code__", None)  # (a sot.jit function: its own)
        if code is None:
            raise UsageError(f"%sot_bytecode: {name} has no code object")
        stats = sot.capture.stats(code)
        codes = list(stats.get("codes", []))
        print(f"{name}: {len(codes)} cache entr{'y' if len(codes) == 1 else 'ies'}, {stats.get('hits', 0)} hits")
        for k, c in enumerate(codes):
            print(f"--- entry {k}: transformed code")
            print(sot.bytecode.dis(c, recursive=False))

    @line_magic
    def sot_reset(self, line):
        """%sot_reset: forget every translation (cache entries, counters, shapes seen)."""
        _sot().reset()
        self.last_report = None
        self.history.clear()
        print("sot: every translation forgotten")


def load_ipython_extension(ipython):
    ipython.register_magics(SotMagics)
