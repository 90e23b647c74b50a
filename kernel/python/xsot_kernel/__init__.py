"""Python side of the xsot kernel: the IPython shell it runs cells in, output batching, history answers, start-up."""

import sys


def on_kernel_start(shell):
    """Called by the kernel once its IPython shell exists: batches stream output, loads sot and registers the
    magics.

    A failure here leaves a working plain-Python kernel and says why on stderr.
    """
    from . import output

    output.install(shell)
    try:
        import sot  # noqa: F401  (importing checks that the C++ core loads)

        shell.extension_manager.load_extension("sot_magics")
    except Exception as exc:  # pragma: no cover - reported, never fatal
        print(f"xsot: sot is not available in this kernel: {exc!r}", file=sys.stderr)
