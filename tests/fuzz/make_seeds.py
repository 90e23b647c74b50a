"""Writes the seed corpus of the bytecode fuzz target (tests/fuzz/corpus/) from real code objects: run with the
Python the fuzz target embeds (/usr/bin/python3) after `make build`, with build/python on PYTHONPATH."""

import pathlib
import struct
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "python"))
import bytecode_corpus  # noqa: E402

out = pathlib.Path(__file__).resolve().parent / "corpus"
out.mkdir(exist_ok=True)
for i, (fn, _, _) in enumerate(bytecode_corpus.CALLS):
    code = fn.__code__
    mode0 = bytes([0]) + struct.pack("<HH", len(code.co_code), len(code.co_exceptiontable)) + code.co_code + \
        code.co_exceptiontable + code.co_linetable
    (out / f"code_{i:02d}").write_bytes(mode0)
    records = bytearray([1])
    for k in range(0, min(len(code.co_code), 200), 2):
        records += bytes([code.co_code[k], code.co_code[k + 1], 0, k % 7, k % 5])
    (out / f"instructions_{i:02d}").write_bytes(bytes(records))
