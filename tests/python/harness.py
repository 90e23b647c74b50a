"""What the differential harnesses share: running a case in a forked child (a crash of the translated code fails
that case, not the whole pytest session), and the checks every translation's records must pass."""

import os
import traceback

import pytest

import sot
from sot import capture as cap


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


def compare_varied(fn, calls, run, same, check_graphs=False):
    """``fn`` called with each of ``calls`` (``(args, kwargs)`` pairs of the same types with other values, lengths,
    item types, dtypes or shapes) through ONE translated function, every call twice and interleaved (a cache hit
    with other arguments is where a missing guard shows), each compared with the plain run of that call.
    ``run(args, kwargs, translator)`` runs one call (plainly when ``translator`` is None) and returns what a caller
    can see as a dict; ``same`` compares two such entries. No graph or break counts are pinned: what is folded or
    captured may depend on the arguments."""
    plain = [run(args, kwargs, None) for args, kwargs in calls]
    sot.reset()
    cap.clear(fn)
    translator = sot.translate.new_translator(records=True)
    if check_graphs:
        translator.check_graphs = True
    for round_ in range(2):
        for i, (args, kwargs) in enumerate(calls):
            got = run(args, kwargs, translator)
            for key, want in plain[i].items():
                assert same(got[key], want), (
                    f"call {i} ({args!r}, {kwargs!r}), round {round_ + 1}: translated differs in {key}: "
                    f"{got[key]!r} != {want!r}")
    assert_codes_hashable(translator.records())
