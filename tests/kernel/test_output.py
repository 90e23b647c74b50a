"""Stream output batching in the xsot kernel (kernel/python/xsot_kernel/output.py): few stream messages for many
writes, output of a running cell arriving before the cell ends, stdout/stderr order, output before display data
and errors, flush(). Messages are timed as they arrive on iopub."""

import time

import pytest
from conftest import KernelSession

LINES = 20000


def timed_collect(session, code, timeout=60):
    """Runs ``code``; returns (reply, [(seconds since the request, message)]) up to the idle status."""
    session.drain_iopub()
    start = time.monotonic()
    msg_id = session.kc.execute(code)
    timed = []
    deadline = start + timeout
    while True:
        msg = session.kc.get_iopub_msg(timeout=max(0.1, deadline - time.monotonic()))
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        now = time.monotonic() - start
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            timed.append((now, msg))
            break
        timed.append((now, msg))
    while True:  # a kernel_info_reply left by start_new_kernel's retries on a slow start is skipped
        reply = session.kc.get_shell_msg(timeout=max(0.1, deadline - time.monotonic()))
        if reply["parent_header"].get("msg_id") == msg_id:
            return reply, timed
        assert reply["msg_type"] == "kernel_info_reply", reply["msg_type"]


def streams(timed):
    return [(m["content"]["name"], m["content"]["text"]) for _, m in timed if m["msg_type"] == "stream"]


def kinds(timed):
    """Message types in arrival order, with consecutive stream messages of one name merged."""
    out = []
    for _, m in timed:
        kind = m["msg_type"]
        if kind == "stream":
            kind = f"stream:{m['content']['name']}"
        elif kind == "status":
            continue
        if not out or out[-1] != kind or not kind.startswith("stream"):
            out.append(kind)
    return out


def test_many_prints_become_few_messages(kernel):
    reply, timed = timed_collect(kernel, f"for i in range({LINES}):\n    print(i, 'x')")
    assert reply["content"]["status"] == "ok"
    got = streams(timed)
    assert {name for name, _ in got} == {"stdout"}
    assert "".join(text for _, text in got) == "".join(f"{i} x\n" for i in range(LINES))
    # One message per flush interval (0.1 s) at most, plus the final flush; unbatched this is 80,000 messages.
    assert len(got) < 200, len(got)


def test_long_cell_output_arrives_before_the_cell_ends(kernel):
    reply, timed = timed_collect(kernel, "import time\nprint('started')\ntime.sleep(2)\nprint('done')")
    assert reply["content"]["status"] == "ok"
    idle = timed[-1][0]
    started = [t for t, m in timed if m["msg_type"] == "stream" and "started" in m["content"]["text"]]
    assert started, streams(timed)
    # Published within the flush interval, long before the 2-second sleep ends.
    assert idle - started[0] > 1.2, (started, idle)
    assert "".join(text for _, text in streams(timed)) == "started\ndone\n"


def test_stdout_and_stderr_keep_their_order(kernel):
    code = ("import sys\n"
            "print('a1'); print('a2')\n"
            "print('b1', file=sys.stderr)\n"
            "print('a3')\n"
            "sys.stderr.write('b2\\n')\n")
    reply, timed = timed_collect(kernel, code)
    assert reply["content"]["status"] == "ok"
    merged = []
    for name, text in streams(timed):
        if merged and merged[-1][0] == name:
            merged[-1] = (name, merged[-1][1] + text)
        else:
            merged.append((name, text))
    assert merged == [("stdout", "a1\na2\n"), ("stderr", "b1\n"), ("stdout", "a3\n"), ("stderr", "b2\n")]


def test_output_comes_before_display_result_and_error(kernel):
    code = ("from IPython.display import display\n"
            "print('before display')\n"
            "display('shown')\n"
            "print('after display')\n"
            "1 + 1\n")
    reply, timed = timed_collect(kernel, code)
    assert reply["content"]["status"] == "ok"
    assert kinds(timed) == ["execute_input", "stream:stdout", "display_data", "stream:stdout", "execute_result"]

    reply, timed = timed_collect(kernel, "print('before the error')\nraise ValueError('boom')")
    assert reply["content"]["status"] == "error"
    assert kinds(timed) == ["execute_input", "stream:stdout", "error"]


def test_output_of_a_sot_cell_is_ordered_with_its_report(kernel):
    code = ("%%sot\n"
            "def f(x):\n"
            "    print('inside', x)\n"
            "    return x + 1\n"
            "print('result', f(1))\n")
    reply, timed = timed_collect(kernel, code)
    assert reply["content"]["status"] == "ok"
    text = "".join(t for _, t in streams(timed))
    assert text == "inside 1\nresult 2\n"
    # The cell's prints come before the report the magic displays after running it.
    order = kinds(timed)
    assert order.index("stream:stdout") < order.index("display_data"), order


@pytest.fixture(scope="module")
def slow_kernel():
    """A kernel whose flush interval is 5 s: output shows only at flush() or the end of the cell."""
    session = KernelSession(env_extra={"XSOT_OUTPUT_INTERVAL": "5"})
    yield session
    session.close()


def test_flush_publishes_at_once(slow_kernel):
    code = ("import sys, time\n"
            "print('flushed'); sys.stdout.flush()\n"
            "print('buffered')\n"
            "time.sleep(1.5)\n")
    reply, timed = timed_collect(slow_kernel, code)
    assert reply["content"]["status"] == "ok"
    idle = timed[-1][0]
    arrivals = {text: t for t, m in timed if m["msg_type"] == "stream" for text in [m["content"]["text"]]}
    assert idle - arrivals["flushed\n"] > 1.0, arrivals
    # Not flushed: kept until the cell ended (the 5-second interval had not passed).
    assert idle - arrivals["buffered\n"] < 0.5, arrivals
