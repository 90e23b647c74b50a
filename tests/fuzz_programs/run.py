"""The differential program fuzzer: generates programs (grammar.py) from ``--seed`` on for ``--seconds``, checks
each through one translated function in a forked child (program.py), shrinks every failure to a minimal program
(shrink.py) and prints it; ``--save DIR`` saves each new one there (a strict xfail until the bug is fixed). Ends
with a summary; the exit status is 1 when a new failure was found and not saved.

    PYTHONPATH=build/python python3 tests/fuzz_programs/run.py --seconds 600 --seed 1 [--save DIR]
"""

import argparse
import collections
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import grammar  # noqa: E402
import program  # noqa: E402
import shrink  # noqa: E402

VERSION = "%d.%d" % sys.version_info[:2]


def parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60, help="how long to run (default 60)")
    parser.add_argument("--seed", type=int, default=0, help="the first program's seed (default 0)")
    parser.add_argument("--save", metavar="DIR", help="save new minimal failures into DIR")
    parser.add_argument("--timeout", type=int, default=20, help="seconds one program's check may take")
    parser.add_argument("--shrink-seconds", type=float, default=120, help="seconds to shrink one failure")
    parser.add_argument("--max-shrinks", type=int, default=5,
                        help="failures shrunk per signature; later ones with that signature are only counted")
    return parser.parse_args(argv)


class Fuzzer:
    """One run: the programs checked, the failures by signature, the minimal programs found."""

    def __init__(self, options):
        self.options = options
        self.known = program.saved_keys(program.REGRESSIONS)
        if options.save and pathlib.Path(options.save).is_dir():
            self.known |= program.saved_keys(options.save)
        self.checked = self.translated = 0
        self.check_seconds = 0.0
        self.failures = collections.Counter()  # signature -> failing programs
        self.shrunk = collections.Counter()  # signature -> failures shrunk
        self.new = self.unsaved = 0

    def check(self, source):
        """A new program's check (timed: the rate counts these only)."""
        start = time.monotonic()
        failure, stats = program.check_isolated(source, self.options.timeout)
        self.check_seconds += time.monotonic() - start
        return failure, stats

    def fails(self, source):
        """How ``source`` fails now (a shrinking step), or None."""
        return program.check_isolated(source, self.options.timeout)[0]

    def run(self):
        start = time.monotonic()
        deadline = start + self.options.seconds
        seed = self.options.seed
        progress = start + 60
        while time.monotonic() < deadline:
            source = grammar.generate(seed)
            failure, stats = self.check(source)
            self.checked += 1
            if failure is None:
                self.translated += stats["translations"] > 0 and stats["fallbacks"] == 0
            else:
                self.failed(seed, source, failure, deadline)
            seed += 1
            if time.monotonic() > progress:
                progress = time.monotonic() + 60
                print(f"[{time.monotonic() - start:6.0f} s] seed {seed}: {self.checked} programs "
                      f"({self.rate():.0f}/hour), {sum(self.failures.values())} failing", flush=True)
        self.summary(time.monotonic() - start, seed)
        return 1 if self.unsaved else 0

    def rate(self):
        return self.checked / max(self.check_seconds, 1e-9) * 3600

    def failed(self, seed, source, failure, deadline):
        signature = failure.signature
        self.failures[signature] += 1
        if self.shrunk[signature] >= self.options.max_shrinks:
            print(f"seed {seed}: fails again with {signature} (not shrunk)", flush=True)
            return
        self.shrunk[signature] += 1
        print(f"seed {seed}: fails with {signature}; shrinking", flush=True)

        def same_failure(candidate):
            return getattr(self.fails(candidate), "signature", None) == signature

        seconds = min(self.options.shrink_seconds, max(deadline - time.monotonic(), 30))
        small = shrink.shrink(source, same_failure, seconds)
        again = self.fails(small)
        if getattr(again, "signature", None) != signature:  # it failed only now and then: keep the original
            print(f"seed {seed}: the shrunk program does not fail again the same way ({again}); kept whole")
            small, again = source, failure
        failure = again
        key = program.key(small)
        new = key not in self.known
        self.known.add(key)
        print(f"--- seed {seed}, Python {VERSION}: {' '.join(map(str, signature))} "
              f"({'new' if new else 'already known'})\n{small}--- {failure.message[:2000]}\n", flush=True)
        if not new:
            return
        self.new += 1
        if self.options.save:
            header = {"found": f"run.py --seed {seed} on Python {VERSION}: {' '.join(map(str, signature))}",
                      "xfail": f"BUG: {' '.join(map(str, signature))} (to be described)",
                      "xfail-on": VERSION}
            print(f"saved as {program.save(self.options.save, small, failure, header)}", flush=True)
        else:
            self.unsaved += 1

    def summary(self, seconds, seed):
        passing = self.checked - sum(self.failures.values())
        print(f"== fuzz-programs, Python {VERSION}: seeds {self.options.seed}..{seed - 1}, {self.checked} programs "
              f"in {seconds:.0f} s ({self.rate():.0f} programs/hour of checking), "
              f"{self.translated / max(passing, 1):.0%} of the passing ones translated without a fallback")
        print(f"   {sum(self.failures.values())} failing programs, {len(self.failures)} signatures, "
              f"{self.new} new minimal failures ({self.unsaved} not saved)")
        for signature, n in self.failures.most_common():
            print(f"   {n:5d}  {' '.join(map(str, signature))}")


if __name__ == "__main__":
    sys.exit(Fuzzer(parse(sys.argv[1:])).run())
