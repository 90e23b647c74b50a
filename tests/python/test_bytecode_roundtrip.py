"""Decode + assemble gives byte-identical code objects that behave the same."""

import copy
import sys
import types

import pytest

import bytecode_corpus
import sot.bytecode as bc


def nested_codes(code):
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from nested_codes(const)


def corpus_codes():
    module_code = compile(open(bytecode_corpus.__file__).read(), bytecode_corpus.__file__, "exec")
    return list(nested_codes(module_code))


@pytest.mark.parametrize("code", corpus_codes(), ids=lambda c: c.co_qualname)
def test_corpus_round_trip_is_byte_identical(code):
    new = bc.roundtrip(code)
    assert new.co_code == code.co_code
    assert new.co_exceptiontable == code.co_exceptiontable
    assert new.co_linetable == code.co_linetable
    assert new.co_stacksize == code.co_stacksize
    assert new == code


def with_code_replaced(fn, code):
    clone = types.FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    clone.__kwdefaults__ = copy.copy(fn.__kwdefaults__)
    return clone


def roundtrip_deep(code):
    """Round trip of `code` and of every code object among its constants."""
    consts = tuple(roundtrip_deep(c) if isinstance(c, types.CodeType) else c for c in code.co_consts)
    return bc.roundtrip(code.replace(co_consts=consts))


@pytest.mark.parametrize("index", range(len(bytecode_corpus.CALLS)))
def test_round_tripped_functions_behave_the_same(index):
    fn, args, kwargs = bytecode_corpus.CALLS[index]
    expected = fn(*args, **kwargs)
    assert with_code_replaced(fn, roundtrip_deep(fn.__code__))(*args, **kwargs) == expected


def test_positions_and_handlers_are_decoded():
    b = bc.decode(bytecode_corpus.exceptions.__code__)
    first_line = bytecode_corpus.exceptions.__code__.co_firstlineno
    lines = {ins.positions[0] for ins in b.instructions if ins.positions[0] is not None}
    assert min(lines) == first_line and max(lines) > first_line + 5
    handled = [ins for ins in b.instructions if ins.handler is not None]
    assert handled, "a try statement has exception-table entries"
    ids = {ins.id for ins in b.instructions}
    assert all(ins.handler[0] in ids for ins in handled)
    jumps = [ins for ins in b.instructions if ins.target is not None]
    assert jumps and all(ins.target in ids for ins in jumps)


def test_extended_arg_is_folded():
    b = bc.decode(bytecode_corpus.big_function.__code__)
    assert all(ins.opname != "EXTENDED_ARG" for ins in b.instructions)
    assert any(ins.target is not None and ins.arg > 255 for ins in b.instructions) or sys.version_info < (3, 11)
