"""The side-by-side benchmark's corpus: realistic small functions, pure Python and NumPy.

Each ``Case`` has the function, ``args_a`` (the argument maker of the first call, also the one timed at a cache
hit) and ``args_b`` (a second argument set of the same types with other values, lengths or shapes: the result must
be right on both). No function changes its arguments, so one argument tuple serves every call.
"""

import dataclasses
from typing import Callable

import numpy as np


@dataclasses.dataclass(frozen=True)
class Case:
    name: str
    kind: str  # "py" (pure Python) or "np" (NumPy)
    fn: Callable
    args_a: Callable[[], tuple]
    args_b: Callable[[], tuple]
    what: str


# ---------------------------------------------------------------------------------------------------------------
# Pure Python


def poly_loop(n):
    """A counted loop with integer and float arithmetic and a branch."""
    acc = 0
    total = 0.0
    for i in range(n):
        v = (i * i + 3 * i) % 97
        if v & 1:
            acc += v
        else:
            acc -= v // 3
        total += v * 0.5
    return acc, total


def build_report(names, scores):
    """String building: f-strings, padding, join, upper/lower."""
    lines = []
    best = max(scores)
    for name, score in zip(names, scores):
        mark = "*" if score == best else " "
        lines.append(f"{mark} {name.title():<10}|{score:>6.1f}|{'#' * int(score // 10)}")
    header = "-" * 8 + " REPORT " + "-" * 8
    return "\n".join([header, *lines, header.lower()])


def word_stats(text):
    """Dict manipulation: counting, get/setdefault, sorting items by a key."""
    counts = {}
    by_first = {}
    for raw in text.split():
        word = raw.strip(".,;:!?").lower()
        if not word:
            continue
        counts[word] = counts.get(word, 0) + 1
        by_first.setdefault(word[0], []).append(word)
    top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:5]
    return top, {k: len(v) for k, v in sorted(by_first.items())}


def list_shuffle(xs):
    """List manipulation: copy, append, pop, insert, slicing, reverse, extend."""
    out = list(xs)
    for i in range(len(xs)):
        if i % 3 == 0:
            out.append(out.pop(0) * 2)
        elif i % 3 == 1:
            out.insert(i // 2, out[-1] - 1)
        else:
            out[1:3] = out[2:0:-1]
    out.reverse()
    out.extend(out[:4])
    return out[:12], len(out), sum(out)


def fib(n):
    """Plain recursion."""
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)


def closure_pipeline(values, scale):
    """Closures: a nonlocal accumulator, a function factory and a lambda."""
    total = 0

    def add(v):
        nonlocal total
        total += v
        return total

    def make_affine(a, b):
        return lambda x: a * x + b

    f = make_affine(scale, 1)
    g = make_affine(2, -scale)
    running = [add(g(f(v))) for v in values]
    return running[-1], running[::4], total


class Vec2:
    __slots__ = ("x", "y")

    def __init__(self, x, y):
        self.x = x
        self.y = y

    def __add__(self, other):
        return Vec2(self.x + other.x, self.y + other.y)

    def scale(self, k):
        return Vec2(self.x * k, self.y * k)

    def dot(self, other):
        return self.x * other.x + self.y * other.y


class Particle:
    def __init__(self, pos, vel):
        self.pos = pos
        self.vel = vel

    def step(self, dt):
        self.pos = self.pos + self.vel.scale(dt)
        if self.pos.y < 0:
            self.vel = Vec2(self.vel.x, -self.vel.y)

    def energy(self):
        return 0.5 * self.vel.dot(self.vel)


def simulate(points, steps):
    """Small classes with methods: objects made, attributes read and written, dunder methods."""
    ps = [Particle(Vec2(x, y), Vec2(1.0, -y)) for x, y in points]
    for _ in range(steps):
        for p in ps:
            p.step(0.1)
    return [round(p.pos.x, 9) for p in ps], sum(p.energy() for p in ps)


def comprehensions(n):
    """List, set, dict comprehensions and a generator expression, nested."""
    squares = [i * i for i in range(n) if i % 2]
    residues = {s % 11 for s in squares}
    table = {i: [j for j in range(i) if (i * j) % 5 == 1] for i in range(1, n // 2)}
    pairs = sum(len(v) for v in table.values())
    return squares[-3:], sorted(residues), pairs, max(table, key=lambda k: len(table[k]))


def tokenize(src):
    """A hand-written tokenizer for arithmetic expressions: a character loop with a state machine."""
    tokens = []
    i = 0
    n = len(src)
    while i < n:
        c = src[i]
        if c.isspace():
            i += 1
        elif c.isdigit():
            j = i
            while j < n and (src[j].isdigit() or src[j] == "."):
                j += 1
            tokens.append(("num", src[i:j]))
            i = j
        elif c.isalpha() or c == "_":
            j = i
            while j < n and (src[j].isalnum() or src[j] == "_"):
                j += 1
            tokens.append(("name", src[i:j]))
            i = j
        elif src.startswith("**", i):
            tokens.append(("op", "**"))
            i += 2
        elif c in "+-*/()=,":
            tokens.append(("op", c))
            i += 1
        else:
            raise ValueError(f"bad character {c!r} at {i}")
    return tokens


def sieve(limit):
    """The sieve of Eratosthenes over a list of booleans."""
    is_prime = [True] * (limit + 1)
    is_prime[0] = is_prime[1] = False
    p = 2
    while p * p <= limit:
        if is_prime[p]:
            for m in range(p * p, limit + 1, p):
                is_prime[m] = False
        p += 1
    primes = [i for i, ok in enumerate(is_prime) if ok]
    return len(primes), primes[-5:]


def matmul_lists(a, b):
    """Matrix product of nested lists (rows of floats)."""
    cols = list(zip(*b))
    return [[sum(x * y for x, y in zip(row, col)) for col in cols] for row in a]


def parse_records(lines):
    """try/except inside a loop, str methods, tuple unpacking."""
    good, bad = [], 0
    for line in lines:
        try:
            key, value = line.split("=", 1)
            good.append((key.strip(), int(value)))
        except ValueError:
            bad += 1
    return dict(good), bad


# ---------------------------------------------------------------------------------------------------------------
# NumPy


def softmax(x):
    z = x - x.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def layer_norm(x, gamma, beta):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * gamma + beta


def mlp_forward(x, w1, b1, w2, b2):
    h = np.maximum(x @ w1 + b1, 0.0)
    return np.tanh(h @ w2 + b2)


def gelu(x):
    """An elementwise chain: the tanh form of GELU."""
    return 0.5 * x * (1.0 + np.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))


def huber_clip(pred, target):
    """An elementwise chain with where, abs and clip."""
    d = pred - target
    a = np.abs(d)
    loss = np.where(a < 1.0, 0.5 * d * d, a - 0.5)
    return np.clip(loss, 0.0, 4.0) * 2.0 - 1.0


def axis_stats(x):
    """Reductions along each axis, returned as a tuple."""
    col_mean = x.mean(axis=0)
    row_max = x.max(axis=1)
    spread = x.std(axis=0) + (x.max(axis=0) - x.min(axis=0))
    return col_mean, row_max, spread, x.sum()


def branchy(x):
    """A data-dependent branch on a reduction."""
    s = x.sum()
    if s > 0:
        y = np.sqrt(np.abs(x)) * 2.0
    else:
        y = x * x - 1.0
    return y.mean(axis=0)


def with_print(x, w):
    """A print between two parts (a graph break for the translators)."""
    h = x @ w
    print("hidden", h.shape)
    return np.tanh(h).sum(axis=1)


def sum_of_list(arrays, weights):
    """A loop over a Python list of arrays."""
    acc = np.zeros_like(arrays[0])
    for a, w in zip(arrays, weights):
        acc = acc + w * a * a
    return acc / len(arrays)


def attention(q, k, v):
    """Scaled dot-product attention with an inline softmax."""
    scores = q @ k.T / np.sqrt(q.shape[-1])
    scores = scores - scores.max(axis=-1, keepdims=True)
    p = np.exp(scores)
    p = p / p.sum(axis=-1, keepdims=True)
    return p @ v


# ---------------------------------------------------------------------------------------------------------------
# Argument makers


def _rng(seed):
    return np.random.default_rng(seed)


_TEXT_A = ("The quick brown fox jumps over the lazy dog. The dog sleeps; the fox runs! "
           "A fox, a dog, and the quick cat.")
_TEXT_B = ("Never odd or even: never say never. Odd numbers, even numbers, and other numbers "
           "are numbers; odd, isn't it?")


def _layer_norm_args(seed, n, d):
    r = _rng(seed)
    return (r.standard_normal((n, d)), r.standard_normal(d), r.standard_normal(d))


def _mlp_args(seed, n, d, h, o):
    r = _rng(seed)
    return (r.standard_normal((n, d)), r.standard_normal((d, h)) / d, r.standard_normal(h),
            r.standard_normal((h, o)) / h, r.standard_normal(o))


CASES = [
    Case("poly_loop", "py", poly_loop, lambda: (200,), lambda: (317,), "counted loop, int/float arithmetic"),
    Case("build_report", "py", build_report,
         lambda: (["ada", "grace", "linus", "guido"], [91.5, 78.0, 91.5, 64.25]),
         lambda: (["ken", "dennis", "barbara"], [55.0, 99.9, 12.5]), "string building, f-strings"),
    Case("word_stats", "py", word_stats, lambda: (_TEXT_A,), lambda: (_TEXT_B,), "dict counting, sorted by key"),
    Case("list_shuffle", "py", list_shuffle, lambda: (list(range(20)),), lambda: (list(range(5, 38, 2)),),
         "list append/pop/insert/slices"),
    Case("fib", "py", fib, lambda: (12,), lambda: (14,), "recursion"),
    Case("closure_pipeline", "py", closure_pipeline, lambda: (list(range(16)), 3),
         lambda: (list(range(-7, 30, 3)), -2), "closures, nonlocal, lambdas"),
    Case("simulate", "py", simulate, lambda: ([(0.0, 1.0), (1.0, 0.5), (2.0, 2.0)], 10),
         lambda: ([(0.5, 0.25), (3.0, 1.5)], 13), "small classes with methods"),
    Case("comprehensions", "py", comprehensions, lambda: (30,), lambda: (41,), "list/set/dict comprehensions"),
    Case("tokenize", "py", tokenize, lambda: ("y = 3.5 * (x_1 + 42) ** 2 - f(a, b)",),
         lambda: ("total=alpha/beta+7*gamma-(1.25)",), "tokenizer state machine"),
    Case("sieve", "py", sieve, lambda: (300,), lambda: (517,), "prime sieve"),
    Case("matmul_lists", "py", matmul_lists,
         lambda: ([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], [[1.0, 0.5], [0.0, -1.0], [2.0, 0.25]]),
         lambda: ([[0.5, -1.5], [2.0, 3.0], [1.0, 1.0]], [[1.0, 2.0, 3.0, 4.0], [-1.0, 0.0, 0.5, 2.0]]),
         "nested lists, zip, generator sum"),
    Case("parse_records", "py", parse_records, lambda: (["a=1", "b = 22", "oops", "c=x", "d=-4"],),
         lambda: (["k1=10", "k2=20", "=", "k3 = 7", "bad line", "k4=0"],), "try/except in a loop"),
    Case("softmax", "np", softmax, lambda: (_rng(1).standard_normal((8, 16)),),
         lambda: (_rng(2).standard_normal((5, 32)),), "softmax over the last axis"),
    Case("layer_norm", "np", layer_norm, lambda: _layer_norm_args(3, 8, 16), lambda: _layer_norm_args(4, 12, 24),
         "layer norm"),
    Case("mlp_forward", "np", mlp_forward, lambda: _mlp_args(5, 8, 16, 32, 4), lambda: _mlp_args(6, 3, 10, 20, 2),
         "matmul + bias + relu, matmul + tanh"),
    Case("gelu", "np", gelu, lambda: (_rng(7).standard_normal((16, 16)),),
         lambda: (_rng(8).standard_normal((9, 40)),), "elementwise chain (GELU)"),
    Case("huber_clip", "np", huber_clip, lambda: (_rng(9).standard_normal(64) * 2, _rng(10).standard_normal(64)),
         lambda: (_rng(11).standard_normal(100) * 3, _rng(12).standard_normal(100)), "elementwise, where, clip"),
    Case("axis_stats", "np", axis_stats, lambda: (_rng(13).standard_normal((10, 6)),),
         lambda: (_rng(14).standard_normal((7, 15)),), "reductions with axis"),
    Case("branchy", "np", branchy, lambda: (_rng(15).standard_normal((6, 5)) + 1.0,),
         lambda: (_rng(16).standard_normal((4, 9)) - 1.0,), "data-dependent branch (other branch on b)"),
    Case("with_print", "np", with_print, lambda: (_rng(17).standard_normal((6, 8)), _rng(18).standard_normal((8, 4))),
         lambda: (_rng(19).standard_normal((3, 5)), _rng(20).standard_normal((5, 7))), "print between parts"),
    Case("sum_of_list", "np", sum_of_list,
         lambda: ([_rng(21 + i).standard_normal(32) for i in range(4)], [0.5, 1.0, 1.5, 2.0]),
         lambda: ([_rng(31 + i).standard_normal(50) for i in range(6)], [1.0, -1.0, 2.0, 0.5, 0.25, 3.0]),
         "loop over a list of arrays"),
    Case("attention", "np", attention,
         lambda: tuple(_rng(41 + i).standard_normal((8, 16)) for i in range(3)),
         lambda: tuple(_rng(51 + i).standard_normal((5, 8)) for i in range(3)), "scaled dot-product attention"),
]

BY_NAME = {c.name: c for c in CASES}
