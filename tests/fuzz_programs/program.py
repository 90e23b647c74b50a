"""One fuzz program: its source run as a module, the differential check of its ``CALLS`` through one translated
``f`` (the harness's ``compare_varied`` with the NumPy harness's ``Outcome`` and ``same``, plus ``g_*`` globals
reset before each run, NumPy's error state reset, and the warnings raised compared), that check in a forked child
with a time limit (a crash or a hang fails the program, not the fuzzer), and the files programs are saved in.

``SOT_FUZZ_DEVICE=1`` (with ``SOT_BACKEND=cuda``, and ``SOT_CUDA_SIMULATE=1`` without a GPU): the translated runs
are given their array arguments as device arrays (``sot.to_device``), and what they give back, the arguments after
the call and the globals are read back to the host before they are compared (aliasing is not compared: a view of a
device array read back is a copy)."""

import ast
import contextlib
import copy
import dataclasses
import hashlib
import io
import os
import pathlib
import pickle
import re
import resource
import select
import signal
import sys
import traceback
import types
import warnings

TESTS = pathlib.Path(__file__).resolve().parents[1]
for _folder in ("python", "python/translator", "python/graph"):  # the differential harnesses
    if str(TESTS / _folder) not in sys.path:
        sys.path.insert(0, str(TESTS / _folder))

import numpy as np  # noqa: E402
from differential import ABSENT, set_globals  # noqa: E402
from harness import compare_varied  # noqa: E402
from numpy_differential import CUDA, Outcome, float_data_precision, same  # noqa: E402

import sot  # noqa: E402
from sot import capture as cap  # noqa: E402

REGRESSIONS = pathlib.Path(__file__).resolve().parent / "regressions"
NUMPY_ERRORS = np.geterr()  # every run starts from NumPy's default error state
MEMORY_LIMIT = 4 << 30  # bytes of address space for a child


@dataclasses.dataclass(frozen=True)
class Failure:
    """How a program failed: ``signature`` is what the shrinker keeps (e.g. ``("differs", "error", "ValueError",
    "TypeError")`` or ``("graph check", "add")``), ``message`` the harness's report."""

    signature: tuple
    message: str


def _text(outcome):
    """repr() of an outcome; an int too long for repr (a loop squaring one) shown by its size."""
    try:
        return repr(outcome)
    except ValueError:
        return "(an outcome holding an int of more than sys.get_int_max_str_digits() digits)"


def load(source):
    """The program's module."""
    module = types.ModuleType("fuzz_program")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)  # e.g. "'str' object is not callable" of a shrunk program
        code = compile(source, "<fuzz program>", "exec")
    exec(code, module.__dict__)  # noqa: S102 - running generated programs is the point
    return module


DEVICE = os.environ.get("SOT_FUZZ_DEVICE") == "1"


def _on_host(x, given):
    """``x`` with each device array read back: a device argument as the host argument it stands for (``given``:
    pairs of them), another as a new NumPy array; in lists, tuples and dicts too."""
    for host, dev in given:
        if x is dev:
            return host
    if type(x) is sot.DeviceArray:
        return np.asarray(x)
    if type(x) in (list, tuple):
        return type(x)(_on_host(i, given) for i in x)
    if type(x) is dict:
        return {k: _on_host(v, given) for k, v in x.items()}
    return x


class DeviceOutcome(Outcome):
    """``Outcome`` of a translated call given device arrays for its exact ndarray arguments."""

    def __init__(self, fn, args, kwargs, translator):  # noqa: super().__init__ is the plain form of this
        self.args = copy.deepcopy(args)
        self.kwargs = copy.deepcopy(kwargs)
        given = []  # (the same array twice: one device array)
        for a in self.args:
            if (type(a) is np.ndarray and a.dtype.kind in "biufc" and a.flags.writeable
                    and not any(h is a for h, _ in given)):
                given.append((a, sot.to_device(a)))
        device_args = [next((d for h, d in given if h is a), a) for a in self.args]
        out = io.StringIO()
        self.value = self.error = None
        with contextlib.redirect_stdout(out):
            try:
                with cap.capture(translator):
                    value = fn(*device_args, **self.kwargs)
                self.value = _on_host(value, given)
            except Exception as exc:  # noqa: BLE001 - every exception is compared
                self.error = (type(exc), str(exc))
            finally:
                for host, dev in given:  # (what the call wrote into its arguments)
                    if host.flags.writeable:
                        host[...] = np.asarray(dev)
        self.stdout = out.getvalue()
        self.globals = {k: copy.deepcopy(_on_host(v, given)) for k, v in fn.__globals__.items() if k.startswith("g_")}
        self.aliases = None


_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")


def _printed_numbers(text):
    """``text`` as its pieces: the text between numbers (compared exactly) and each number as a float64 (compared
    as the harness compares floats under cuda: within the tolerance of the data the program computes in)."""
    pieces, last = [], 0
    for m in _NUMBER.finditer(text):
        pieces += [text[last:m.start()], np.float64(m.group())]
        last = m.end()
    return pieces + [text[last:]]


def runner(source):
    """``(f, CALLS, run)`` of the program: ``run(args, kwargs, translator)`` calls ``f`` once (plainly when
    ``translator`` is None) from the initial ``g_*`` globals and NumPy error state, and returns what a caller
    sees (the NumPy harness's ``Outcome``, with the warnings)."""
    module = load(source)
    fn = module.f
    init = {name: module.__dict__.get(name, ABSENT) for name in sorted(set(re.findall(r"\bg_\w+", source)))}

    def run(args, kwargs, translator):
        set_globals(fn, init)
        np.seterr(**NUMPY_ERRORS)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            # (a DeviceArray is not an ndarray: a program asking is not checked on the device)
            on_device = DEVICE and translator is not None and "isinstance" not in source and "type(" not in source
            kind = DeviceOutcome if on_device else Outcome
            seen = kind(fn, args, kwargs, translator).view()
            if DEVICE:
                seen.pop("aliases")
        seen = {"error": seen.pop("error"), **seen}  # compared first: a difference names the exception types
        np.seterr(**NUMPY_ERRORS)
        # Which warnings, not how many: a graph computes a repeated expression once (and warns once).
        seen["warnings"] = sorted({(w.category.__name__, str(w.message)) for w in caught})
        if CUDA:  # (the GPU's transcendentals are within ulps of NumPy's: printed numbers compare as values)
            seen["stdout"] = _printed_numbers(seen["stdout"])
        if translator is None and " at 0x" in _text(seen):  # an address: it would differ translated (a fuzzer bug)
            raise RuntimeError(f"the plain outcome shows an object's address: {_text(seen)}")
        return seen

    return fn, module.CALLS, run


def check(source):
    """Compares every call of ``CALLS`` plainly and translated (``AssertionError`` on a difference); returns the
    capture's counters for ``f``."""
    fn, calls, run = runner(source)
    # (under cuda, float64 results computed from float32 data the program makes itself carry float32's rounding,
    # as those computed from float32 arguments do)
    with float_data_precision(np.float32 if "float32" in source else None):
        compare_varied(fn, calls, run, same, check_graphs=True)
    return cap.stats(fn)


def signature(kind, message):
    """``("graph check", op)`` when the translated run's graph check failed (an op's result is not what the
    translator worked out), ``("differs", what)`` for another difference (for exceptions, with their types), else
    ``(kind, last line)``."""
    found = re.search(r"translated differs in (\w+): (.*)", message, re.S) if kind == "differs" else None
    if found is None:
        return (kind, message.strip().splitlines()[-1][:200] if message.strip() else "")
    what, rest = found.groups()
    graph_op = re.match(r"\(<class 'AssertionError'>, .graph op %\d+ = (\w+)", rest)
    if graph_op:
        return ("graph check", graph_op.group(1))
    return ("differs", what) + (tuple(re.findall(r"<class '([\w.]+)'>", rest)) if what == "error" else ())


class Timeout(BaseException):
    """The check ran out of time (not an ``Exception``: the harness records those as the call's outcome)."""


def _on_alarm(*_):
    raise Timeout("translated" if cap.depth() else "plain")


def check_isolated(source, timeout=20):
    """``check(source)`` in a forked child: ``(None, stats)`` when the calls match, else ``(Failure, None)``. The
    child's crash (a signal) is a failure too, and so is running past ``timeout`` seconds: ``("timeout", "plain")``
    (a fuzzer bug), ``("timeout", "translated")``, or ``("timeout", "killed")`` when the child did not even stop
    (a loop in C++ code holding the GIL)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: whatever happens, it leaves through os._exit
        try:
            os.close(read_end)
            signal.signal(signal.SIGALRM, _on_alarm)
            signal.alarm(timeout)
            if "libasan" not in os.environ.get("LD_PRELOAD", ""):
                # (AddressSanitizer reserves terabytes of address space: under it no limit fits)
                resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
            try:
                stats = check(source)
                result = ("ok", {k: stats[k] for k in ("translations", "fallbacks", "hits")})
            except AssertionError as exc:
                result = ("differs", str(exc))
            except Timeout as exc:
                result = ("timeout", str(exc))
            except BaseException:  # noqa: BLE001 - a harness or fuzzer problem, reported as such
                result = ("exception", traceback.format_exc())
            with os.fdopen(write_end, "wb") as pipe:
                pipe.write(pickle.dumps(result))
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        if not select.select([pipe], [], [], timeout + 10)[0]:
            os.kill(pid, signal.SIGKILL)
        data = pipe.read()
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        name = signal.Signals(os.WTERMSIG(status)).name
        if name == "SIGKILL" and not data:
            return Failure(("timeout", "killed"), f"ran past {timeout} s and did not stop"), None
        return Failure(("crash", name), f"the child died of {name}"), None
    if not data:
        return Failure(("crash", "no report"), "the child ended without a report"), None
    kind, detail = pickle.loads(data)
    if kind == "ok":
        return None, detail
    if kind == "timeout":
        return Failure(("timeout", detail), f"ran past {timeout} s (in a {detail} run)"), None
    return Failure(signature(kind, detail), detail), None


# -- saved programs ----------------------------------------------------------------------------------------------
# A saved program is its source after a header of ``# key: value`` comments: ``found`` (how and where it
# failed), ``xfail`` (the reason of a known bug, "BUG: ..."), ``xfail-on`` (the Python versions it fails on;
# absent: all).


def key(source):
    """The program's identity, formatting and comments aside."""
    return hashlib.sha1(ast.dump(ast.parse(source)).encode()).hexdigest()[:10]


def read(path):
    """``(source, header)`` of a saved program."""
    text = pathlib.Path(path).read_text(encoding="utf-8")
    header = dict(re.findall(r"^# ([\w-]+): (.*)$", text.split("\n\n", 1)[0], re.M))
    return text, header


def save(folder, source, failure, header):
    """Writes ``source`` with ``header`` into ``folder`` (named after the failure and the program); its path."""
    folder = pathlib.Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    slug = "-".join(re.sub(r"\W+", "_", str(part))[:20] for part in failure.signature[:3]).lower()
    path = folder / f"{slug}_{key(source)}.py"
    lines = [f"# {k}: {v}" for k, v in header.items()]
    path.write_text("\n".join(lines) + "\n\n" + source, encoding="utf-8")
    return path


def saved_keys(folder):
    """The keys of the programs saved in ``folder``."""
    return {key(read(p)[0]) for p in sorted(pathlib.Path(folder).glob("*.py"))}
