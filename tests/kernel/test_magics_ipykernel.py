"""``%load_ext sot_magics`` under ipykernel (the environment's ``python3`` kernel), through nbclient: nothing of the
xsot kernel is needed for ``%%sot`` and its report."""

import nbformat
from nbclient import NotebookClient


def test_sot_magics_in_ipykernel():
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("%load_ext sot_magics\nimport sys\n'xsot_kernel' in sys.modules"),
        nbformat.v4.new_code_cell("%%sot\nimport numpy as np\ndef twice(x):\n    y = x * 2\n"
                                  "    print('total', int(y.sum()))\n    return y + 1\ntwice(np.arange(4))"),
    ]
    NotebookClient(nb, kernel_name="python3", timeout=120).execute()
    first, second = nb.cells
    assert first.outputs[0]["data"]["text/plain"] == "False"
    kinds = [o["output_type"] for o in second.outputs]
    assert kinds == ["stream", "execute_result", "display_data"], second.outputs
    assert second.outputs[0]["text"] == "total 12\n"
    assert second.outputs[1]["data"]["text/plain"] == "array([1, 3, 5, 7])"
    report = second.outputs[2]["data"]
    assert "sot-report" in report["text/html"] and "twice" in report["text/plain"]
