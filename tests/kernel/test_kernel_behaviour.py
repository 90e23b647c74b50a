"""xsot-specific kernel behaviour beyond jupyter_kernel_test: interrupt, restart, error names, input(), rich
display, streaming, version report, the debugger's info request, and %%sot cells that raise."""

import base64
import struct
import time
import zlib
from pathlib import Path

import pytest

from conftest import TIMEOUT, KernelSession


def _wait_busy(session, msg_id, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        msg = session.kc.get_iopub_msg(timeout=timeout)
        if (msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "execute_input"):
            return
    raise AssertionError("cell never started")


@pytest.mark.parametrize("code", ["while True:\n    pass", "import time\ntime.sleep(60)",
                                  "def spin():\n    while True:\n        pass\nspin()"])
def test_interrupt_stops_a_running_cell_within_a_second_and_the_kernel_lives(kernel, code):
    kernel.drain_iopub()
    msg_id = kernel.kc.execute(code)
    _wait_busy(kernel, msg_id)
    time.sleep(0.3)  # let the loop get going
    sent = time.monotonic()
    kernel.km.interrupt_kernel()
    reply, outputs = kernel.collect(msg_id, timeout=10)
    elapsed = time.monotonic() - sent
    assert reply["content"]["status"] == "error"
    assert reply["content"]["ename"] == "KeyboardInterrupt"
    assert elapsed < 1.0, f"interrupt took {elapsed:.2f} s"
    assert kernel.km.is_alive()
    reply, outputs = kernel.run("21 * 2")
    assert reply["content"]["status"] == "ok"
    results = [m for m in outputs if m["msg_type"] == "execute_result"]
    assert results[0]["content"]["data"]["text/plain"] == "42"


def test_interrupt_while_idle_is_dropped(kernel):
    kernel.km.interrupt_kernel()
    time.sleep(0.3)
    assert kernel.km.is_alive()
    reply, outputs = kernel.run("x_after_idle_interrupt = 1\nx_after_idle_interrupt")
    assert reply["content"]["status"] == "ok"


@pytest.mark.parametrize("code, ename", [
    ("1/0", "ZeroDivisionError"),
    ("{}['missing']", "KeyError"),
    ("undefined_name_xyz", "NameError"),
    ("class MyError(Exception):\n    pass\nraise MyError('custom')", "MyError"),
    ("def f(:\n  pass", "SyntaxError"),
])
def test_error_reports_the_exception_class_name(kernel, code, ename):
    reply, outputs = kernel.run(code)
    assert reply["content"]["status"] == "error"
    assert reply["content"]["ename"] == ename
    errors = [m for m in outputs if m["msg_type"] == "error"]
    assert len(errors) == 1 and errors[0]["content"]["ename"] == ename


def test_sot_cell_that_raises_reports_the_users_line(kernel):
    code = "%%sot\ndef inner(v):\n    return 10 / v\ninner(0)"
    reply, outputs = kernel.run(code)
    assert reply["content"]["status"] == "error"
    assert reply["content"]["ename"] == "ZeroDivisionError"
    plain = KernelSession.traceback(reply)
    # the frames are the user's: the cell's call line and the function's line, with the cell's line numbers
    assert "inner(0)" in plain and "return 10 / v" in plain
    assert "line 4" in plain and "line 3" in plain
    assert "sot_magics" not in plain and "run_cell" not in plain


def test_sot_cell_with_a_syntax_error_shows_it_at_the_users_line(kernel):
    reply, outputs = kernel.run("%%sot\nx = 1\ndef broken(:\n    pass\n")
    assert reply["content"]["status"] == "error" and reply["content"]["ename"] == "SyntaxError"
    plain = KernelSession.traceback(reply)
    assert "line 3" in plain and "def broken(:" in plain
    assert "sot_magics" not in plain and "run_cell" not in plain
    # no report after a cell that failed before anything was translated
    assert not [m for m in outputs if m["msg_type"] == "display_data"]


def test_sot_cell_keeps_output_and_value(kernel):
    reply, outputs = kernel.run("%%sot\nprint('from the cell')\n6 * 7")
    assert reply["content"]["status"] == "ok"
    assert KernelSession.stdout(outputs) == "from the cell\n"
    results = [m for m in outputs if m["msg_type"] == "execute_result"]
    assert [r["content"]["data"]["text/plain"] for r in results] == ["42"]


def test_language_version_is_the_running_python(kernel):
    kernel.kc.kernel_info()
    reply = kernel.kc.get_shell_msg(timeout=TIMEOUT)
    content = reply["content"]
    reply, outputs = kernel.run("import sys; print('%d.%d.%d' % sys.version_info[:3])")
    assert content["language_info"]["version"] == KernelSession.stdout(outputs).strip()
    assert content["implementation"] == "xeus-sot"


def test_kernel_runs_in_the_project_environment(kernel):
    """The kernel embeds Debian's 3.11 with the environment's python as its program: sys.executable is that
    python (not a pyenv shim), sys.prefix the environment, and its NumPy is the environment's 2.x."""
    env = Path(__file__).resolve().parents[2] / ".venv" / "kernel"
    reply, outputs = kernel.run("import sys, numpy; print(sys.executable, sys.prefix, sys.base_prefix, "
                                "numpy.__version__, numpy.__file__)")
    executable, prefix, base_prefix, numpy_version, numpy_file = KernelSession.stdout(outputs).split()
    assert executable == str(env / "bin" / "python3")
    assert prefix == str(env) and base_prefix == "/usr"
    assert numpy_version.startswith("2.") and numpy_file.startswith(str(env))


def test_sot_and_magics_are_loaded_at_start(kernel):
    reply, outputs = kernel.run("import sys; print('sot' in sys.modules, 'sot' in get_ipython().magics_manager.magics['cell'])")
    assert KernelSession.stdout(outputs).strip() == "True True"


def test_input_round_trip(kernel):
    kernel.drain_iopub()
    msg_id = kernel.kc.execute("answer = input('name? ')\nprint('got', answer)", allow_stdin=True)
    request = kernel.kc.get_stdin_msg(timeout=TIMEOUT)
    assert request["msg_type"] == "input_request"
    assert request["content"]["prompt"] == "name? "
    kernel.kc.input("Ada")
    reply, outputs = kernel.collect(msg_id)
    assert reply["content"]["status"] == "ok"
    assert KernelSession.stdout(outputs) == "got Ada\n"


def _tiny_png():
    raw = b"\x00\xff\x00\x00"  # one red pixel, filter byte first
    def chunk(tag, data):
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def test_rich_display_png_html_svg(kernel):
    png = _tiny_png()
    code = (
        "import base64\nfrom IPython.display import display, Image, HTML, SVG\n"
        f"display(Image(data=base64.b64decode({base64.b64encode(png).decode()!r})))\n"
        "display(HTML('<i>hi</i>'))\n"
        "display(SVG('<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"2\" height=\"2\"/>'))\n"
    )
    reply, outputs = kernel.run(code)
    assert reply["content"]["status"] == "ok"
    data = [m["content"]["data"] for m in outputs if m["msg_type"] == "display_data"]
    assert base64.b64decode(data[0]["image/png"]) == png
    assert data[1]["text/html"] == "<i>hi</i>"
    assert "<svg" in data[2]["image/svg+xml"]


def test_stdout_streams_while_the_cell_runs(kernel):
    kernel.drain_iopub()
    msg_id = kernel.kc.execute("import time\nprint('first', flush=True)\ntime.sleep(1.0)\nprint('second')")
    first_at = None
    deadline = time.monotonic() + TIMEOUT
    while first_at is None and time.monotonic() < deadline:
        msg = kernel.kc.get_iopub_msg(timeout=TIMEOUT)
        if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "stream":
            assert msg["content"]["text"].startswith("first")
            first_at = time.monotonic()
    reply, outputs = kernel.collect(msg_id)
    done_at = time.monotonic()
    assert done_at - first_at > 0.5, "stdout was buffered until the cell ended"


def test_debugger_info_request(kernel):
    msg = kernel.kc.session.msg("debug_request", {"type": "request", "seq": 1, "command": "debugInfo",
                                                   "arguments": {}})
    kernel.kc.control_channel.send(msg)
    reply = kernel.kc.control_channel.get_msg(timeout=TIMEOUT)
    assert reply["msg_type"] == "debug_reply"
    content = reply["content"]
    assert content["success"] is True and content["command"] == "debugInfo"
    body = content["body"]
    for key in ("isStarted", "hashMethod", "hashSeed", "tmpFilePrefix", "tmpFileSuffix", "breakpoints"):
        assert key in body


def test_kernel_info_advertises_the_debugger(kernel):
    kernel.kc.kernel_info()
    reply = kernel.kc.get_shell_msg(timeout=TIMEOUT)
    assert reply["content"]["debugger"] is True


def test_restart_gives_a_fresh_namespace():
    session = KernelSession()
    try:
        reply, _ = session.run("kept_before_restart = 5")
        assert reply["content"]["status"] == "ok"
        session.km.restart_kernel(now=False)
        session.kc.wait_for_ready(timeout=60)
        reply, outputs = session.run("print('kept_before_restart' in globals())")
        assert reply["content"]["status"] == "ok"
        assert KernelSession.stdout(outputs).strip() == "False"
        reply, outputs = session.run("import sot; print(sot.__version__)")
        assert KernelSession.stdout(outputs).strip() != ""
    finally:
        session.close()


def test_shutdown_ends_the_process():
    session = KernelSession()
    process = session.km.provisioner.process if hasattr(session.km, "provisioner") else session.km.kernel
    session.kc.shutdown()
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.1)
    code = process.poll()
    session.kc.stop_channels()
    assert code == 0, f"kernel exited with {code}"
