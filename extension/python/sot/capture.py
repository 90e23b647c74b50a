"""The frame-capture runtime (C++, ``sot._sot.capture``): a PEP 523 hook that hands frames to a callback which may
replace their code, a per-code cache of replacements with guards, and rules for code it never touches.

    def callback(code, locals):
        return None                 # run the original code
        return new_code, guard      # run new_code now, and later whenever guard(locals) is true (None: always)

    with sot.capture.capture(callback):
        f(1, 2)
    sot.capture.stats(f)            # hits, misses, translations, declined, fallbacks, guard_ns, entries, reasons

The replacement must keep the original's localsplus layout (same names, kinds and order), argument counts and
kind of function, and need no larger value stack; it then runs in the frame CPython already made, swapped in
before the first instruction. Anything else is a fallback: the original code runs and the reason is recorded.
Frames never handed to the callback: generators and coroutines being resumed or thrown into, frames while a
trace or profile function is set, the callback's own frames, code marked do-not-translate, and code under the
skip rules (by default the standard library, site- and dist-packages, numpy, IPython and sot itself).
"""

import contextlib
import os
import sysconfig

from . import _sot
from .config import config

_c = _sot.capture

enable = _c.enable
disable = _c.disable
jit_function = _c.jit_function
depth = _c.depth
stats = _c.stats
clear = _c.clear
mark_do_not_translate = _c.mark_do_not_translate
set_cache_limit = _c.set_cache_limit
cache_limit = _c.cache_limit
set_failure_limit = _c.set_failure_limit
failure_limit = _c.failure_limit
skip_rules = _c.skip_rules

DEFAULT_SKIPPED_MODULES = ("sot", "sot_magics", "xsot_kernel", "numpy", "IPython", "ipykernel",
                           "xeus_python_shell", "debugpy", "jupyter_client", "traitlets", "pytest", "_pytest",
                           "pluggy")


def default_skipped_paths():
    """The standard library and the folders third-party packages install into."""
    paths = set()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        path = sysconfig.get_paths().get(key)
        if path:
            paths.add(os.path.join(os.path.realpath(path), ""))
            paths.add(os.path.join(path, ""))
    for path in ("/usr/lib/python3/dist-packages/", os.path.join(os.path.dirname(__file__), "")):
        paths.add(path)
    return sorted(paths)


def set_skip_rules(modules=DEFAULT_SKIPPED_MODULES, paths=None, allow_modules=(), generators=False):
    """Replace the skip rules: module names (with their submodules), file path prefixes, and modules captured even
    when another rule would skip them (e.g. a CPython test module under the standard library's folder).

    Functions that create generators or coroutines are skipped unless ``generators`` is true: from Python 3.12 a
    generator's ``gi_code`` is its frame's code, so running a replacement there is visible to user code."""
    _c.set_skip_rules(list(modules), list(default_skipped_paths() if paths is None else paths), list(allow_modules),
                      bool(generators))


GuardTree = _c.GuardTree
Translator = _c.Translator
RoundTripTranslator = _c.RoundTripTranslator


class Guards:
    """Builds a GuardTree (evaluated in C++) for the frames of one code object.

        g = Guards(fn)
        g.local("x").type_is(int).equals(3)
        g.local("w").attr("data").array_like(some_array)
        g.global_("np").is_(numpy)
        return new_code, g.tree
    """

    def __init__(self, code):
        self.code = getattr(code, "__code__", code)
        self.tree = GuardTree()

    def local(self, name):
        return GuardPath(self, (("local", name),))

    def global_(self, name):
        return GuardPath(self, (("global", name),))

    def builtin(self, name):
        return GuardPath(self, (("builtin", name),))


class GuardPath:
    """A value reached from a local, global or builtin through attributes and items; checks chain."""

    def __init__(self, guards, path):
        self._guards = guards
        self._path = path

    def attr(self, name):
        return GuardPath(self._guards, self._path + (("attr", name),))

    def item(self, key):
        return GuardPath(self._guards, self._path + (("item", key),))

    def _add(self, kind, **kwargs):
        _c.add_guard(self._guards.tree, self._guards.code, list(self._path), kind, **kwargs)
        return self

    def type_is(self, cls):
        return self._add("type", expected=cls)

    def is_(self, obj):
        return self._add("id", expected=obj)

    def equals(self, constant):
        return self._add("equals", expected=constant)

    def len_is(self, n):
        return self._add("len", length=n)

    def absent(self):
        """There is no such value (e.g. no global of that name, so LOAD_GLOBAL finds the builtin)."""
        return self._add("absent")

    def dict_keys(self, keys):
        return self._add("dict_keys", expected=tuple(keys))

    def dict_unchanged(self, d):
        """The value is a dict not mutated since now (its version tag; `d` is the dict as it is now)."""
        return self._add("dict_version", expected=d)

    def array(self, format, shape, contiguous=False):  # noqa: A002 - the buffer protocol's word
        """Buffer meta: element format (e.g. 'd' for float64), C-contiguity and a shape whose entries are a size,
    None (any size) or a symbol name: a dynamic size of at least 2, equal wherever the same name appears in the
    tree (``shape=("n", 3)`` on x and ``("n",)`` on y: x.shape[0] == y.shape[0] >= 2)."""
        return self._add("array", expected=format, shape=tuple(shape), contiguous=contiguous)

    def array_like(self, value, dynamic=()):
        """The type and buffer meta of `value` (an ndarray or any buffer). `dynamic` names the axes that may vary:
        a collection of axes (any size), or a dict {axis: symbol name} (see array())."""
        view = memoryview(value)
        if isinstance(dynamic, dict):
            shape = tuple(dynamic.get(axis, size) for axis, size in enumerate(view.shape))
        else:
            shape = tuple(None if axis in dynamic else size for axis, size in enumerate(view.shape))
        self.type_is(type(value))
        return self.array(view.format, shape, contiguous=view.c_contiguous)


@contextlib.contextmanager
def capture(callback):
    """A capture scope on this thread for the length of the ``with`` block (nestable; the innermost wins).
    ``callback`` is a Python callable (see the module's doc) or a C++ ``Translator``."""
    _c.enable(callback)
    try:
        yield
    finally:
        _c.disable()


set_strict = _c.set_strict
strict = _c.strict
set_adaptive = _c.set_adaptive
adaptive = _c.adaptive

set_skip_rules()
set_cache_limit(config.cache_limit)
set_failure_limit(config.failure_limit)
set_strict(config.strict)
set_adaptive(config.adaptive)

__all__ = ["GuardPath", "GuardTree", "Guards", "RoundTripTranslator", "Translator", "adaptive", "capture", "cache_limit", "clear", "default_skipped_paths", "depth", "disable", "enable", "jit_function",
           "failure_limit", "mark_do_not_translate", "set_adaptive", "set_cache_limit", "set_failure_limit", "set_skip_rules", "set_strict", "skip_rules", "stats", "strict"]
