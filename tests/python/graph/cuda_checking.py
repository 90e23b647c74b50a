"""The CUDA compile check from a test: on for a block (where SOT_CUDA_CHECK=1 did not turn it on for the session,
off again after it), and the entries of the kernels a function's graphs make on the cpu backend."""

import contextlib

import sot

G = sot._sot.graph


@contextlib.contextmanager
def cuda_check_on():
    """The check on, the translations forgotten before and after, and only the kernels made inside read."""
    sot.reset()
    was_on = G.cuda_check_report()["enabled"]
    if not was_on:
        G.cuda_check(True)
    G.cuda_check_take()
    try:
        yield
    finally:
        if not was_on:
            G.cuda_check(False)
        sot.reset()


def kernels_of(fn, *args):
    """The CUDA check's entries for the kernels of fn's graphs on the cpu backend (the check on)."""
    sot.jit(fn, backend="cpu")(*args)
    return G.cuda_check_take()
