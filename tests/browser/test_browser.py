"""A real browser runs the demo notebook in JupyterLab 4 and in Notebook 7.

A JupyterLab server (``python -m jupyterlab``, as ``make demo SERVE=1`` starts it; it also serves Notebook 7's
/tree) and a Notebook 7 server (``python -m notebook``) run on 127.0.0.1 with the xsot kernel, each with a temporary
root holding a fresh copy of notebooks/demo.ipynb and its own user settings and workspaces, so that nothing carries
over between runs or between the two front ends.
Headless Chromium (Debian's), driven by Python playwright, does what a user does in each UI: opens the notebook,
makes sure the kernel is "Python 3 (xeus-sot)" (choosing it in the Select Kernel dialog when one asks: the
Notebook 7 copy has no kernel in its metadata, so there it does), runs every cell from Run > Run All Cells and
waits until every code cell has its execution count and the kernel is idle. Then it checks what rendered: the one
error is the tagged cell's ValueError, the %%sot reports show their break table with the cell's lines
highlighted, the softmax graph as SVG, a bytecode fold closed at first and opened by a click; and no uncaught
page error. JupyterLab then goes to "JupyterLab Dark" from Settings > Theme (and back) and the report must stay
legible: its text contrast is measured in both themes.

JupyterLab's notebook windowing is left at its default ("contentVisibility": off-screen cells are not laid out),
so elements are scrolled into view before anything is measured on screen. Screenshots go to build/screenshots/
(cleared first). Run by ``make test-browser`` (part of ``make test``).
"""

import contextlib
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.sync_api import expect, sync_playwright

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("SOT_BUILD_DIR", ROOT / "build"))
SHOTS = BUILD / "screenshots"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
DEMO = ROOT / "notebooks" / "demo.ipynb"
KERNEL = "Python 3 (xeus-sot)"
CODE_CELLS = sum(cell["cell_type"] == "code" for cell in json.loads(DEMO.read_text())["cells"])
RUN_TIMEOUT_MS = 240_000
# Tall enough for the softmax graph to fit between the notebook's toolbar and the status bar.
VIEWPORT = {"width": 1280, "height": 1200}



# ---- the server ----

@dataclass
class Server:
    base: str
    token: str
    root: Path
    log: Path

    def url(self, path):
        return f"{self.base}/{path}?token={self.token}"

    def copy_demo(self, name, kernel=True):
        """A fresh copy of the demo notebook in the server's root; without ``kernel``, no kernelspec in its
        metadata (the UI then asks which kernel to start)."""
        nb = json.loads(DEMO.read_text())
        if not kernel:
            nb["metadata"].pop("kernelspec")
        (self.root / name).write_text(json.dumps(nb, indent=1))
        return name


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get_json(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.load(r)


def http_status(url):
    try:
        with urllib.request.urlopen(url, timeout=20) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def wait_for_server(proc, server):
    deadline = time.monotonic() + 90
    while True:
        try:
            return get_json(server.url("api/kernelspecs"))
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail("the Jupyter server did not start:\n" + server.log.read_text())
            time.sleep(0.3)


def isolated_settings(home):
    """Empty user settings but for one answer: "no" to JupyterLab's toast asking whether to fetch Jupyter news
    (what a user clicks the first time; the toast would otherwise cover part of the screenshots)."""
    settings = home / "user-settings"
    news = settings / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    news.parent.mkdir(parents=True)
    news.write_text(json.dumps({"fetchNews": "false", "checkForUpdates": False}))
    return settings


@contextlib.contextmanager
def jupyter_server(app, home):
    """``python -m <app>`` (jupyterlab or notebook) on 127.0.0.1 with a root and user settings and workspaces of
    its own under ``home``, so nothing carries over between runs or between the two front ends."""
    root = home / "notebooks"
    root.mkdir()
    env = dict(os.environ, JUPYTERLAB_SETTINGS_DIR=str(isolated_settings(home)),
               JUPYTERLAB_WORKSPACES_DIR=str(home / "workspaces"))
    port = free_port()
    srv = Server(f"http://127.0.0.1:{port}", secrets.token_hex(16), root, home / "server.log")
    with open(srv.log, "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", app, "--no-browser", "--allow-root", "--ip=127.0.0.1", f"--port={port}",
             "--port-retries=0", f"--IdentityProvider.token={srv.token}", f"--ServerApp.root_dir={root}"],
            stdout=log, stderr=subprocess.STDOUT, cwd=home, env=env)
    try:
        specs = wait_for_server(proc, srv)["kernelspecs"]
        assert specs.get("xsot", {}).get("spec", {}).get("display_name") == KERNEL, specs.keys()
        yield srv
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """JupyterLab's server (``make demo SERVE=1``'s)."""
    with jupyter_server("jupyterlab", tmp_path_factory.mktemp("jupyterlab")) as srv:
        yield srv


@pytest.fixture(scope="module")
def notebook7_server(tmp_path_factory):
    """Notebook 7's own server (``jupyter notebook``)."""
    with jupyter_server("notebook", tmp_path_factory.mktemp("notebook7")) as srv:
        yield srv


# ---- the browser ----

@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.fail(f"chromium is missing: {CHROMIUM} (make deps installs it)")
    shutil.rmtree(SHOTS, ignore_errors=True)
    SHOTS.mkdir(parents=True)
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                     args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        yield chromium
        chromium.close()


def open_page(browser, url):
    """A page in a fresh context (no cookies or local storage from another test); uncaught errors collected."""
    page = browser.new_page(viewport=VIEWPORT)
    errors = []
    page.on("pageerror", lambda error: errors.append(error))
    page.goto(url)
    return page, errors


def menu(page, *labels):
    """Clicks the menu bar's ``labels[0]``, then each item in turn (a submenu opens on its click)."""
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(rf"^{re.escape(labels[0])}$")).click()
    for label in labels[1:]:
        page.locator(".lm-Menu .lm-Menu-itemLabel", has_text=re.compile(rf"^{re.escape(label)}$")).click()


def use_xsot_kernel(page):
    """Waits for the notebook's kernel, choosing KERNEL in the Select Kernel dialog if one asks; returns whether
    it asked. The toolbar must then name the kernel, and the kernel be idle."""
    name = page.locator(".jp-NotebookPanel-toolbar .jp-Toolbar-kernelName")
    dialog = page.locator(".jp-Dialog", has_text="Select Kernel")
    expect(name.filter(has_text=KERNEL).or_(dialog)).to_be_visible(timeout=90_000)
    asked = dialog.is_visible()
    if asked:
        dialog.locator("select").select_option(label=KERNEL)
        dialog.locator("button.jp-mod-accept").click()
    expect(name).to_have_text(KERNEL, timeout=60_000)
    expect(page.locator(".jp-Notebook-ExecutionIndicator")).to_have_attribute("data-status", "idle", timeout=60_000)
    return asked


def run_all_cells(page):
    """Run > Run All Cells, then waits until every code cell shows an execution count and the kernel is idle."""
    menu(page, "Run", "Run All Cells")
    page.wait_for_function(
        """n => {
             const prompts = [...document.querySelectorAll('.jp-NotebookPanel .jp-CodeCell .jp-InputArea-prompt')];
             const status = document.querySelector('.jp-Notebook-ExecutionIndicator')?.dataset.status;
             return prompts.length === n && prompts.every(p => /\\[\\d+\\]/.test(p.textContent)) && status === 'idle';
           }""", arg=CODE_CELLS, timeout=RUN_TIMEOUT_MS, polling=250)


# ---- what rendered ----

MEASURE = """() => {
  const all = sel => [...document.querySelectorAll('.jp-NotebookPanel ' + sel)];
  const texts = sel => all(sel).map(x => x.textContent);
  return {
    code_cells: all('.jp-CodeCell').length,
    executed: all('.jp-CodeCell .jp-InputArea-prompt').filter(p => /\\[\\d+\\]/.test(p.textContent)).length,
    stderr_outputs: all('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')
      .map(x => x.textContent.split('\\n').filter(l => /Error/.test(l)).pop() || x.textContent.slice(0, 200)),
    reports: all('.sot-report').length,
    break_rows: all('table.sot-breaks tr').length,
    highlighted_lines: texts('.sot-line-hit').map(t => t.trim()),
    bytecode_tables: all('table.sot-bytecode').length,
  };
}"""


def check_outputs(page):
    """What the run left in the notebook (DOM contents, on screen or not)."""
    got = page.evaluate(MEASURE)
    assert got["executed"] == got["code_cells"] == CODE_CELLS, got
    # The one error is the cell tagged raises-exception, shown with the user's exception. (JupyterLab renders
    # errors and stderr streams alike, so this also says that no cell wrote to stderr.)
    errors = got["stderr_outputs"]
    assert len(errors) == 1 and "ValueError: cannot normalise a zero vector" in errors[0], got
    assert got["reports"] >= 5, got
    # describe(): a print, a break with its line highlighted in its source snippet (its data-dependent if is a
    # cond op of the graph after it, issue 20).
    assert got["break_rows"] >= 2, got
    hits = [re.sub(r"^\d+\s+", "", line) for line in got["highlighted_lines"]]
    assert "print('total is', total)" in hits and "if total > 0:" not in hits, hits
    assert got["bytecode_tables"] >= 3, got


def breaks_report(page):
    return page.locator(".sot-report", has=page.locator("table.sot-breaks")).first


def softmax_graph(page):
    return page.locator("details.sot-graph", has_text="graph of softmax").first


def bytecode_fold(page):
    return page.locator("details:not(.sot-function)", has=page.locator("table.sot-bytecode"),
                        has_text="bytecode: scaled_norm").first


def check_on_screen(page):
    """The break table and the softmax graph, scrolled into view, are visible; the bytecode fold is closed until
    a click on its summary opens it, showing the new instructions highlighted."""
    table = breaks_report(page).locator("table.sot-breaks")
    table.scroll_into_view_if_needed()
    expect(table).to_be_visible()
    assert table.locator("tr").count() >= 2  # (a header and the print break)
    svg = softmax_graph(page).locator("svg")
    svg.scroll_into_view_if_needed()
    expect(svg).to_be_visible()
    # The --graph drawing of softmax: an SVG naming its ops with dtypes and shapes.
    labels = " ".join(svg.locator("text").all_text_contents())
    assert "exp" in labels and "float32[3, 4]" in labels, labels
    fold = bytecode_fold(page)
    fold.scroll_into_view_if_needed()
    assert fold.evaluate("d => d.open") is False
    expect(fold.locator("table.sot-bytecode")).to_be_hidden()
    summary = fold.locator("summary")
    summary.click()
    expect(fold.locator("table.sot-bytecode")).to_be_visible()
    new_rows = fold.locator("tr.sot-new")
    announced = int(re.search(r"(\d+) new instructions", summary.text_content()).group(1))
    assert new_rows.count() == announced >= 1, summary.text_content()
    for row in new_rows.all():
        expect(row).to_be_visible()


def shoot(locator, name):
    locator.page.mouse.move(0, 0)  # no row hover highlight in the picture
    locator.scroll_into_view_if_needed()
    locator.screenshot(path=SHOTS / f"{name}.png", animations="disabled")
    assert (SHOTS / f"{name}.png").stat().st_size > 5000, name


def shoot_report(page, prefix):
    shoot(breaks_report(page), f"{prefix}-breaks")
    shoot(softmax_graph(page), f"{prefix}-graph")
    shoot(bytecode_fold(page), f"{prefix}-bytecode")


def shoot_whole_notebook(page, name):
    """The notebook scrolls inside its own panel: the window grows by what the panel hides, the panel goes back
    to its top, for one picture of it all."""
    panel = page.locator(".jp-NotebookPanel .jp-WindowedPanel-outer")
    hidden = panel.evaluate("x => x.querySelector('.jp-WindowedPanel-viewport').scrollHeight - x.clientHeight")
    page.set_viewport_size({"width": VIEWPORT["width"], "height": min(VIEWPORT["height"] + hidden, 16000)})
    panel.evaluate("x => x.scrollTo(0, 0)")
    page.wait_for_timeout(500)
    page.screenshot(path=SHOTS / f"{name}.png")
    assert (SHOTS / f"{name}.png").stat().st_size > 5000, name
    page.set_viewport_size(VIEWPORT)


def check_no_page_errors(errors):
    """No uncaught error on the page."""
    assert not errors, "\n\n".join(e.stack or e.message for e in errors)


# ---- legibility: text contrast over the backgrounds it sits on ----

def rgba(css):
    parts = [float(x) for x in re.findall(r"[\d.]+", css)]
    return (*parts[:3], parts[3] if len(parts) > 3 else 1.0)


def over(top, bottom):
    r, g, b, a = top
    return tuple(a * c + (1 - a) * d for c, d in zip((r, g, b), bottom[:3])) + (1.0,)


def luminance(color):
    def channel(c):
        c /= 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = (channel(c) for c in color[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(locator):
    """The WCAG contrast ratio of an element's text over the stack of backgrounds under it."""
    color, backgrounds = locator.evaluate("""el => {
        const bgs = [];
        for (let e = el; e; e = e.parentElement) bgs.push(getComputedStyle(e).backgroundColor);
        return [getComputedStyle(el).color, bgs];
      }""")
    ground = (255.0, 255.0, 255.0, 1.0)
    for bg in reversed(backgrounds):
        ground = over(rgba(bg), ground)
    light, dark = sorted((luminance(over(rgba(color), ground)), luminance(ground)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def check_legible(page, theme):
    """WCAG AA (a contrast ratio of 4.5 or more) for the report's kinds of text: plain, highlighted, dimmed."""
    report = breaks_report(page)
    fold = bytecode_fold(page)
    parts = {"summary": report.locator("summary").first, "cell": report.locator("table.sot-breaks td").nth(2),
             "highlighted line": report.locator(".sot-line-hit").first,
             "new instruction": fold.locator("tr.sot-new td").last,
             "removed instruction": fold.locator("tr.sot-gone td").first,
             "source line": fold.locator("tr.sot-src td").first}
    ratios = {what: round(contrast(locator), 2) for what, locator in parts.items()}
    assert min(ratios.values()) >= 4.5, f"{theme}: {ratios}"


def switch_theme(page, theme):
    menu(page, "Settings", "Theme", theme)
    page.wait_for_function("t => document.body.dataset.jpThemeName === t", arg=theme, timeout=30_000)
    page.wait_for_timeout(500)  # the theme's stylesheet applied


# ---- the tests ----

def test_one_server_serves_jupyterlab_and_notebook7(server):
    assert http_status(server.url("lab")) == 200
    assert http_status(server.url("tree")) == 200


@pytest.fixture(scope="module")
def lab(server, browser):
    """JupyterLab 4 with demo.ipynb run from the Run menu."""
    page, errors = open_page(browser, server.url(f"lab/tree/{server.copy_demo('demo.ipynb')}"))
    use_xsot_kernel(page)
    run_all_cells(page)
    yield page, errors
    page.close()


def test_jupyterlab_runs_the_demo(lab):
    page, errors = lab
    check_outputs(page)
    check_on_screen(page)
    shoot_report(page, "lab-light")
    shoot_whole_notebook(page, "lab-full")
    check_no_page_errors(errors)


def test_notebook7_runs_the_demo(notebook7_server, browser):
    name = notebook7_server.copy_demo("demo-notebook7.ipynb", kernel=False)
    page, errors = open_page(browser, notebook7_server.url(f"notebooks/{name}"))
    try:
        assert use_xsot_kernel(page), "the Select Kernel dialog did not ask for a kernel"
        run_all_cells(page)
        check_outputs(page)
        check_on_screen(page)
        shoot_report(page, "notebook7")
        shoot_whole_notebook(page, "notebook7-full")
        check_no_page_errors(errors)
    finally:
        page.close()


def test_jupyterlab_report_in_light_and_dark_themes(lab):
    page, errors = lab
    assert page.evaluate("document.body.dataset.jpThemeLight") == "true"
    check_legible(page, "JupyterLab Light")
    switch_theme(page, "JupyterLab Dark")
    assert page.evaluate("document.body.dataset.jpThemeLight") == "false"
    check_legible(page, "JupyterLab Dark")
    # graphviz draws black on white: the drawing is inverted in dark themes.
    assert "invert" in softmax_graph(page).locator("svg").evaluate("x => getComputedStyle(x).filter")
    shoot_report(page, "lab-dark")
    switch_theme(page, "JupyterLab Light")
    check_no_page_errors(errors)
