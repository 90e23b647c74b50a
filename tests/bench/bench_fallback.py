"""What a call costs once the translator has given up on a function: a function whose translation fails (a
``while`` loop unrolled past the step limit) is called until the runtime stops asking the translator (the failure
limit, ``SOT_FAILURE_LIMIT``), then called many times with a short loop inside an open capture scope, against the
same calls without capture, in the same run. Also the cost of a plain call under the hook for a function that is
never translated (skipped code), for scale. Times are the best of 9 runs of 20000 calls.

    python tests/bench/bench_fallback.py
"""

import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python", "translator"))

import sot  # noqa: E402
from sot import capture as cap  # noqa: E402
from test_translator_api import counts_up  # noqa: E402 - the failing function the tests give up on


def best_per_call(fn, arg, calls=20000, runs=9):
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        for _ in range(calls):
            fn(arg)
        times.append((time.perf_counter() - start) / calls)
    return min(times)


def main():
    cap.mark_do_not_translate(best_per_call)  # the timing loop itself runs as is, under the hook
    sot.reset()
    translator = sot.translate.new_translator(records=True)
    with cap.capture(translator):
        for _ in range(cap.failure_limit()):
            assert counts_up(30000) == sum(range(30000))
        stats = cap.stats(counts_up)
        assert stats["gave_up"], stats
        tried = len(translator.records())
        under_hook = best_per_call(counts_up, 3)
        assert len(translator.records()) == tried, "the translator was asked again"
        assert cap.stats(counts_up)["fallbacks"] > 20000
    plain = best_per_call(counts_up, 3)
    print(f"failure limit {cap.failure_limit()}: {stats['gave_up'][:70]}...")
    print(f"per call of a given-up function: plain {plain * 1e9:.0f} ns, under capture {under_hook * 1e9:.0f} ns, "
          f"overhead {(under_hook - plain) * 1e9:.0f} ns per call (target < 2000 ns)")


if __name__ == "__main__":
    main()
