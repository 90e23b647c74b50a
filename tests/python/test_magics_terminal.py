"""``%load_ext sot_magics`` in a plain terminal IPython (``python -m IPython``, input piped in), nothing of the xsot
kernel loaded: the magics register, a ``%%sot`` cell runs with its output and value unchanged, and its report
(text form, as a terminal shows display data) names the function, its graph and its break. Runs on every Python
the suite runs on."""

import os
import subprocess
import sys

import pytest

pytest.importorskip("IPython")
pytest.importorskip("numpy")

# A cell magic's block ends at the second blank line in simple-prompt mode.
SESSION = """\
%load_ext sot_magics
import sys; print('xsot_kernel' in sys.modules)
%%sot
import numpy as np
def scale(x):
    y = np.exp(x) * 2
    print('sum is', float(y.sum()))
    return y - 1
scale(np.zeros(3, dtype=np.float32))


exit()
"""


def test_sot_magics_in_terminal_ipython(tmp_path):
    env = dict(os.environ, IPYTHONDIR=str(tmp_path / "ipython"), PYTHONDONTWRITEBYTECODE="1", TERM="dumb")
    done = subprocess.run([sys.executable, "-m", "IPython", "--simple-prompt", "--no-banner", "--colors=NoColor",
                           "--HistoryManager.enabled=False"],
                          input=SESSION, capture_output=True, text=True, timeout=120, env=env, check=False)
    out = done.stdout
    assert done.returncode == 0, done.stderr + out
    assert "Traceback" not in out and "Error" not in out, out
    assert "False" in out  # the xsot kernel's package is not needed
    assert "sum is 6.0" in out
    assert "array([1., 1., 1.], dtype=float32)" in out  # the cell's value, as a plain run shows it
    # The report's text form: the translated function, its graphs and the break at print() on line 5 (float() of
    # the sum is made in the graph).
    assert "sot: 1 function(s) translated" in out, out
    assert "break at line 5 (scale): a call of <built-in function print>" in out, out
