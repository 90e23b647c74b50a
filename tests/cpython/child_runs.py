"""Runs a piece of Python in a fresh interpreter (the one running this) and returns the JSON it prints on its
`RESULT ` line: the CPython-test runners in this folder run each module and mode in its own process."""

import json
import subprocess
import sys


def run_child(source, *args, timeout=1200):
    proc = subprocess.run([sys.executable, "-c", source, *args], capture_output=True, text=True, timeout=timeout)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    raise RuntimeError(f"{' '.join(args)} gave no result; exit {proc.returncode}\n{proc.stderr[-3000:]}")
