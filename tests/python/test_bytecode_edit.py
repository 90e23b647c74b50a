"""Edits: insert (before a jump target, inside a try block, at a handler's start), remove, replace, arguments past
255 and 65535, new constants, names and locals; the edited code runs and does what the edit says."""

import opcode
import sys
import traceback
import types

import pytest

import sot.bytecode as bc
from sot.bytecode import Instruction as I  # noqa: E741

NB = {name: i for i, (name, _) in enumerate(opcode._nb_ops)}


def run(fn, code, *args):
    clone = types.FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    return clone(*args)


def index_where(b, predicate, start=0):
    return next(i for i in range(start, len(b)) if predicate(b[i]))


def after_resume(b):
    return index_where(b, lambda ins: ins.opname == "RESUME") + 1


def returns(b):
    return [i for i in range(len(b)) if b[i].opname == "RETURN_VALUE"]


def count_loop(n):
    total = 0
    for i in range(n):
        total += i
    return total


def visits_code(retarget):
    """count_loop, edited to count how often its loop header runs and return that count."""
    b = bc.decode(count_loop.__code__)
    visits = b.add_local("visits")
    zero, one = b.add_const(0), b.add_const(1)
    b.insert(after_resume(b), [I("LOAD_CONST", zero), I("STORE_FAST", visits)])
    header = index_where(b, lambda ins: ins.opname == "FOR_ITER")
    b.insert(header, [I("LOAD_FAST", visits), I("LOAD_CONST", one), I("BINARY_OP", NB["NB_INPLACE_ADD"]),
                      I("STORE_FAST", visits)], retarget=retarget)
    ret = returns(b)[-1]
    b.insert(ret, [I("POP_TOP"), I("LOAD_FAST", visits)])
    return b.assemble()


def test_insert_before_a_jump_target_with_retarget_runs_on_every_jump():
    assert count_loop(5) == 10
    assert run(count_loop, visits_code(retarget=True), 5) == 6  # header entered 5 times + the exit test


def test_insert_before_a_jump_target_without_retarget_runs_once():
    assert run(count_loop, visits_code(retarget=False), 5) == 1


def guarded(x):
    try:
        y = x + 1
    except ZeroDivisionError:
        return -1
    return y


def test_insert_inside_a_try_block_is_covered_by_its_handler():
    b = bc.decode(guarded.__code__)
    inside = index_where(b, lambda ins: ins.handler is not None and ins.opname == "LOAD_FAST")
    one, zero = b.add_const(1), b.add_const(0)
    b.insert(inside, [I("LOAD_CONST", one), I("LOAD_CONST", zero), I("BINARY_OP", NB["NB_TRUE_DIVIDE"]),
                      I("POP_TOP")])
    assert all(b[inside + k].handler == b[inside + 4].handler for k in range(4))
    assert guarded(1) == 2
    assert run(guarded, b.assemble(), 1) == -1


def test_insert_outside_the_try_block_is_not_covered():
    b = bc.decode(guarded.__code__)
    one, zero = b.add_const(1), b.add_const(0)
    b.insert(after_resume(b), [I("LOAD_CONST", one), I("LOAD_CONST", zero), I("BINARY_OP", NB["NB_TRUE_DIVIDE"]),
                               I("POP_TOP")])
    with pytest.raises(ZeroDivisionError):
        run(guarded, b.assemble(), 1)


def test_insert_at_a_handlers_start_runs_when_the_handler_does():
    b = bc.decode(guarded.__code__)
    handler_id = next(ins.handler[0] for ins in b.instructions if ins.handler is not None)
    start = b.index_of(handler_id)
    marker = b.add_const(100)
    name = b.add_name("edited_handler_hits")
    b.insert(start, [I("LOAD_CONST", marker), I("STORE_GLOBAL", name)], retarget=True)
    code = b.assemble()
    globals().pop("edited_handler_hits", None)
    assert run(guarded, code, 1) == 2
    assert "edited_handler_hits" not in globals()

    class Weird:
        def __add__(self, other):
            raise ZeroDivisionError

    assert run(guarded, code, Weird()) == -1
    assert globals().pop("edited_handler_hits") == 100


def two_assignments():
    x = 1
    x = 2
    return x


def test_remove_instructions():
    b = bc.decode(two_assignments.__code__)
    second = index_where(b, lambda ins: ins.opname == "LOAD_CONST" and b.consts[ins.arg] == 2)
    b.remove(second)  # LOAD_CONST 2
    b.remove(second)  # STORE_FAST x
    assert run(two_assignments, b.assemble()) == 1


def test_removing_a_jump_target_moves_jumps_to_the_next_instruction():
    b = bc.decode(count_loop.__code__)
    header = index_where(b, lambda ins: ins.opname == "FOR_ITER")
    one = b.add_const(1)
    nop_ids = b.insert(header, [I("NOP"), I("NOP")], retarget=True)
    jumpers = [ins for ins in b.instructions if ins.target == nop_ids[0]]
    assert jumpers
    b.remove(header)
    assert all(b[b.index_of(j.id)].target == nop_ids[1] for j in jumpers)
    del one
    assert run(count_loop, b.assemble(), 5) == 10


def test_replace_keeps_targets():
    b = bc.decode(two_assignments.__code__)
    first = index_where(b, lambda ins: ins.opname == "LOAD_CONST" and b.consts[ins.arg] == 1)
    seven = b.add_const(7)
    b.replace(first, I("LOAD_CONST", seven))
    b.remove(index_where(b, lambda ins: ins.opname == "LOAD_CONST" and b.consts[ins.arg] == 2))
    b.remove(index_where(b, lambda ins: ins.opname == "STORE_FAST", first + 2))
    assert run(two_assignments, b.assemble()) == 7


def returns_param(value):
    return value


@pytest.mark.parametrize("count, prefixes", [(300, 1), (70_000, 2)])
def test_arguments_past_255_and_65535_get_extended_arg(count, prefixes):
    b = bc.decode(returns_param.__code__)
    wanted = object()
    for k in range(count - 1):
        b.add_const(("filler", k))
    index = b.add_const(wanted)
    assert index >= count - 1
    ret = returns(b)[-1]
    b.insert(ret, [I("POP_TOP"), I("LOAD_CONST", index)])
    code = b.assemble()
    raw = code.co_code
    ext = opcode.opmap["EXTENDED_ARG"]
    load_const = opcode.opmap["LOAD_CONST"]
    position = next(p for p in range(0, len(raw), 2) if raw[p] == load_const and raw[p - 2] == ext)
    assert all(raw[position - 2 * k] == ext for k in range(1, prefixes + 1))
    assert run(returns_param, code, 1) is wanted


def test_long_jump_gets_extended_arg_and_runs():
    b = bc.decode(count_loop.__code__)
    body = index_where(b, lambda ins: ins.opname == "STORE_FAST", index_where(b, lambda ins: ins.opname == "FOR_ITER"))
    b.insert(body + 1, [I("NOP") for _ in range(300)])
    code = b.assemble()
    back = [ins for ins in bc.decode(code).instructions if ins.opname == "JUMP_BACKWARD"]
    assert back and back[0].arg > 255
    assert run(count_loop, code, 6) == 15


def test_inserted_code_takes_the_line_of_the_instruction_it_precedes():
    def fails_later(x):
        y = x
        return y

    b = bc.decode(fails_later.__code__)
    ret = returns(b)[-1]
    one, zero = b.add_const(1), b.add_const(0)
    b.insert(ret, [I("LOAD_CONST", one), I("LOAD_CONST", zero), I("BINARY_OP", NB["NB_TRUE_DIVIDE"]), I("POP_TOP")])
    with pytest.raises(ZeroDivisionError) as info:
        run(fails_later, b.assemble(), 3)
    frame_line = traceback.extract_tb(info.value.__traceback__)[-1].lineno
    assert frame_line == fails_later.__code__.co_firstlineno + 2


def test_add_local_shifts_cells_and_frees():
    def outer(a):
        def inner():
            return a * 2

        return inner()

    b = bc.decode(outer.__code__)
    before = list(b.localsplus_names)
    slot = b.add_local("extra")
    assert list(b.localsplus_names).index("extra") == slot
    assert list(b.localsplus_names)[slot + 1:] == before[slot:]
    seven = b.add_const(7)
    b.insert(after_resume(b), [I("LOAD_CONST", seven), I("STORE_FAST", slot)])
    code = b.assemble()
    assert "extra" in code.co_varnames
    assert run(outer, code, 4) == 8


def test_assemble_from_an_instruction_list_and_template():
    b = bc.decode(returns_param.__code__)
    code = bc.assemble(list(b.instructions), returns_param.__code__)
    assert code == returns_param.__code__


def test_bad_inputs_give_clear_errors():
    with pytest.raises(bc.BytecodeError, match="code object"):
        bc.decode("not code")
    broken = returns_param.__code__.replace(co_code=bytes([opcode.opmap["EXTENDED_ARG"], 1]))
    with pytest.raises(bc.BytecodeError, match="EXTENDED_ARG"):
        bc.decode(broken)
    b = bc.decode(returns_param.__code__)
    with pytest.raises(bc.BytecodeError, match="no instruction has the id"):
        b.insert(0, [I("JUMP_FORWARD", target=12345)])
    with pytest.raises(ValueError, match="unknown opcode name"):
        I("NOT_AN_OPCODE")
    with pytest.raises(bc.BytecodeError):
        b.remove(len(b))


def test_stack_depth_mismatch_is_reported_not_assembled():
    b = bc.decode(returns_param.__code__)
    one = b.add_const(1)
    ret = returns(b)[-1]
    b.insert(ret, [I("LOAD_CONST", one)])  # leaves an extra value: RETURN_VALUE then sees depth 2, fine...
    b.insert(ret, [I("POP_TOP"), I("POP_TOP"), I("POP_TOP")])  # ...but three pops underflow
    with pytest.raises(bc.BytecodeError, match="underflow"):
        b.assemble()


@pytest.mark.skipif(sys.version_info < (3, 12), reason="hidden locals exist from 3.12")
def test_add_local_refuses_code_with_hidden_locals():
    # A comprehension inlined into module code keeps its variable in a hidden fast local (PEP 709).
    b = bc.decode(compile("squares = [i * i for i in range(3)]", "<module>", "exec"))
    with pytest.raises(bc.BytecodeError, match="hidden"):
        b.add_local("x")


def test_instruction_snapshots_survive_edits():
    b = bc.decode(count_loop.__code__)
    snapshot = b.instructions
    ids = [ins.id for ins in snapshot]
    b.remove(1)
    b.insert(0, [I("NOP")])
    assert [ins.id for ins in snapshot] == ids


def test_assemble_overrides_name_qualname_and_first_line():
    b = bc.decode(returns_param.__code__)
    code = b.assemble(name="__sot_resume_8", qualname="returns_param.<resume>", first_line=500)
    assert code.co_name == "__sot_resume_8" and code.co_qualname == "returns_param.<resume>"
    assert code.co_firstlineno == 500
    # positions are absolute: the lines stay those of the user's code
    assert [p for p in code.co_positions()] == [p for p in returns_param.__code__.co_positions()]
    assert run(returns_param, code, 9) == 9
