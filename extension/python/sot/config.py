"""Settings of xeus-sot, read from the environment at import and changeable at run time.

Environment variables:

``SOT_STRICT``
    ``1`` raises at the first graph break or fallback instead of recording it (default ``0``).
``SOT_LOG``
    comma-separated channels logged to stderr: ``breaks``, ``bytecode``, ``guards``, ``graph``, ``recompiles``
    (``all`` for every one).
``SOT_CACHE_LIMIT``
    cache entries per code object before the original code runs with a "recompile limit" reason (default 8).
``SOT_FAILURE_LIMIT``
    failed translations of one code object before it is given up on: the translator is not asked about it
    again, and a call that no cached entry fits runs the original code at the cost of a lookup (default 2;
    ``sot.reset()`` forgets it).
``SOT_BACKEND``
    graph backend by name (default ``cpu``: fused groups; ``numpy`` is the reference, each op as the user's call).
``SOT_DYNAMIC_SHAPES``
    ``1`` (default) makes a dimension symbolic after it changes once; ``0`` recompiles for every new shape.
``SOT_CPU_BLOCK``
    elements per block of the ``cpu`` backend's fused groups (default ``0``: chosen so that a block's
    arrays and temporaries take about 4 MiB).
``SOT_CPU_THREADS``
    threads running the blocks of one ``cpu`` kernel (default ``0``: one per core).
``SOT_CPU_TIER_B``
    ``0`` turns off the ``cpu`` backend's tier B (kernels compiled to machine code in the background and cached
    on disk in ``SOT_CACHE_DIR``, default ``~/.cache/xeus-sot``); default ``1``.
``SOT_CPU_TIER_C``
    the ``cpu`` backend's tier C, a loop op as one native function (compiled as tier B's kernels are):
    ``on`` (default: compiled in the background; the loop's own path runs until it is ready), ``sync``
    (compiled before the loop's first run: every run native from the first, for tests) or ``off``. With
    tier C off, a loop whose steps compute single elements or Python numbers is left to CPython.
``SOT_CPU_TIER_C_HOT``
    calls on small arrays (at most 16,384 items each) after which tier C makes a graph with no loop op one
    native function too (default ``64``); it then times a few calls of it and of tier B's groups per size of the
    arrays, now and then, and runs the faster. ``0``: native from the first call, untimed (for tests).
``SOT_PROFILE``
    ``1`` times every group of the ``cpu`` and ``cuda`` backends (``compiled.plan()``, the ``%%sot`` report; the
    ``cuda`` backend's device time too, between marks around each launch; default ``0``).
``SOT_CUDA_REPLAY``
    ``0`` turns off the ``cuda`` backend's replay of a loop's repeating steps (their launches queued again
    without the body's graph call; default ``1``).
``SOT_ADAPTIVE``
    ``1`` (default) times a cached translation against the function's original code now and then (rounds of
    8 calls of each, from the 64th call on, then 4x farther apart) and runs the faster: a translation that
    does not pay (one op on a small array) runs the original code; ``0`` always runs the translation.
``SOT_CHECK_GRAPHS``
    ``1`` checks every graph op's result against the dtype and shape the translator worked out (raises
    AssertionError on a difference; for tests, default ``0``).
"""

import os
from dataclasses import dataclass, field, fields

LOG_CHANNELS = ("breaks", "bytecode", "guards", "graph", "recompiles")


class ConfigError(ValueError):
    """A setting has a value xeus-sot cannot use; the message names the setting and the accepted values."""


def _parse_bool(name, text):
    value = text.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off", ""):
        return False
    raise ConfigError(f"{name}={text!r}: expected 0 or 1")


def _parse_tier_c(name, text):
    value = text.strip().lower()
    if value in ("1", "on", "true", "yes"):
        return "on"
    if value in ("0", "off", "false", "no", ""):
        return "off"
    if value == "sync":
        return "sync"
    raise ConfigError(f"{name}={text!r}: expected on, off or sync")


def _parse_log(name, text):
    channels = set()
    for part in text.split(","):
        part = part.strip().lower()
        if not part:
            continue
        if part == "all":
            channels.update(LOG_CHANNELS)
        elif part in LOG_CHANNELS:
            channels.add(part)
        else:
            raise ConfigError(f"{name}: unknown log channel {part!r}; known: {', '.join(LOG_CHANNELS)}, all")
    return frozenset(channels)


def _int_parser(minimum, expected):
    """A parser of integers >= ``minimum``; ``expected`` names them in the error."""

    def parse(name, text):
        try:
            value = int(text)
        except ValueError:
            raise ConfigError(f"{name}={text!r}: expected {expected}") from None
        if value < minimum:
            raise ConfigError(f"{name}={text!r}: expected {expected}")
        return value

    return parse


_parse_positive_int = _int_parser(1, "a positive integer")
_parse_count = _int_parser(0, "a non-negative integer")


def _parse_name(name, text):
    value = text.strip()
    if not value.isidentifier():
        raise ConfigError(f"{name}={text!r}: expected a backend name such as 'numpy'")
    return value


@dataclass
class Config:
    strict: bool = False
    log: frozenset = field(default_factory=frozenset)
    cache_limit: int = 8
    failure_limit: int = 2
    backend: str = "cpu"
    dynamic_shapes: bool = True
    check_graphs: bool = False
    cpu_block: int = 0
    cpu_threads: int = 0
    cpu_tier_b: bool = True
    cpu_tier_c: str = "on"
    cpu_tier_c_hot: int = 64
    profile: bool = False
    adaptive: bool = True
    cuda_replay: bool = True

    # environment variable and parser of each field
    _ENV = {
        "strict": ("SOT_STRICT", _parse_bool),
        "log": ("SOT_LOG", _parse_log),
        "cache_limit": ("SOT_CACHE_LIMIT", _parse_positive_int),
        "failure_limit": ("SOT_FAILURE_LIMIT", _parse_positive_int),
        "backend": ("SOT_BACKEND", _parse_name),
        "dynamic_shapes": ("SOT_DYNAMIC_SHAPES", _parse_bool),
        "check_graphs": ("SOT_CHECK_GRAPHS", _parse_bool),
        "cpu_block": ("SOT_CPU_BLOCK", _parse_count),
        "cpu_threads": ("SOT_CPU_THREADS", _parse_count),
        "cpu_tier_b": ("SOT_CPU_TIER_B", _parse_bool),
        "cpu_tier_c": ("SOT_CPU_TIER_C", _parse_tier_c),
        "cpu_tier_c_hot": ("SOT_CPU_TIER_C_HOT", _parse_count),
        "profile": ("SOT_PROFILE", _parse_bool),
        "adaptive": ("SOT_ADAPTIVE", _parse_bool),
        "cuda_replay": ("SOT_CUDA_REPLAY", _parse_bool),
    }
    # fields the C++ backends read at run time: pushed to them when set
    _CPU_FIELDS = ("cpu_block", "cpu_threads", "cpu_tier_b", "cpu_tier_c", "cpu_tier_c_hot", "profile",
                   "cuda_replay")

    def __setattr__(self, name, value):
        if name in ("cpu_block", "cpu_threads", "cpu_tier_c_hot") and (not isinstance(value, int) or value < 0):
            raise ConfigError(f"{name}={value!r}: expected a non-negative integer")
        if name == "cpu_tier_c" and value not in ("on", "off", "sync"):
            raise ConfigError(f"{name}={value!r}: expected 'on', 'off' or 'sync'")
        super().__setattr__(name, value)
        if name in self._CPU_FIELDS and self is globals().get("config"):
            self.apply_cpu_options()
        if name == "adaptive" and self is globals().get("config"):
            from . import _sot

            _sot.capture.set_adaptive(bool(value))

    def apply_cpu_options(self):
        """Hands ``cpu_block``, ``cpu_threads``, ``cpu_tier_b``, ``cpu_tier_c``, ``cpu_tier_c_hot`` and ``profile``
        to the ``cpu`` backend."""
        from . import _sot

        _sot.graph.cpu_options(block_elements=self.cpu_block, profile=self.profile, threads=self.cpu_threads)
        _sot.graph.cuda_profile(self.profile)
        _sot.graph.cuda_replay(self.cuda_replay)
        _sot.graph.tier_b(self.cpu_tier_b)
        _sot.graph.tier_c(self.cpu_tier_c)
        _sot.graph.tier_c_hot(self.cpu_tier_c_hot)

    @classmethod
    def from_environ(cls, environ=None):
        """A Config from ``environ`` (default ``os.environ``); unset variables keep their defaults."""
        environ = os.environ if environ is None else environ
        values = {}
        for f in fields(cls):
            var, parse = cls._ENV[f.name]
            if var in environ:
                values[f.name] = parse(var, environ[var])
        return cls(**values)

    def logs(self, channel):
        """True when ``channel`` (one of LOG_CHANNELS) is being logged."""
        if channel not in LOG_CHANNELS:
            raise ConfigError(f"unknown log channel {channel!r}; known: {', '.join(LOG_CHANNELS)}")
        return channel in self.log


config = Config.from_environ()
