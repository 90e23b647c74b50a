"""The floors of extension/src held by share/tools/check_layers.py (run by `make check-layers`): the checker itself
catches what it is there for, and the sot package never imports the magics."""

import ast
import os
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
CHECKER = os.path.join(ROOT, "share", "tools", "check_layers.py")


def run_checker(root, max_lines=800):
    return subprocess.run([sys.executable, CHECKER, "--root", str(root), "--max-lines", str(max_lines)],
                          capture_output=True, text=True, check=False)


def write(root, rel, text):
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_the_tree_keeps_its_floors():
    r = run_checker(os.path.join(ROOT, "extension", "src"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 problems" in r.stdout


def test_an_include_against_the_floors_is_caught(tmp_path):
    write(tmp_path, "graph/ir/graph.hpp", "#pragma once\n")
    write(tmp_path, "graph/exec/loop_op.hpp", '#include "graph/ir/graph.hpp"\n')
    write(tmp_path, "graph/backends/cuda/cuda_check.hpp", '#include "graph/exec/loop_op.hpp"\n')
    assert run_checker(tmp_path).returncode == 0
    # The IR printing a loop op, a backend reaching into another, the runtime knowing code generation.
    write(tmp_path, "graph/ir/graph.cpp", '#include "graph/exec/loop_op.hpp"\n')
    write(tmp_path, "graph/backends/cpu/cpu_backend.cpp", '#include "graph/backends/cuda/cuda_check.hpp"\n')
    write(tmp_path, "graph/runtime/cuda/nvrtc.cpp", '#include "graph/backends/cuda/cuda_check.hpp"\n')
    r = run_checker(tmp_path)
    assert r.returncode == 1
    assert "graph/ir/graph.cpp" in r.stdout and "graph/ir may not include graph/exec" in r.stdout
    assert "graph/backends/cpu may not include graph/backends/cuda" in r.stdout
    assert "graph/runtime/cuda may not include graph/backends/cuda" in r.stdout
    assert "3 problems" in r.stdout


def test_includes_are_written_one_way_and_files_stay_short(tmp_path):
    write(tmp_path, "graph/ir/graph.hpp", "#pragma once\n")
    write(tmp_path, "graph/ir/shape.hpp", '#include "graph.hpp"\n')  # relative to its folder: not the one way
    write(tmp_path, "graph/ir/dtype.cpp", "int x;\n" * 12)
    write(tmp_path, "elsewhere/odd.cpp", "\n")
    r = run_checker(tmp_path, max_lines=10)
    assert r.returncode == 1
    assert 'graph/ir/shape.hpp: #include "graph.hpp" is not a path' in r.stdout
    assert "graph/ir/dtype.cpp: 12 lines (more than 10)" in r.stdout
    assert "elsewhere/odd.cpp: in no floor" in r.stdout


def test_the_sot_package_never_imports_the_magics():
    package = os.path.join(ROOT, "extension", "python", "sot")
    for name in sorted(os.listdir(package)):
        if not name.endswith(".py"):
            continue
        tree = ast.parse(open(os.path.join(package, name), encoding="utf-8").read())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                modules = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                modules = [node.module or ""]
            else:
                continue
            assert not any(m.split(".")[0] == "sot_magics" for m in modules), f"sot/{name} imports {modules}"
