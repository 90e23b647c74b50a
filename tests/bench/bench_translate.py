"""Translation time per bytecode instruction over the differential corpus (tests/python/translator): every case's
function is translated (first call, fresh caches) under a recording translator; each translation's time is
divided by the instructions it simulated. Reports the median and quartiles in microseconds.

    python tests/bench/bench_translate.py
"""

import contextlib
import copy
import importlib
import io
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python", "translator"))
sys.path.insert(0, os.path.join(HERE, "..", "python"))  # harness.py

import sot  # noqa: E402
from sot import capture as cap  # noqa: E402

MODULES = ("test_diff_basics", "test_diff_breaks", "test_diff_more")


def cases():
    for name in MODULES:
        module = importlib.import_module(name)
        for value in list(vars(module).values()):
            if not isinstance(value, list):
                continue
            for item in value:
                values = getattr(item, "values", item)  # pytest.param or a plain tuple
                if isinstance(values, tuple) and values and callable(values[0]) and len(values) >= 2:
                    fn, args = values[0], values[1]
                    kwargs = values[2] if len(values) > 2 and isinstance(values[2], dict) else {}
                    init = values[5] if len(values) > 5 else None
                    yield fn, args, kwargs, init


def timed(fn, args, kwargs, init, translator=None):
    if init:
        fn.__globals__.update(copy.deepcopy(init))
    a, k = copy.deepcopy(args), copy.deepcopy(kwargs)
    start = time.perf_counter_ns()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(Exception):
        with cap.capture(translator) if translator is not None else contextlib.nullcontext():
            fn(*a, **k)
    return time.perf_counter_ns() - start


def main():
    corpus = list(cases())
    per_instruction = []
    translations = 0
    for fn, args, kwargs, init in corpus:
        sot.reset()
        translator = sot.translate.new_translator(records=True)
        timed(fn, args, kwargs, init, translator)
        for r in translator.records():
            if r["simulated"] > 0 and r["transformed"] is not None:
                per_instruction.append(r["seconds"] * 1e6 / r["simulated"])
                translations += 1
    q1, median, q3 = statistics.quantiles(per_instruction, n=4)
    print(f"Python {sys.version.split()[0]}: {translations} translations of the differential corpus")
    print(f"translation time per simulated instruction: median {median:.2f} us (quartiles {q1:.2f} - {q3:.2f} us)")


if __name__ == "__main__":
    main()
