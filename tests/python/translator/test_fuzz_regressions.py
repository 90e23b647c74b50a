"""The minimal programs the differential program fuzzer (tests/fuzz_programs) found failing, saved in
tests/fuzz_programs/regressions/, each checked again through one translated function in a forked child, so
that a fixed bug stays fixed. A program whose header names a known bug (``# xfail: BUG: ...``, on the Python
versions of ``# xfail-on:`` when given) is a strict xfail. PYTEST_DONT_REWRITE"""

import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "fuzz_programs"))
import program  # noqa: E402

VERSION = "%d.%d" % sys.version_info[:2]


def cases():
    for path in sorted(program.REGRESSIONS.glob("*.py")):
        _, header = program.read(path)
        known = "xfail" in header and VERSION in header.get("xfail-on", VERSION).split()
        marks = [pytest.mark.xfail(strict=True, reason=header["xfail"])] if known else []
        yield pytest.param(path, marks=marks, id=path.stem)


@pytest.mark.parametrize("path", list(cases()))
def test_saved_program(path):
    source, _ = program.read(path)
    failure, _ = program.check_isolated(source, timeout=60)
    if failure:
        pytest.fail(f"{failure.signature}\n{failure.message}", pytrace=False)
