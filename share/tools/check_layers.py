#!/usr/bin/env python3
"""The floors of extension/src, held: which folder may include which, includes written one way, and
no source file over the line limit.

Every project include is written "folder/file.hpp", relative to extension/src, and names a file that
exists. A file's floor is the longest entry of FLOORS that its path starts with; it may include only
the floors listed for it (its own included). The rules are those of docs/architecture.md: graph/'s
floors run ir <- rules <- lower <- exec <- backends/*, no backend includes another, runtime/ knows
nothing of code generation, and the translator sees only graph/'s ir, rules and exec.

Usage: check_layers.py [--root extension/src] [--max-lines 800]; exit 1 with one line per breach.
"""
import argparse
import os
import re
import sys

IR, RULES, LOWER, EXEC = "graph/ir", "graph/rules", "graph/lower", "graph/exec"
RUNTIME, RUNTIME_CUDA = "graph/runtime", "graph/runtime/cuda"
GRAPH_BELOW_BACKENDS = ["core", IR, RULES, LOWER, EXEC]

# floor: the floors it may include (its own is always allowed).
FLOORS = {
    "core": [],
    "bytecode": ["core"],
    "capture": ["core", "bytecode"],
    IR: ["core"],
    RULES: ["core", IR],
    LOWER: ["core", IR, RULES],
    EXEC: ["core", IR, RULES, LOWER],
    "graph/backends/cpu": GRAPH_BELOW_BACKENDS + [RUNTIME],
    "graph/backends/cuda": GRAPH_BELOW_BACKENDS + [RUNTIME, RUNTIME_CUDA],
    RUNTIME: ["core"],
    RUNTIME_CUDA: ["core", RUNTIME],
    "translator": ["core", "bytecode", "capture", IR, RULES, EXEC],
    # The Python module binds every part.
    "module": None,
}

# Made by the build (build/extension/generated/), not under extension/src.
GENERATED = {"opcode_table.inc"}

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)


def floor_of(rel):
    best = None
    for floor in FLOORS:
        if (rel == floor or rel.startswith(floor + "/")) and (best is None or len(floor) > len(best)):
            best = floor
    return best


def check(root, max_lines):
    problems = []
    for dirpath, _, names in os.walk(root):
        for name in sorted(names):
            if not name.endswith((".cpp", ".hpp")):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root).replace(os.sep, "/")
            text = open(path, encoding="utf-8").read()
            lines = text.count("\n")
            if max_lines and lines > max_lines:
                problems.append(f"{rel}: {lines} lines (more than {max_lines})")
            floor = floor_of(os.path.dirname(rel))
            if floor is None:
                problems.append(f"{rel}: in no floor of check_layers.py")
                continue
            allowed = FLOORS[floor]
            for inc in INCLUDE.findall(text):
                if inc in GENERATED:
                    continue
                if not os.path.isfile(os.path.join(root, inc)):
                    problems.append(f'{rel}: #include "{inc}" is not a path under {root}')
                    continue
                target = floor_of(os.path.dirname(inc))
                if allowed is None or target == floor or target in allowed:
                    continue
                problems.append(f'{rel}: #include "{inc}": {floor} may not include {target}')
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    here = os.path.dirname(os.path.abspath(__file__))
    parser.add_argument("--root", default=os.path.join(here, "..", "..", "extension", "src"))
    parser.add_argument("--max-lines", type=int, default=800)
    args = parser.parse_args()
    problems = check(os.path.normpath(args.root), args.max_lines)
    for p in problems:
        print(p)
    count = sum(len([n for n in ns if n.endswith((".cpp", ".hpp"))]) for _, _, ns in os.walk(args.root))
    print(f"check_layers: {count} files, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
