"""The opcode table the core was built with agrees with the running interpreter's own opcode and dis data, and
with what its compiler emits."""

import dis
import opcode
import os
import sys
import types

import pytest

import sot.bytecode as bc

ARG_KINDS = ["None", "Raw", "Const", "Name", "Local", "Free", "LocalPair", "Compare", "JumpForward",
             "JumpBackward", "JumpAbsolute"]
ROWS = {row[1]: row for row in bc.opcode_table()}


def cache_entries(name):
    table = opcode._inline_cache_entries
    return table.get(name, 0) if isinstance(table, dict) else table[opcode.opmap[name]]


def test_table_comes_from_this_interpreter():
    assert bc._b.TABLE_PYTHON == sys.version.split()[0]


def test_every_real_opcode_has_its_number_and_cache_size():
    for name, code in opcode.opmap.items():
        if code >= 256:
            continue  # pseudo instructions
        row = ROWS[name]
        assert row[0] == code, name
        if row[2] == code:  # base instructions carry their own cache size
            assert row[4] == cache_entries(name), name


def test_argument_kinds_follow_the_opcode_lists():
    for name, (code, _, base, kind, _, is_jump, _) in ROWS.items():
        if base != code:
            continue
        kind = ARG_KINDS[kind]
        if code in opcode.hasconst:
            assert kind == "Const", name
        elif code in opcode.hasname:
            assert kind == "Name", name
        elif code in opcode.hasjrel:
            assert kind in ("JumpForward", "JumpBackward") and is_jump, name
        elif code in opcode.haslocal:
            assert kind in ("Local", "LocalPair"), name
        elif code in opcode.hasfree:
            assert kind == "Free", name


def test_specialised_opcodes_map_to_their_base():
    families = getattr(opcode, "_specializations", {})
    assert families
    for base, members in families.items():
        for member in members:
            assert ROWS[member][2] == opcode.opmap[base], member


def test_stack_effects_are_the_interpreters():
    for name, (code, _, base, kind, _, _, _) in ROWS.items():
        if base != code or code == opcode.opmap["EXTENDED_ARG"]:
            continue
        arg = 1 if ARG_KINDS[kind] != "None" else None
        for jump in (False, True):
            try:
                expected = dis.stack_effect(code, arg, jump=jump)
            except ValueError:
                expected = None
            assert bc.stack_effect(code, arg or 0, jump) == expected, (name, jump)


def stdlib_codes(limit):
    root = os.path.dirname(os.__file__)
    names = sorted(f for f in os.listdir(root) if f.endswith(".py"))[:limit]
    for name in names:
        try:
            module = compile(open(os.path.join(root, name), "rb").read(), name, "exec")
        except SyntaxError:
            continue
        stack = [module]
        while stack:
            code = stack.pop()
            yield code
            stack.extend(c for c in code.co_consts if isinstance(c, types.CodeType))


def test_no_fallthrough_opcodes_are_followed_by_targets():
    # The compiler removes unreachable code, so what follows an instruction that never falls through is nearly
    # always reached another way (a jump or an exception handler). A few dead instructions survive optimisation
    # (a try body optimised away after the stack depth was computed), so the check is per opcode and statistical.
    followed, by_target = {}, {}
    for code in stdlib_codes(120):
        b = bc.decode(code)
        targets = {ins.target for ins in b.instructions if ins.target is not None}
        targets |= {ins.handler[0] for ins in b.instructions if ins.handler is not None}
        for ins, following in zip(b.instructions, b.instructions[1:]):
            if ROWS[ins.opname][6]:
                followed[ins.opname] = followed.get(ins.opname, 0) + 1
                by_target[ins.opname] = by_target.get(ins.opname, 0) + (following.id in targets)
    assert sum(followed.values()) > 1000
    for name, count in followed.items():
        assert by_target[name] >= 0.97 * count, (name, by_target[name], count)
