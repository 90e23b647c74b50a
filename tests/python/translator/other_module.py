"""Functions of another module, inlined by the translator with their own globals (test_diff_modules.py)."""

SCALE = 4
_registry = []


def scaled(x):
    return x * SCALE + offset()


def offset():
    return len(_registry)


def register(item):
    _registry.append(item)
    return len(_registry)


def uses_builtin(xs):
    return max(xs) + len(xs)


def set_scale(value):
    global SCALE
    SCALE = value


class Point:
    def __init__(self, x, y):
        self.x = x
        self.y = y

    def norm1(self):
        return abs(self.x) + abs(self.y)


def make_adder(n):
    def add(x):
        return x + n + SCALE
    return add
