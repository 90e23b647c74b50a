"""Side by side: our symbolic opcode translator (``sot.jit``) against TorchDynamo and PaddleSOT on one corpus.

    PYTHONPATH=build/python .venv/peers/bin/python3 tests/bench/peers/run.py --out build/bench-peers
    (or `make bench-peers`, which makes .venv/peers first)

The corpus (corpus.py beside this file) holds pure-Python functions and NumPy functions, each with two argument
sets ``a`` and ``b`` of the same types (other values, lengths, shapes). Each function runs through four tools:

- ``plain``: the function called as is (the baseline, and the reference results);
- ``ours``: ``sot.jit(fn)``, ``sot.reset()`` before each function;
- ``dynamo``: ``torch.compile(fn, backend="eager")`` (Dynamo's translation only, no Inductor code generation),
  ``torch._dynamo.reset()`` before each function; NumPy functions go through torch's NumPy tracing as they are;
- ``paddle``: ``paddle.jit.sot.symbolic_translate(fn)`` on the CPU, pure-Python functions only (PaddleSOT
  translates programs on ``paddle.Tensor``; the NumPy corpus is marked "not run"), its cache cleared
  (``OpcodeExecutorCache().clear()``) before each function.

What is measured, per function and tool, in a child process of its own per tool (a crash or a hang of one tool
on one function is recorded as an error for that function, the child is started again for the rest; each
function has ``--timeout`` seconds):

- ``first call ms``: wall time of the first call with ``a`` right after the reset: translation plus the first run
  (one sample: a first call happens once). Each child translates two unrelated warm-up functions before the
  corpus, so a tool's one-time start-up (imports done lazily on its first translation) is not charged to the
  first function; the warm-up time is in results.json (``setup_s``).
- ``+µs/call``: added time per call at a cache hit: after the first calls, ``--repeats`` (default 9) timings of
  N calls of the translated function with ``a`` and, interleaved, N plain calls; the median of each, divided by
  N, the plain one subtracted. N is chosen per function so that one timing lasts about ``--target-ms`` (20 ms).
  The plain row shows the plain call's own time (µs/call) instead.
- ``breaks``: graph breaks on a fresh translation with ``a``: ours ``sot.explain(fn, *a).graph_break_count``
  (and the frames it ran as is, ``explain().fallbacks``); Dynamo ``torch._dynamo.explain(fn)(*a)``
  (``graph_break_count``; "no graph: as is" when it made no FX graph and so runs the frame as is); PaddleSOT
  the ``BreakGraphReasonInfo`` records of its own info collector (``SOT_COLLECT_INFO=breakgraph_reason``) during
  the first call, plus the frames whose translation ended in running the original bytecode ("as is": a
  fallback, or a graph too small to keep), or "n/a" when no frame was handed to its translator at all.
- ``translations during the timed calls``: frames translated again while the same arguments were timed (a note
  under the table when not 0; ours: the default translator's count, Dynamo: ``counters["frames"]["total"]``).
- ``correct``: the results with ``a`` (first call), ``b`` (second call) and ``a`` again (at a hit, after the
  timings) equal the plain results: same types throughout (exact ``type()``, NumPy dtype and shape), ints and
  strings equal, floats and float arrays within rtol 1e-9 / atol 1e-12. An exception is "error: <reason>".

Summary: per peer, the geometric mean over the functions where both the peer and ours are correct (and the
peer translated at least one frame: PaddleSOT leaves functions with a try block alone) of
peer/ours for the first call, for the per-call overhead (overheads under 0.5 µs/call count as 0.5 µs/call: below
that the difference of two medians is timer noise, and a translation that folds work away makes it negative),
and for the time per call at a hit (plain time plus overhead, nothing clamped). Written to stdout and to ``--out``
as results.md and results.json (every figure, the break reasons, tracebacks of errors); each tool's stderr goes
to ``--out``/<tool>.log. The children run their math libraries single-threaded (OMP_NUM_THREADS and the like set
to 1): the arrays are small, and on 2 cores the spinning thread pools of NumPy's OpenBLAS and torch's OpenMP
distort each other's timings.
"""

import argparse
import datetime
import json
import math
import os
import platform
import queue
import signal
import statistics
import subprocess
import sys
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True

TOOLS = ["plain", "ours", "dynamo", "paddle"]
TOOL_TITLES = {"plain": "plain Python", "ours": "ours (sot.jit)", "dynamo": "TorchDynamo (eager)",
               "paddle": "PaddleSOT"}
PEERS = ["dynamo", "paddle"]
OVERHEAD_FLOOR_US = 0.5
RTOL, ATOL = 1e-9, 1e-12


# ---------------------------------------------------------------------------------------------------------------
# Result comparison


def same(expected, got, path="result"):
    """None when ``got`` equals the plain result ``expected``, else a short reason."""
    import numpy as np

    if type(expected) is not type(got):
        return f"{path}: type {type(got).__name__}, expected {type(expected).__name__}"
    if isinstance(expected, np.ndarray):
        if expected.dtype != got.dtype:
            return f"{path}: dtype {got.dtype}, expected {expected.dtype}"
        if expected.shape != got.shape:
            return f"{path}: shape {got.shape}, expected {expected.shape}"
        if expected.dtype.kind in "fc":
            if not np.allclose(got, expected, rtol=RTOL, atol=ATOL, equal_nan=True):
                return f"{path}: values differ (max abs diff {np.max(np.abs(got - expected)):.3g})"
        elif not np.array_equal(got, expected):
            return f"{path}: values differ"
        return None
    if isinstance(expected, (np.floating, float, np.complexfloating, complex)):
        if isinstance(expected, np.generic) and expected.dtype != got.dtype:
            return f"{path}: dtype {got.dtype}, expected {expected.dtype}"
        if math.isnan(abs(expected)) and math.isnan(abs(got)):
            return None
        if not np.isclose(got, expected, rtol=RTOL, atol=ATOL):
            return f"{path}: {got!r} != {expected!r}"
        return None
    if isinstance(expected, (list, tuple)):
        if len(expected) != len(got):
            return f"{path}: length {len(got)}, expected {len(expected)}"
        for i, (e, g) in enumerate(zip(expected, got)):
            if (why := same(e, g, f"{path}[{i}]")) is not None:
                return why
        return None
    if isinstance(expected, dict):
        if list(expected) != list(got):
            return f"{path}: keys {list(got)!r}, expected {list(expected)!r}"
        for k in expected:
            if (why := same(expected[k], got[k], f"{path}[{k!r}]")) is not None:
                return why
        return None
    if expected != got:
        return f"{path}: {got!r} != {expected!r}"[:200]
    return None


def short_error(exc):
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {first}"[:160]


# ---------------------------------------------------------------------------------------------------------------
# The tools (used in the child processes)


def _warm_py(n):
    s = 0
    for i in range(n):
        s += i % 3
    return s


def _warm_np(x):
    import numpy as np
    return np.tanh(x * 2.0 + 1.0).sum(axis=0)


class Plain:
    name = "plain"

    def setup(self):
        import numpy
        return {"numpy": numpy.__version__}

    def applicable(self, case):
        return None

    def reset(self):
        pass

    def wrap(self, fn):
        return fn

    def translation_count(self):
        return 0

    def breaks(self, case, args):
        return {}


class Ours:
    name = "ours"

    def setup(self):
        import numpy
        import sot
        self.sot = sot
        self._warm()
        return {"numpy": numpy.__version__, "sot": sot.__version__}

    def _warm(self):
        import numpy as np
        self.sot.jit(_warm_py)(10)
        self.sot.jit(_warm_np)(np.ones((3, 2)))
        self.sot.reset()

    def applicable(self, case):
        return None

    def reset(self):
        self.sot.reset()

    def wrap(self, fn):
        return self.sot.jit(fn)

    def translation_count(self):  # frames translated by the translator sot.jit uses
        return self.sot.translate.default_translator().translations

    def breaks(self, case, args):
        e = self.sot.explain(case.fn, *args)
        self.sot.reset()
        return {"breaks": e.graph_break_count, "graphs": e.graph_count, "as_is": len(e.fallbacks),
                "as_is_reasons": list(e.fallbacks)[:5],
                "break_reasons": [b.reason for b in e.break_reasons][:5], "translate_s": e.compile_time_s}


class Dynamo:
    name = "dynamo"

    def setup(self):
        import numpy
        import torch
        import torch._dynamo
        self.torch = torch
        self._warm()
        return {"numpy": numpy.__version__, "torch": torch.__version__}

    def _warm(self):
        import numpy as np
        self.torch.compile(_warm_py, backend="eager")(10)
        self.torch.compile(_warm_np, backend="eager")(np.ones((3, 2)))
        self.torch._dynamo.reset()

    def applicable(self, case):
        return None

    def reset(self):
        self.torch._dynamo.reset()

    def wrap(self, fn):
        return self.torch.compile(fn, backend="eager")

    def translation_count(self):  # frames Dynamo set out to convert
        from torch._dynamo.utils import counters
        return counters["frames"]["total"]

    def breaks(self, case, args):
        self.torch._dynamo.reset()
        e = self.torch._dynamo.explain(case.fn)(*args)
        self.torch._dynamo.reset()
        reasons = []
        for r in e.break_reasons[:5]:
            reasons.append(str(getattr(r, "reason", r)).strip().splitlines()[0][:160])
        return {"breaks": max(e.graph_break_count, 0), "graphs": e.graph_count, "break_reasons": reasons}


class Paddle:
    name = "paddle"

    def setup(self):
        # PaddleSOT's own info collector records each graph break's reason when this names it.
        os.environ["SOT_COLLECT_INFO"] = "breakgraph_reason"
        import numpy
        import paddle
        paddle.set_device("cpu")
        from paddle.jit.sot import symbolic_translate
        from paddle.jit.sot.opcode_translator.executor import executor_cache
        from paddle.jit.sot.utils import InfoCollector
        self.paddle, self.translate, self.cache, self.info = paddle, symbolic_translate, executor_cache, InfoCollector
        # Each translation of a frame goes through executor_cache.start_translate: record whether it ended in
        # running the frame's original bytecode (CustomCode.code is None).
        self.translations = []
        original = executor_cache.start_translate

        def recording(frame, **kwargs):
            result = original(frame, **kwargs)
            self.translations.append((frame.f_code.co_name, result[0].code is None))
            return result

        executor_cache.start_translate = recording
        self._warm()
        return {"numpy": numpy.__version__, "paddlepaddle": paddle.__version__}

    def _warm(self):
        self.translate(_warm_py)(10)
        self.reset()

    def applicable(self, case):
        if case.kind != "py":
            return "not run (PaddleSOT translates paddle.Tensor programs, not NumPy)"
        return None

    def reset(self):
        self.cache.OpcodeExecutorCache().clear()
        self.info().clear()
        self.translations.clear()

    def wrap(self, fn):
        return self.translate(fn)

    def translation_count(self):
        return len(self.translations)

    def breaks(self, case, args):
        # Read what the measured first call (with a, right after reset) recorded.
        first = self.first_translations
        if not first:
            return {"not_translated": True}
        return {"breaks": len(self.first_breaks),
                "break_reasons": [str(i.reason)[:160] for i in self.first_breaks][:5],
                "as_is": sum(1 for _, as_is in first if as_is), "translated_frames": len(first),
                "as_is_frames": [n for n, as_is in first if as_is][:5]}

    def after_first_call(self):
        self.first_breaks = list(self.info()._e2e_info.get("BreakGraphReasonInfo", []))
        self.first_translations = list(self.translations)


TOOL_CLASSES = {"plain": Plain, "ours": Ours, "dynamo": Dynamo, "paddle": Paddle}


# ---------------------------------------------------------------------------------------------------------------
# Child process: one tool over a list of cases; one JSON line per event on the protocol stream


def measure_case(tool, case, repeats, target_s):
    res = {"case": case.name, "kind": case.kind, "tool": tool.name}
    skip = tool.applicable(case)
    if skip:
        res["status"] = skip
        return res
    fn = case.fn
    a, b = case.args_a(), case.args_b()
    ref_a, ref_b = fn(*a), fn(*b)
    tool.reset()
    try:
        wrapped = tool.wrap(fn)
        t0 = time.perf_counter()
        out_a = wrapped(*a)
        res["first_ms"] = (time.perf_counter() - t0) * 1e3
    except Exception as exc:  # noqa: BLE001 - any failure of the tool is a result
        res["status"] = "error"
        res["error"] = "first call: " + short_error(exc)
        res["traceback"] = traceback.format_exc()[-2000:]
        return res
    if hasattr(tool, "after_first_call"):
        tool.after_first_call()
    problems = []
    if (why := same(ref_a, out_a, "a")) is not None:
        problems.append(why)
    errored = None
    try:
        t0 = time.perf_counter()
        out_b = wrapped(*b)
        res["second_ms"] = (time.perf_counter() - t0) * 1e3
        if (why := same(ref_b, out_b, "b")) is not None:
            problems.append(why)
    except Exception as exc:  # noqa: BLE001
        errored = "call with b: " + short_error(exc)
        res["traceback"] = traceback.format_exc()[-2000:]

    # Per-call time at a cache hit with a.
    try:
        for _ in range(3):
            wrapped(*a)

        def one(f):
            best = math.inf
            for _ in range(3):
                t = time.perf_counter()
                f(*a)
                best = min(best, time.perf_counter() - t)
            return best

        n = max(1, min(20000, int(target_s / max(one(wrapped), one(fn), 1e-7))))
        before = tool.translation_count()
        plain_t, tool_t = [], []
        for _ in range(repeats):
            t = time.perf_counter()
            for _ in range(n):
                fn(*a)
            plain_t.append(time.perf_counter() - t)
            t = time.perf_counter()
            for _ in range(n):
                wrapped(*a)
            tool_t.append(time.perf_counter() - t)
        plain_us = statistics.median(plain_t) / n * 1e6
        tool_us = statistics.median(tool_t) / n * 1e6
        res.update(calls=n, plain_us=plain_us, tool_us=tool_us, overhead_us=tool_us - plain_us,
                   hit_translations=tool.translation_count() - before)
        out_hit = wrapped(*a)
        if (why := same(ref_a, out_hit, "a at a hit")) is not None:
            problems.append(why)
    except Exception as exc:  # noqa: BLE001
        errored = errored or ("call at a hit: " + short_error(exc))
        res.setdefault("traceback", traceback.format_exc()[-2000:])

    try:
        res.update(tool.breaks(case, a))
    except Exception as exc:  # noqa: BLE001
        res["breaks_error"] = short_error(exc)
    if errored:
        res["status"] = "error"
        res["error"] = errored
    elif problems:
        res["status"] = "wrong"
        res["error"] = "; ".join(problems)[:300]
    else:
        res["status"] = "ok"
    return res


def child_main(args):
    # The protocol goes to the original stdout; everything else printed (the corpus's print, the tools' logs)
    # goes to /dev/null so it cannot garble it.
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)

    def send(**msg):
        proto.write(json.dumps(msg, default=str) + "\n")
        proto.flush()

    import corpus

    tool = TOOL_CLASSES[args.child]()
    t0 = time.perf_counter()
    try:
        versions = tool.setup()
    except Exception as exc:  # noqa: BLE001
        send(event="setup_error", error=short_error(exc), traceback=traceback.format_exc()[-2000:])
        return 0
    send(event="hello", versions=versions, setup_s=time.perf_counter() - t0)
    for name in args.cases.split(","):
        case = corpus.BY_NAME[name]
        send(event="start", case=name)
        try:
            res = measure_case(tool, case, args.repeats, args.target_ms / 1e3)
        except Exception as exc:  # noqa: BLE001 - a failure of the harness around the tool
            res = {"case": name, "kind": case.kind, "tool": tool.name, "status": "error",
                   "error": "harness: " + short_error(exc), "traceback": traceback.format_exc()[-2000:]}
        send(event="result", result=res)
    send(event="done")
    return 0


# ---------------------------------------------------------------------------------------------------------------
# Parent: runs each tool's child, restarting it after a crash or a hang


# Every child's math libraries run single-threaded: the arrays are small, and two thread pools that spin while
# they wait (NumPy's OpenBLAS, torch's OpenMP) distort each other's timings on a 2-core machine.
THREAD_VARS = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def child_env():
    env = dict(os.environ)
    env.update(THREAD_VARS)
    env.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    return env


def run_tool(tool, names, args, log_path):
    results, info = {}, {"setup_s": [], "versions": None, "restarts": 0}
    remaining = list(names)
    with open(log_path, "w") as log:
        while remaining:
            cmd = [sys.executable, os.path.abspath(__file__), "--child", tool, "--cases", ",".join(remaining),
                   "--repeats", str(args.repeats), "--target-ms", str(args.target_ms)]
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL, text=True,
                                    start_new_session=True, env=child_env())
            lines = queue.Queue()

            def reader(stream=proc.stdout, q=lines):
                for line in stream:
                    q.put(line)
                q.put(None)

            threading.Thread(target=reader, daemon=True).start()
            current, deadline = None, time.monotonic() + args.timeout + 120  # set-up: imports and warm-up
            failure = None
            while True:
                try:
                    line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
                except queue.Empty:
                    failure = f"timeout after {args.timeout:.0f} s"
                    os.killpg(proc.pid, signal.SIGKILL)
                    break
                if line is None:
                    proc.wait()
                    failure = f"child died (exit status {proc.returncode})"
                    break
                try:
                    msg = json.loads(line)
                except ValueError:
                    continue
                ev = msg["event"]
                if ev == "hello":
                    info["versions"] = msg["versions"]
                    info["setup_s"].append(msg["setup_s"])
                elif ev == "setup_error":
                    for n in remaining:
                        results[n] = {"case": n, "tool": tool, "status": "error",
                                      "error": "set-up: " + msg["error"]}
                    remaining = []
                    break
                elif ev == "start":
                    current = msg["case"]
                    deadline = time.monotonic() + args.timeout
                elif ev == "result":
                    r = msg["result"]
                    results[r["case"]] = r
                    remaining.remove(r["case"])
                    print(f"  {tool:7s} {r['case']:18s} {cell_status(r)}", flush=True)
                    current = None
                elif ev == "done":
                    proc.wait()
                    break
            proc.wait()
            if failure:
                if current is None:  # died before or between cases: blame the next one
                    current = remaining[0] if remaining else None
                if current is not None:
                    results[current] = {"case": current, "tool": tool, "status": "error", "error": failure}
                    remaining.remove(current)
                    print(f"  {tool:7s} {current:18s} error: {failure}", flush=True)
                info["restarts"] += 1
    return results, info


# ---------------------------------------------------------------------------------------------------------------
# Report


def cell_status(r):
    st = r.get("status", "error")
    if st == "ok":
        return "yes"
    if st == "wrong":
        return "WRONG: " + r.get("error", "")
    if st == "error":
        return "error: " + r.get("error", "")
    return st


def fmt(v, digits=1):
    if v is None:
        return "-"
    if abs(v) >= 100:
        return f"{v:.0f}"
    return f"{v:.{digits}f}"


def breaks_cell(r):
    if "breaks_error" in r:
        return "error¹"
    if r.get("not_translated"):
        return "n/a¹"
    if "breaks" not in r:
        return "n/a" if r.get("tool") != "plain" else "-"
    text = str(r["breaks"])
    if r.get("graphs") == 0 and r.get("tool") in ("dynamo",):
        text += " (no graph: as is)"
    if r.get("as_is"):
        text += f" (as is: {r['as_is']})"
    return text


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def summarize(table, cases):
    summary = {}
    for peer in PEERS:
        for kind in ("py", "np", "all"):
            first, hit, over = [], [], []
            for c in cases:
                if kind != "all" and c.kind != kind:
                    continue
                o, p = table["ours"].get(c.name, {}), table[peer].get(c.name, {})
                if o.get("status") != "ok" or p.get("status") != "ok" or p.get("not_translated"):
                    continue
                first.append(p["first_ms"] / o["first_ms"])
                hit.append(p["tool_us"] / o["tool_us"])
                over.append(max(p["overhead_us"], OVERHEAD_FLOOR_US) / max(o["overhead_us"], OVERHEAD_FLOOR_US))
            summary[f"{peer}/{kind}"] = {"functions": len(first), "first_call_ratio": geomean(first),
                                         "overhead_ratio": geomean(over), "hit_time_ratio": geomean(hit)}
    return summary


def render(table, cases, summary, meta):
    out = []
    out.append(f"# Side-by-side: ours vs TorchDynamo vs PaddleSOT ({meta['date']})")
    out.append("")
    out.append(f"Machine: {meta['machine']}. Python {meta['python']}. Versions: "
               + ", ".join(f"{k} {v}" for k, v in sorted(meta["versions"].items())) + ".")
    out.append("")
    out.append("Per tool: first call (ms, translation + first run), +µs/call at a cache hit (median of "
               f"{meta['repeats']} timings, plain time subtracted; the plain columns show the plain call's own "
               "time), graph breaks, correct on both argument sets.")
    out.append("")
    head = ["function", "kind", "plain first ms", "plain µs/call"]
    for t in ("ours", "dynamo", "paddle"):
        short = {"ours": "ours", "dynamo": "dynamo", "paddle": "paddle"}[t]
        head += [f"{short} first ms", f"{short} +µs/call", f"{short} breaks", f"{short} correct"]
    out.append("| " + " | ".join(head) + " |")
    out.append("|" + "|".join(["---"] * 2 + ["---:"] * 2 + ["---:", "---:", "---:", "---"] * 3) + "|")
    notes = []
    for c in cases:
        p = table["plain"].get(c.name, {})
        row = [c.name, c.kind, fmt(p.get("first_ms"), 3), fmt(p.get("plain_us"), 2)]
        for t in ("ours", "dynamo", "paddle"):
            r = table[t].get(c.name, {"status": "error", "error": "no result"})
            st = r.get("status")
            if st not in ("ok", "wrong", "error"):
                row += ["-", "-", "-", st.split(" (")[0]]
                continue
            correct = {"ok": "yes", "wrong": "**no**¹", "error": "error¹"}[st]
            if st != "ok":
                notes.append(f"- {c.name}, {t}: {cell_status(r)}")
            if r.get("second_ms", 0) > 1000:
                notes.append(f"- {c.name}, {t}: the second call (argument set b) took {r['second_ms'] / 1e3:.1f} s")
            if r.get("hit_translations"):
                k = r["hit_translations"]
                notes.append(f"- {c.name}, {t}: {k} translation{'s' if k != 1 else ''} during the timed calls at a "
                             f"hit ({r['calls'] * meta['repeats']} calls with the same arguments)")
            if r.get("not_translated"):
                notes.append(f"- {c.name}, {t}: no frame was handed to the translator: the function ran as is")
            if "breaks_error" in r:
                notes.append(f"- {c.name}, {t}: counting breaks failed: {r['breaks_error']}")
            row += [fmt(r.get("first_ms")), fmt(r.get("overhead_us")), breaks_cell(r), correct]
        out.append("| " + " | ".join(row) + " |")
    out.append("")
    if notes:
        out.append("¹ Not correct, or failed; and other things to know:")
        out.append("")
        out.extend(notes)
        out.append("")
    out.append("Breaks: graph breaks on a fresh translation with the first argument set; \"as is: k\": k frames ran "
               "their original bytecode (ours: `explain().fallbacks`; PaddleSOT: translations ending in "
               "`CustomCode(None)`, a fallback or a graph too small to keep); \"no graph: as is\": Dynamo found no "
               "tensor or NumPy operation to put in an FX graph and runs the frame's original bytecode. A negative "
               "+µs/call: the translated call is faster than the plain one (work folded at translation time).")
    out.append("PaddleSOT runs the pure-Python functions only (it translates `paddle.Tensor` programs).")
    out.append("")
    out.append("## Summary: geometric mean of peer/ours (> 1: ours is faster)")
    out.append("")
    out.append("Over the functions where both are correct and the peer translated at least one frame.")
    out.append("")
    out.append("| peer | functions | corpus | first call peer/ours | per-call overhead peer/ours | "
               "time per call at a hit peer/ours |")
    out.append("|---|---:|---|---:|---:|---:|")
    for peer in PEERS:
        for kind, label in (("py", "pure Python"), ("np", "NumPy"), ("all", "all")):
            s = summary[f"{peer}/{kind}"]
            if not s["functions"]:
                out.append(f"| {TOOL_TITLES[peer]} | 0 | {label} | - | - | - |")
                continue
            out.append(f"| {TOOL_TITLES[peer]} | {s['functions']} | {label} | {s['first_call_ratio']:.2f}x | "
                       f"{s['overhead_ratio']:.2f}x | {s['hit_time_ratio']:.2f}x |")
    out.append("")
    out.append(f"Per-call overhead: overheads under {OVERHEAD_FLOOR_US} µs/call (timer noise, or negative where a "
               f"translation folded work away) count as {OVERHEAD_FLOOR_US} µs/call. Time per call at a hit: the "
               "plain time plus the overhead (no clamping). "
               f"Wall time of the whole run: {meta['wall_s']:.0f} s (per tool: "
               + ", ".join(f"{t} {s:.0f} s" for t, s in meta["tool_wall_s"].items()) + ").")
    return "\n".join(out) + "\n"


def parent_main(args):
    import corpus

    cases = corpus.CASES
    if args.cases:
        cases = [corpus.BY_NAME[n] for n in args.cases.split(",")]
    names = [c.name for c in cases]
    tools = args.tools.split(",")
    if "plain" not in tools:
        tools.insert(0, "plain")
    os.makedirs(args.out, exist_ok=True)
    start = time.monotonic()
    table, infos, tool_wall = {}, {}, {}
    for tool in TOOLS:
        if tool not in tools:
            table[tool] = {n: {"case": n, "tool": tool, "status": "not run (--tools)"} for n in names}
            continue
        print(f"== {TOOL_TITLES[tool]}", flush=True)
        t0 = time.monotonic()
        table[tool], infos[tool] = run_tool(tool, names, args, os.path.join(args.out, f"{tool}.log"))
        tool_wall[tool] = time.monotonic() - t0
    versions = {}
    for info in infos.values():
        versions.update(info["versions"] or {})
    meta = {"date": datetime.date.today().isoformat(),
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, CPU only ({platform.node() or 'host'})",
            "python": platform.python_version(), "versions": versions, "repeats": args.repeats,
            "target_ms": args.target_ms, "timeout_s": args.timeout, "wall_s": time.monotonic() - start,
            "tool_wall_s": tool_wall, "tools": {t: infos[t] for t in infos}}
    summary = summarize(table, cases)
    md = render(table, cases, summary, meta)
    print()
    print(md)
    with open(os.path.join(args.out, "results.md"), "w") as f:
        f.write(md)
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump({"meta": meta, "summary": summary,
                   "results": {t: [table[t][n] for n in names] for t in TOOLS}}, f, indent=1, default=str)
    print(f"written: {os.path.join(args.out, 'results.md')}, {os.path.join(args.out, 'results.json')}")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="build/bench-peers", help="folder for results.md, results.json, logs")
    ap.add_argument("--tools", default=",".join(TOOLS), help="comma-separated subset of " + ",".join(TOOLS))
    ap.add_argument("--cases", default="", help="comma-separated function names (default: the whole corpus)")
    ap.add_argument("--repeats", type=int, default=9, help="timings per function and tool (median taken)")
    ap.add_argument("--target-ms", type=float, default=20.0, help="length of one timing")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds one function may take in a tool")
    ap.add_argument("--child", choices=TOOLS, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child_main(args)
    return parent_main(args)


if __name__ == "__main__":
    sys.exit(main())
