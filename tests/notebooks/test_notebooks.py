"""Every notebook in notebooks/ runs top to bottom on the xsot kernel (nbclient), with checks on what it shows."""

import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))


def execute(path):
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, kernel_name="xsot", timeout=300, resources={"metadata": {"path": str(path.parent)}}).execute()
    return nb


def text_of(cell):
    parts = []
    for out in cell.get("outputs", []):
        if out["output_type"] == "stream":
            parts.append(out["text"])
        elif out["output_type"] in ("execute_result", "display_data"):
            parts.append(out["data"].get("text/plain", ""))
        elif out["output_type"] == "error":
            parts.append(out["ename"] + ": " + out["evalue"])
    return "".join(parts)


def test_there_are_notebooks():
    assert any(p.name == "demo.ipynb" for p in NOTEBOOKS)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs_and_only_tagged_cells_raise(path):
    nb = execute(path)
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        assert cell.execution_count is not None, f"cell {index} did not run"
        errors = [o for o in cell.outputs if o["output_type"] == "error"]
        if "raises-exception" in cell.metadata.get("tags", []):
            assert len(errors) == 1, f"cell {index} is tagged raises-exception but did not raise"
        else:
            assert not errors, f"cell {index} raised {errors[0]['ename']}: {errors[0]['evalue']}"


def test_demo_shows_what_it_promises():
    nb = execute(next(p for p in NOTEBOOKS if p.name == "demo.ipynb"))
    code_cells = [c for c in nb.cells if c.cell_type == "code"]
    texts = [text_of(c) for c in code_cells]
    assert "Python 3.11" in texts[0] and "sot 0." in texts[0]
    assert "matches the plain run: True" in texts[2]
    assert "dtype('float32')" in texts[2]
    kinds = {mime for c in code_cells for o in c.outputs if o["output_type"] == "display_data" for mime in o["data"]}
    assert {"text/html", "image/svg+xml"} <= kinds
    raising = next(c for c in code_cells if "raises-exception" in c.metadata.get("tags", []))
    error = next(o for o in raising.outputs if o["output_type"] == "error")
    assert error["ename"] == "ValueError" and "zero vector" in error["evalue"]
    traceback = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(error["traceback"]))
    assert "raise ValueError" in traceback and "line 5" in traceback
    assert "array([0.25, 0.75])" in texts[-1]
