"""docs/numpy_coverage.md is what share/tools/numpy_coverage.py generates from the translator's tables."""

import os
import subprocess
import sys

import pytest

ROOT = os.path.join(os.path.dirname(__file__), "..", "..", "..")


def test_numpy_coverage_doc_is_current():
    pytest.importorskip("sot")
    doc = os.path.join(ROOT, "docs", "numpy_coverage.md")
    tool = os.path.join(ROOT, "share", "tools", "numpy_coverage.py")
    r = subprocess.run([sys.executable, tool, "--check", doc], capture_output=True, text=True,
                       env=dict(os.environ), check=False)
    assert r.returncode == 0, r.stderr
