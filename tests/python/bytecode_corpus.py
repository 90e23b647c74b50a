"""Functions with every construct the bytecode layer must round-trip: used by several bytecode tests."""

import asyncio
import contextlib


def simple(a, b=2, *args, c, d=4, **kwargs):
    return a + b + c + d + len(args) + len(kwargs)


def loops(n):
    total = 0
    for i in range(n):
        if i % 3 == 0:
            continue
        while total > 100:
            total -= 7
            if total < 50:
                break
        total += i
    else:
        total += 1
    return total


def exceptions(x):
    try:
        y = 10 / x
    except ZeroDivisionError as e:
        y = str(e)
    except (TypeError, ValueError):
        y = None
    else:
        y = y * 2
    finally:
        z = 1
    return y, z


def except_star(values):
    caught = []
    try:
        raise ExceptionGroup("g", [ValueError(v) for v in values])
    except* ValueError as eg:
        caught.extend(str(e) for e in eg.exceptions)
    return caught


def with_blocks(path_list):
    out = []
    with contextlib.suppress(KeyError):
        with contextlib.nullcontext(path_list) as p:
            out.append(len(p))
            raise KeyError("x")
    return out


def closures(k):
    count = 0

    def inc(step=1):
        nonlocal count
        count += step
        return count

    inc()
    inc(k)
    return count, (lambda: count * 2)()


def generators(n):
    def gen():
        received = yield 0
        for i in range(n):
            received = yield i + (received or 0)
        return "done"

    g = gen()
    out = [next(g)]
    try:
        while True:
            out.append(g.send(1))
    except StopIteration as stop:
        out.append(stop.value)
    yield from out


def comprehensions(n):
    squares = [i * i for i in range(n) if i % 2]
    table = {i: [j for j in range(i)] for i in range(n)}
    unique = {x % 3 for x in range(n)}
    total = sum(x for x in range(n))
    return squares, table, unique, total


def matching(value):
    match value:
        case {"kind": "point", "x": x, "y": y}:
            return ("point", x, y)
        case [first, *rest] if first > 0:
            return ("list", first, len(rest))
        case str() | bytes() as s:
            return ("text", len(s))
        case _:
            return None


async def coroutine(n):
    await asyncio.sleep(0)
    async with contextlib.AsyncExitStack():
        result = [i async for i in aiter_range(n)]
    return result


async def aiter_range(n):
    for i in range(n):
        yield i


def fstrings(name, value):
    return f"{name!r:>10}: {value:.3f} {value!s} {{literal}}"


def big_function():
    # long enough that jumps need EXTENDED_ARG
    total = 0
    for i in range(3):
        total += i
        total += i * 2
        total += i * 3
        total += i * 4
        total += i * 5
        total += i * 6
        total += i * 7
        total += i * 8
        total += i * 9
        total += i * 10
        total += i * 11
        total += i * 12
        total += i * 13
        total += i * 14
        total += i * 15
        total += i * 16
        total += i * 17
        total += i * 18
        total += i * 19
        total += i * 20
        total += i * 21
        total += i * 22
        total += i * 23
        total += i * 24
        total += i * 25
        total += i * 26
        total += i * 27
        total += i * 28
        total += i * 29
        total += i * 30
        total += i * 31
        total += i * 32
        total += i * 33
        total += i * 34
        total += i * 35
        total += i * 36
        total += i * 37
        total += i * 38
        total += i * 39
        total += i * 40
    return total


class WithSuper(dict):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.extra = len(self)

    @property
    def size(self):
        return len(self) + self.extra


CALLS = [
    (simple, (1,), {"c": 3, "e": 5}),
    (loops, (40,), {}),
    (exceptions, (0,), {}),
    (exceptions, (4,), {}),
    (exceptions, ("s",), {}),
    (except_star, (["a", "b"],), {}),
    (with_blocks, ([1, 2],), {}),
    (closures, (5,), {}),
    (lambda n: list(generators(n)), (4,), {}),
    (comprehensions, (7,), {}),
    (matching, ({"kind": "point", "x": 1, "y": 2},), {}),
    (matching, ([3, 4, 5],), {}),
    (matching, ("abc",), {}),
    (matching, (1.5,), {}),
    (lambda n: asyncio.run(coroutine(n)), (3,), {}),
    (fstrings, ("v", 3.14159), {}),
    (big_function, (), {}),
    (lambda: WithSuper(a=1).size, (), {}),
]
