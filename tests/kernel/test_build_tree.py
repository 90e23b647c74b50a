"""`source build/env.sh` makes the build tree usable from a shell: sot imports and Jupyter finds xsot."""

import os
import subprocess
from pathlib import Path

BUILD = Path(__file__).resolve().parents[2] / "build"


def in_env_sh(command):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "JUPYTER_PATH")}
    return subprocess.run(["bash", "-c", f"source {BUILD}/env.sh && {command}"], env=env, capture_output=True,
                          text=True, timeout=60, check=True).stdout


# (`python3` after env.sh: the kernel environment's, which has Jupyter; Debian's own python3 has none.)
def test_sot_imports_from_the_build_tree():
    out = in_env_sh("cd / && python3 -c 'import sot; print(sot.__file__)'")
    assert out.strip() == str(BUILD / "python" / "sot" / "__init__.py")


def test_jupyter_lists_the_xsot_kernelspec_of_the_build_tree():
    out = in_env_sh("python3 -m jupyter_client.kernelspecapp list")
    lines = [line.split() for line in out.splitlines() if line.strip().startswith("xsot")]
    assert lines, out
    assert Path(lines[0][1]).resolve() in (BUILD / "share" / "jupyter" / "kernels" / "xsot",
                                           Path(os.environ.get("JUPYTER_DATA_DIR", "/nonexistent")) / "kernels" / "xsot")


def test_kernel_executable_reports_its_version():
    out = subprocess.run([str(BUILD / "kernel" / "xsot"), "--version"], capture_output=True, text=True,
                         timeout=30, check=True).stdout
    assert out.startswith("xsot 0.")
