"""Disassembly: the text matches dis.dis (3.11 and 3.12 format), and the structured rows match dis's
instructions on every Python."""

import dis
import io
import sys
import types

import pytest

import bytecode_corpus
import sot.bytecode as bc


def corpus_codes():
    module_code = compile(open(bytecode_corpus.__file__).read(), bytecode_corpus.__file__, "exec")
    stack, out = [module_code], []
    while stack:
        code = stack.pop()
        out.append(code)
        stack.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
    return out


def has_extended_arg(code):
    return any(ins.opname == "EXTENDED_ARG" for ins in dis.get_instructions(code))


@pytest.mark.skipif(sys.version_info >= (3, 13), reason="3.13's dis prints labels; we print the 3.11/3.12 form")
@pytest.mark.parametrize("code", [c for c in corpus_codes() if not has_extended_arg(c)], ids=lambda c: c.co_qualname)
def test_text_matches_dis(code):
    expected = io.StringIO()
    dis.dis(code, file=expected, depth=0)
    assert bc.dis(code, recursive=False) == expected.getvalue()


@pytest.mark.parametrize("code", corpus_codes(), ids=lambda c: c.co_qualname)
def test_rows_match_dis_instructions(code):
    expected = [ins for ins in dis.get_instructions(code) if ins.opname not in ("EXTENDED_ARG", "CACHE")]
    rows = bc.structured(code)
    assert [r["opname"] for r in rows] == [ins.opname for ins in expected]
    assert [r["arg"] for r in rows] == [ins.arg for ins in expected]
    for row, ins in zip(rows, expected):
        assert row["is_new"] is False
        assert row["original_offset"] is not None
        line = ins.positions.lineno if ins.positions else None
        assert row["line"] == line


def test_rows_mark_new_instructions():
    b = bc.decode(bytecode_corpus.loops.__code__)
    b.insert(1, [bc.Instruction("NOP"), bc.Instruction("NOP")])
    rows = b.structured()
    assert [r["is_new"] for r in rows[:4]] == [False, True, True, False]
    assert rows[1]["original_offset"] is None and rows[3]["original_offset"] == 2
    assert rows[3]["offset"] == 6  # the layout after the edit
    assert sum(r["is_new"] for r in rows) == 2
    assert sum(r["is_new"] for r in bc.structured(b.assemble())) == 0  # a fresh decode knows nothing of edits
