"""Round trip of every code object of the standard library through sot's bytecode layer.

For every module of the running interpreter's standard library that compiles (Lib/test included), every code
object (nested ones too) is decoded and assembled again; co_code, co_exceptiontable and co_linetable must be
byte-identical and co_stacksize equal. Prints the count checked and identical, and each difference with its reason.
Exit status 0 when all are identical.

    python tests/cpython/roundtrip_stdlib.py [--limit N] [--quiet] [ROOT]
"""

import argparse
import os
import sys
import sysconfig
import time
import types
import warnings

import sot.bytecode as bc


def code_objects(code):
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from code_objects(const)


def first_difference(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b))


def compare(code):
    try:
        new = bc.roundtrip(code)
    except Exception as exc:  # noqa: BLE001 - every failure is reported, with its reason
        return f"{type(exc).__name__}: {exc}"
    reasons = []
    if new.co_code != code.co_code:
        reasons.append(f"co_code differs at byte {first_difference(new.co_code, code.co_code)}")
    if new.co_exceptiontable != code.co_exceptiontable:
        reasons.append("co_exceptiontable differs")
    if new.co_linetable != code.co_linetable:
        reasons.append(f"co_linetable differs at byte {first_difference(new.co_linetable, code.co_linetable)}")
    if new.co_stacksize != code.co_stacksize:
        reasons.append(f"co_stacksize {new.co_stacksize} != {code.co_stacksize}")
    return "; ".join(reasons) or None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", nargs="?", default=sysconfig.get_paths()["stdlib"])
    parser.add_argument("--limit", type=int, default=0, help="stop after this many files")
    parser.add_argument("--quiet", action="store_true", help="print only the summary")
    args = parser.parse_args()

    files = []
    for dirpath, dirnames, filenames in os.walk(args.root):
        dirnames[:] = sorted(d for d in dirnames if d not in ("site-packages", "dist-packages", "__pycache__"))
        files.extend(os.path.join(dirpath, f) for f in sorted(filenames) if f.endswith(".py"))
    if args.limit:
        files = files[: args.limit]

    started = time.perf_counter()
    n_files = n_compiled = n_codes = n_same = 0
    differences = []
    for path in files:
        n_files += 1
        try:
            with open(path, "rb") as f:
                source = f.read()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                module_code = compile(source, path, "exec", dont_inherit=True)
        except (SyntaxError, ValueError, UnicodeDecodeError, RecursionError, MemoryError):
            continue  # does not compile (e.g. Lib/test's deliberately broken files)
        n_compiled += 1
        for code in code_objects(module_code):
            n_codes += 1
            reason = compare(code)
            if reason is None:
                n_same += 1
            else:
                differences.append((path, code.co_firstlineno, code.co_qualname, reason))
    elapsed = time.perf_counter() - started

    if not args.quiet:
        for path, line, name, reason in differences:
            print(f"DIFF {path}:{line} {name}: {reason}")
    percent = 100.0 * n_same / n_codes if n_codes else 0.0
    print(f"Python {sys.version.split()[0]}: {n_files} files, {n_compiled} compiled, {n_codes} code objects checked, "
          f"{n_same} identical ({percent:.3f}%), {len(differences)} different, {elapsed:.1f} s")
    return 0 if not differences else 1


if __name__ == "__main__":
    sys.exit(main())
