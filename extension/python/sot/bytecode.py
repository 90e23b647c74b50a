"""The bytecode layer: decode, edit, assemble and disassemble code objects (C++, in ``sot._sot.bytecode``).

    bc = sot.bytecode.decode(fn.__code__)      # Bytecode: instructions with jump targets as instruction ids
    bc.insert(0, [sot.bytecode.Instruction("NOP")])
    fn.__code__ = bc.assemble()                # or sot.bytecode.assemble(bc)
    sot.bytecode.roundtrip(code)               # decode + assemble: byte-identical for compiler output
    print(sot.bytecode.dis(code))              # dis.dis format (nested code objects too)

Instructions are ``Instruction(op, arg=0, target=None, positions=None, handler=None)`` where ``op`` is a name or
number, ``target`` the id of the instruction a jump goes to, ``positions`` ``(line, end_line, col, end_col)`` and
``handler`` ``(target_id, depth, lasti)``. Inserted instructions take the handler and position of the instruction
they are placed before unless given their own.
"""

import types

from . import _sot

_b = _sot.bytecode

BytecodeError = _b.BytecodeError
Bytecode = _b.Bytecode
Instruction = _b.Instruction
decode = _b.decode
assemble = _b.assemble
roundtrip = _b.roundtrip
structured = _b.structured
opcode_table = _b.opcode_table
stack_effect = _b.stack_effect


def dis(code, *, recursive=True):
    """Disassembly text of ``code`` (a code object or a function) in dis.dis format; with ``recursive``, the code
    objects among its constants follow, each under a "Disassembly of ..." header as dis prints it."""
    code = getattr(code, "__code__", code)
    if not isinstance(code, types.CodeType):
        raise TypeError(f"dis() expects a code object or a function, not {type(code).__name__}")
    parts = [_b.dis(code)]
    if recursive:
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                parts.append(f"\nDisassembly of {const!r}:\n" + dis(const, recursive=True))
    return "".join(parts)


__all__ = ["Bytecode", "BytecodeError", "Instruction", "assemble", "decode", "dis", "opcode_table", "roundtrip",
           "stack_effect", "structured"]
