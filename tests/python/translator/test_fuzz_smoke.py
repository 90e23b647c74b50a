"""A short run of the differential program fuzzer (tests/fuzz_programs): its programs are valid, terminate and
behave the same on every plain run (or the fuzzer would report what are not translator bugs), a fixed range of
seeds translates like plain Python (a known bug's seeds are strict xfails), the shrinker reduces a planted
difference to its few lines, and the command line runs and sums up. ``make fuzz-programs`` runs it for long.
PYTEST_DONT_REWRITE"""

import pathlib
import signal
import subprocess
import sys

import pytest
from harness import in_child

FUZZ = pathlib.Path(__file__).resolve().parents[2] / "fuzz_programs"
sys.path.insert(0, str(FUZZ))
import grammar  # noqa: E402
import program  # noqa: E402
import shrink  # noqa: E402
from numpy_differential import same  # noqa: E402 - importable once program.py set the path

SEEDS = range(400)
# Seeds of SEEDS whose program shows a known translator bug, each a differential.Bug naming the bug and its
# minimal program in regressions/: strict xfails.
KNOWN = {}


def seeds():
    for seed in SEEDS:
        bug = KNOWN.get(seed)
        marks = [pytest.mark.xfail(strict=True, reason=bug.reason)] if bug and bug.applies() else []
        yield pytest.param(seed, marks=marks, id=str(seed))


def test_programs_are_valid_and_deterministic():
    """Same seed, same text; every program compiles, and two plain runs of each call see the same."""

    def body():
        signal.alarm(60)
        for seed in SEEDS:
            source = grammar.generate(seed)
            assert source == grammar.generate(seed), seed
            _, calls, run = program.runner(source)
            outcomes = [[run(args, kwargs, None) for args, kwargs in calls] for _ in range(2)]
            for first, second in zip(*outcomes):
                for key in first:
                    assert same(first[key], second[key]), f"seed {seed}: {key} {first[key]!r} != {second[key]!r}"

    in_child(body)


@pytest.mark.parametrize("seed", list(seeds()))
def test_translates_like_plain(seed):
    failure, _ = program.check_isolated(grammar.generate(seed), timeout=60)
    if failure:
        pytest.fail(f"{failure.signature}\n{failure.message}", pytrace=False)


# A difference planted on purpose: the capture's depth is 1 inside a translated call and 0 plainly.
PLANTED = grammar.PRELUDE + '''
from sot import capture


def f(p0, p1):
    v = [p0, p1]
    print(len(v))
    v.append(p0 * 2)
    print(capture.depth() + sum(v), p1)
    return v


CALLS = [((1, 2), {}), ((3, 4), {})]
'''


def test_shrinks_a_planted_difference():
    failure, _ = program.check_isolated(PLANTED)
    assert failure.signature == ("differs", "stdout"), failure
    small = shrink.shrink(PLANTED, lambda s: getattr(program.check_isolated(s)[0], "signature", None)
                          == failure.signature, seconds=60)
    assert small == "from sot import capture\n\ndef f():\n    print(capture.depth())\nCALLS = [((), {})]\n", small


def test_command_line(tmp_path):
    command = [sys.executable, str(FUZZ / "run.py"), "--seconds", "3", "--seed", "0", "--save", str(tmp_path),
               "--shrink-seconds", "5"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "programs/hour" in result.stdout, result.stdout
