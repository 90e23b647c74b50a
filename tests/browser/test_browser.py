"""A real browser: Jupyter Notebook (Debian's) serves notebooks/demo.ipynb on 127.0.0.1 with the xsot kernel;
headless Chromium (Debian's), driven by playwright-core (npm), runs every cell from the Cell menu and checks that
the %%sot report renders: the break table with the cell lines highlighted, the bytecode side by side, the graph
as SVG. Screenshots go to build/screenshots/.

Run by ``make test-browser`` (part of ``make test``), which installs playwright-core into build/browser first.
"""

import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("SOT_BUILD_DIR", ROOT / "build"))
MODULES = BUILD / "browser" / "node_modules"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    for need, what in ((MODULES / "playwright-core", "playwright-core (make test-browser installs it)"),
                       (Path(CHROMIUM), "chromium (make deps installs it)")):
        if not need.exists():
            pytest.fail(f"{what} is missing: {need}")
    work = tmp_path_factory.mktemp("notebooks")
    shutil.copy(ROOT / "notebooks" / "demo.ipynb", work / "demo.ipynb")
    port, token = free_port(), secrets.token_hex(16)
    log = open(work / "server.log", "wb")  # noqa: SIM115 - closed with the server
    proc = subprocess.Popen(
        [sys.executable, "-m", "notebook", "--no-browser", "--allow-root", "--ip=127.0.0.1", f"--port={port}",
         "--port-retries=0", f"--NotebookApp.token={token}", f"--NotebookApp.notebook_dir={work}"],
        stdout=log, stderr=subprocess.STDOUT, cwd=work)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{base}/api/kernelspecs?token={token}", timeout=2) as r:
                    specs = json.load(r)
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail("Jupyter Notebook did not start:\n" + (work / "server.log").read_text())
                time.sleep(0.3)
        assert "xsot" in specs["kernelspecs"], specs["kernelspecs"].keys()
        yield base, token, work
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def test_demo_renders_in_chromium(server):
    base, token, work = server
    shots = BUILD / "screenshots"
    shutil.rmtree(shots, ignore_errors=True)
    env = dict(os.environ, BROWSER_NODE_MODULES=str(MODULES), CHROMIUM=CHROMIUM)
    done = subprocess.run(["node", str(ROOT / "tests" / "browser" / "run_demo.mjs"),
                           f"{base}/notebooks/demo.ipynb?token={token}", str(shots)],
                          capture_output=True, text=True, timeout=400, env=env, check=False)
    assert done.returncode == 0, done.stderr + done.stdout + (work / "server.log").read_text()[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])

    assert got["kernel"].strip() == "Python 3 (xeus-sot)"
    assert got["executed"] == got["code_cells"] > 10, got
    # The one error is the cell tagged raises-exception, shown with the user's exception.
    assert len(got["errors"]) == 1 and "ValueError: cannot normalise a zero vector" in got["errors"][0], got
    assert got["reports"] >= 5, got
    # describe(): a data-dependent if and a print, two breaks, both lines highlighted in their source snippet.
    assert got["break_tables"] >= 1 and got["break_rows"] >= 3, got
    hits = [re.sub(r"^\d+\s+", "", line) for line in got["highlighted_lines"]]
    assert "print('total is', total)" in hits and "if total > 0:" in hits, hits
    # The --graph drawing of softmax: an SVG naming its ops with dtypes and shapes.
    assert got["graph_svgs"] >= 1, got
    labels = " ".join(got["graph_svg_texts"])
    assert "exp" in labels and "float32[3, 4]" in labels, labels
    # The bytecode side by side: folded at first, opened by a click, new instructions highlighted.
    assert got["bytecode_tables"] >= 3 and got["bytecode_visible"] >= 1 and got["new_rows_visible"] >= 3, got
    assert not got["console_errors"], got["console_errors"]
    for name in ("demo-opened", "demo-breaks", "demo-graph", "demo-bytecode", "demo-full"):
        shot = shots / f"{name}.png"
        assert shot.exists() and shot.stat().st_size > 5000, shot
