"""xeus-sot: a symbolic opcode translator and graph executor for NumPy code.

The C++ core lives in the extension module ``sot._sot`` (built once per supported Python); this package is its
Python face. See docs/architecture.md for the parts and how they depend on each other.
"""

import sys as _sys

try:
    from . import _sot
except ImportError as _exc:  # pragma: no cover - exercised only on a broken or foreign build
    raise ImportError(
        "sot: the C++ core (sot._sot) is not built for Python "
        f"{_sys.version_info[0]}.{_sys.version_info[1]} in {__path__[0]}; run `make` in the xeus-sot tree "
        f"(original error: {_exc})"
    ) from _exc

from . import bytecode, capture, report
from .config import Config, ConfigError, config

config.apply_cpu_options()
from .translate import Explanation, explain, jit, reset, symbolic_translate

__version__ = _sot.__version__

from .device import DeviceArray  # (with NumPy's protocols: sot/device.py)


def to_device(a):
    """A copy of array ``a`` on the cuda backend's device (the simulated one under ``SOT_CUDA_SIMULATE=1``), as a
    ``DeviceArray``: a function translated for the ``cuda`` backend takes it in place and gives device results."""
    return _sot.graph.to_device(a)


def build_info():
    """Versions and options the C++ core was built with (a dict)."""
    return _sot.build_info()


__all__ = ["Config", "ConfigError", "DeviceArray", "Explanation", "build_info", "bytecode", "capture", "config", "explain", "jit",
           "report", "reset", "symbolic_translate", "to_device", "__version__"]
