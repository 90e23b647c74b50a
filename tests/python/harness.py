"""What the differential harnesses share: running a case in a forked child (a crash of the translated code fails
that case, not the whole pytest session), and the checks every translation's records must pass."""

import os
import traceback

import pytest


def in_child(body):
    """Calls ``body()`` in a forked child; its exception (traceback) or crash (signal) fails the calling test."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report a failure's traceback through the pipe, then leave without cleanup
        os.close(read_end)
        try:
            body()
            report = b""
        except BaseException:  # noqa: BLE001 - everything goes back to the parent
            report = traceback.format_exc().encode()
        with os.fdopen(write_end, "wb") as pipe:
            pipe.write(report)
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        report = pipe.read().decode()
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        pytest.fail(f"the translated run crashed (signal {os.WTERMSIG(status)})", pytrace=False)
    if report:
        pytest.fail(report, pytrace=False)


def assert_codes_hashable(records):
    """Every transformed code object and resume function is hashable (tools such as IPython's traceback
    formatting hash code objects)."""
    for r in records:
        for code in [r["transformed"]] + [x["code"] for x in r["resumes"]]:
            if code is not None:
                hash(code)
