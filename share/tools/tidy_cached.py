#!/usr/bin/env python3
"""clang-tidy over source files, skipping those whose last check passed on exactly the same input.

    tidy_cached.py --build BUILD --config CONFIG [--jobs N] FILE...

A file's input is what clang-tidy reads of it: every compile command of the file in BUILD/compile_commands.json
and the contents of every file each command's translation unit read (the dependencies ninja recorded when it built
the object: the source, its headers, the system's), the config file and clang-tidy's version. A pass is recorded
under the hash of that input in $XDG_CACHE_HOME/xeus-sot/tidy (~/.cache/xeus-sot/tidy), shared by every checkout as
ccache's cache is; the checkout's own path is taken out of the input first, so a fresh clone hits what another clone
checked. A file with no valid recorded dependencies (not built, or built before a change) is always checked. Run it
after the build. Exit status: 1 when clang-tidy failed on any file.
"""

import argparse
import hashlib
import json
import os
import shlex
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor


def cache_dir():
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "xeus-sot", "tidy")


def commands_by_file(build):
    with open(os.path.join(build, "compile_commands.json"), encoding="utf-8") as f:
        entries = json.load(f)
    by_file = {}
    for e in entries:
        args = e["arguments"] if "arguments" in e else shlex.split(e["command"])
        by_file.setdefault(os.path.realpath(e["file"]), []).append((e["directory"], args))
    return by_file


def recorded_deps(build):
    """Object file (as ninja names it) -> the files its compile read, from ninja's deps log; only valid records."""
    out = subprocess.run(["ninja", "-C", build, "-t", "deps"], capture_output=True, text=True, check=True).stdout
    deps, current = {}, None
    for line in out.splitlines():
        if line and not line[0].isspace():
            target, _, state = line.partition(": #deps")
            current = deps.setdefault(target, []) if state.rstrip().endswith("(VALID)") else None
        elif line.strip() and current is not None:
            current.append(line.strip())
    return deps


def object_of(args):
    return args[args.index("-o") + 1] if "-o" in args else None


class InputHasher:
    """The hash of everything clang-tidy reads for a file (its files' contents hashed once each)."""

    def __init__(self, build, root, salt):
        self.root, self.salt = root, salt
        self.deps = recorded_deps(build)
        self.contents = {}

    def content(self, path):
        if path not in self.contents:
            with open(path, "rb") as f:
                self.contents[path] = hashlib.sha256(f.read()).hexdigest()
        return self.contents[path]

    def key(self, path, commands):
        """The key of path's check, or None where a command's dependencies are not recorded (then always checked)."""
        h = hashlib.sha256(self.salt)
        h.update(path.replace(self.root, "<root>").encode())
        for directory, args in commands:
            files = self.deps.get(object_of(args) or "")
            if not files:
                return None
            h.update(" ".join(args).replace(self.root, "<root>").encode())
            for dep in files:
                full = os.path.realpath(os.path.join(directory, dep))
                try:
                    h.update(full.replace(self.root, "<root>").encode() + self.content(full).encode())
                except OSError:
                    return None
        return h.hexdigest()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--config", required=True)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("files", nargs="+")
    opts = ap.parse_args()

    root = os.path.realpath(os.getcwd())
    by_file = commands_by_file(opts.build)
    version = subprocess.run(["clang-tidy", "--version"], capture_output=True, check=True).stdout
    with open(opts.config, "rb") as f:
        salt = version + f.read()
    cache = cache_dir()
    os.makedirs(cache, exist_ok=True)
    hasher = InputHasher(opts.build, root, salt)
    keys = {}
    for file in opts.files:
        path = os.path.realpath(file)
        keys[file] = hasher.key(path, by_file[path]) if path in by_file else None

    def check(file):
        key = keys[file]
        if key is not None and os.path.exists(os.path.join(cache, key)):
            return file, True, "", True
        run = subprocess.run(["clang-tidy", "-p", opts.build, "--quiet", f"--config-file={opts.config}", file],
                             capture_output=True, text=True, check=False)
        if run.returncode == 0 and key is not None:
            with open(os.path.join(cache, key), "w", encoding="utf-8") as f:
                f.write(file + "\n")
        return file, run.returncode == 0, run.stdout + run.stderr, False

    failed, cached = 0, 0
    with ThreadPoolExecutor(max_workers=opts.jobs) as pool:
        for file, ok, output, hit in pool.map(check, opts.files):
            cached += hit
            if not ok:
                failed += 1
                sys.stdout.write(f"clang-tidy: {file}\n{output}")
    print(f"clang-tidy: {len(opts.files)} files, {cached} unchanged since a passing check (cache {cache}), "
          f"{len(opts.files) - cached} checked, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
