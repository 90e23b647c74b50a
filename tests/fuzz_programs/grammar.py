"""Random programs for the differential fuzzer, as source text: a module holding a fixed prelude (a user class, an
exception class, helpers taking ``*args``/``**kwargs``, a generator, ``g_*`` globals), one ``def f(...)`` made of
random statements, and ``CALLS``, the ``(args, kwargs)`` pairs to call it with: values of the same types with
other values, lengths, dtypes and shapes.

Expressions come from typed templates (``PRODUCTIONS``): ``{int}`` is any int expression, ``{@list}`` a variable
holding a list (the target of a change), ``{x}``/``{y}`` a fresh comprehension variable. Statements are changes
to variables, containers, attributes, globals and NumPy arrays (in place), prints, NumPy error states, and the
compound statements (if, bounded for/while loops with break/continue, try/except/finally, closures with
nonlocal, ``with np.errstate``). Every program terminates quickly (loops run at most a few times, sizes and
exponents are taken ``% n``) and the same seed always gives the same text."""

import math
import random
import re

PRELUDE = '''\
import numpy as np


class Box:
    def __init__(self, x, y):
        self.x = x
        self.y = y

    def __repr__(self):
        return "Box(%r)" % (sorted(self.__dict__.items()),)

    def total(self):
        return self.x + len(self.y)

    def grow(self, n):
        self.x += n
        return self

    @property
    def double(self):
        return self.x * 2


class Oops(Exception):
    pass


def pack(*args, **kwargs):
    return args, sorted(kwargs.items())


def mix(a, b=2, *rest, c=3, **kw):
    return a, b, rest, c, sorted(kw.items())


def gen(n):
    for i in range(n % 5):
        yield i * i
    return n


def bump(n):
    global g_count
    g_count += n
    return g_count


def push(items, x):
    if len(items) < 50:
        items.append(x)
    return len(items)


g_count = 3
g_items = [1, 2]
g_text = "g"
g_arr = np.array([1.0, -2.0, 0.5])
'''

# The prelude's globals, as the generator's variables (a deleted one is dropped, a new one added).
PRELUDE_GLOBALS = {"g_count": "int", "g_items": "list", "g_text": "str", "g_arr": "arrx"}

INTS = [0, 1, -1, 2, 3, 5, 7, -4, 10, 255, 2**31, -2**31 - 1, 2**63, -2**70]
SMALL_INTS = [-3, -1, 0, 1, 2, 3, 4, 9]
INDEXES = ["0", "0", "1", "-1"]
FLOATS = ["0.0", "-0.0", "1.5", "-2.25", "0.1", "3.0", "1e300", "-1e-300", "float('inf')", "float('-inf')",
          "float('nan')"]
STRS = ["", "a", "abc", "x\x00y", "\xe9", "\u65e5\u672c\u8a9e", "\\", '"', "'", "a\tb\nc", "\U0001f600", "Ab Cd",
        "1.5", "10", "\u200b", "\x7f", "{}%s"]
KEYS = ["a", "b", "k", "\xe9", "", "x y"]
IDENTS = ["k", "c", "key", "\xe9"]
DTYPES = ["float64", "float32", "int64", "int32", "bool_"]
MODES = ["ignore", "warn", "raise"]
CLASSES = ["int", "float", "str", "bool", "(list, tuple)", "np.ndarray", "Box", "np.floating", "dict", "np.integer"]

# Types a value may have (``arr``: the arguments' shape, ``arrx``: any other shape, ``num``: a NumPy scalar) and
# the unions templates may ask for.
PRINTABLE = ["int", "float", "str", "bool", "list", "tuple", "dict", "set", "arr", "arrx", "num", "obj"]
UNIONS = {"scalar": ["int", "float", "num", "bool"], "anyarr": ["arr", "arrx"], "any": PRINTABLE,
          "eq": ["int", "float", "str", "list", "tuple", "dict", "obj", "bool"]}

PRODUCTIONS = {
    "int": ["({int} + {int})", "({int} - {int})", "({int} * {int})", "({int} // {int})", "({int} % {int})",
            "({int} & {int})", "({int} ^ {int})", "({int} << ({int} % 8))", "(-{int})", "abs({int})",
            "({int} ** {small})", "len({list})", "len({str})", "len({dict})", "len({set})", "len({tuple})",
            "len({anyarr})", "sum({list})", "min({list})", "max({list}, default={int})", "{list}[{idx}]",
            "{list}.count({int})", "{list}.index({int})", "{tuple}[{idx}]", "{dict}.get({key}, {int})",
            "{dict}[{key}]", "{@dict}.setdefault({key}, {int})", "{@list}.pop()", "int({float})", "round({float})",
            "({int} if {bool} else {int})", "{obj}.x", "{@obj}.total()", "sum(gen({int}))",
            "next(gen({int}), {int})", "{str}.find({str})", "ord({str}[{idx}])", "{@fn}({int})",
            "sum({@genfn}({int}))", "{anyarr}.size", "int({num})", "({int}).bit_length()",
            "sum({x} * {x} for {x} in {list})", "len([{x} for {x} in {list} if {x} > {int}])",
            "{@set}.pop()", "{@dict}.pop({key}, {int})", "bump({int})", "push({@list}, {int})", "{obj}.double",
            "{@obj}.grow({int}).x", "min({list}, key=abs, default={int})"],
    "float": ["({float} + {float})", "({float} * {int})", "({float} / {float})", "({int} / {int})",
              "({float} - {num})", "float({int})", "float({str})", "abs({float})", "(-{float})", "({float} ** 2)",
              "min({float}, {float})", "max({float}, {int})", "round({float}, {small})", "float({num})",
              "({float} if {bool} else {float})", "sum([{float}, {float}])", "({float} % {float})"],
    "num": ["{anyarr}.sum()", "{anyarr}.max()", "{anyarr}.min()", "{anyarr}.mean()", "{arr}[{idx}]",
            "np.float32({float})", "np.int64({int})", "np.int32({small})", "{anyarr}.prod()", "np.dot({arr}, {arr})",
            "({num} + {scalar})", "({num} * {num})", "np.float64({int})", "{anyarr}.std()", "np.sum({anyarr})",
            "np.bool_({bool})", "({num} / {scalar})", "np.median({anyarr})", "np.average({arr})",
            "np.polyval({arr}.reshape(-1), {float})", "np.mean([{num}, {num}])", "abs({num})",
            "np.percentile({arr}, 50)", "max({num}, {num})"],
    "str": ["({str} + {str})", "({str} * ({int} % 4))", "{str}[{small}:{small}]", "{str}[::-1]", "{str}[{idx}]",
            "{str}.upper()", "{str}.lower()", "{str}.strip()", "{str}.replace({nstr}, {str})", "str({any})",
            "repr({any})", "('%s/%r' % ({any}, {any}))", "{str}.join([{str}, {str}])", "','.join(map(str, {list}))",
            "chr(({int} % 1000) + 32)", "type({any}).__name__", "{str}.title()", "format({float}, '.3g')",
            "{str}.zfill(6)", "{str}.center(7, '*')", "{fstring}", "{str}.format({any})",
            "''.join(sorted({dict}))"],
    "bool": ["({int} < {int})", "({float} <= {float})", "({str} < {str})", "({eq} == {eq})", "({int} in {list})",
             "({key} in {dict})", "({int} in {set})", "(not {bool})", "({bool} and {bool})", "({bool} or {bool})",
             "isinstance({any}, {cls})", "bool({list})", "{str}.startswith({str})", "{str}.isdigit()",
             "hasattr({obj}, 'z')", "bool({anyarr}.any())", "bool({anyarr}.all())", "({num} > {scalar})",
             "any({x} > {int} for {x} in {list})", "({list} == {list})", "({tuple} < {tuple})", "({@any} is None)",
             "{set}.issubset({set})", "({int} != {float})"],
    "list": ["[{int}, {int}]", "[{int}]", "[]", "list(range({int} % 6))", "sorted({list})",
             "sorted({list}, reverse=True)", "({list} + {list})", "{list}[{small}:{small}]", "{list}[::-1]",
             "{list}[::2]", "[({x} * {int}) for {x} in {list}]", "[{x} for {x} in {list} if {x} % 2]",
             "list({tuple})", "list({set})", "sorted({set})", "list({dict}.values())", "({list} * ({int} % 3))",
             "list(gen({int}))", "[({x} + {y}) for {x}, {y} in zip({list}, {list})]", "list(map(abs, {list}))",
             "list(filter(None, {list}))", "{list}.copy()", "[*{list}, *{tuple}]", "list(reversed({list}))",
             "list({@genfn}({int}))", "[{x} for {x}, _ in enumerate({list})]",
             "sorted({list}, key=lambda {x}: -{x})", "sorted({dict}.values())"],
    "tuple": ["({int}, {int})", "({int},)", "()", "tuple({list})", "({tuple} + {tuple})", "{tuple}[1:]",
              "tuple(sorted({set}))", "divmod({int}, {int})", "{anyarr}.shape", "tuple({x} % 3 for {x} in {list})",
              "(*{list}, {int})"],
    "dict": ["{{key}: {int}, {key}: {int}}", "{{key}: {int}}", "dict({dict})",
             "{{x}: {y} * 2 for {x}, {y} in {dict}.items()}", "dict(zip([{key}, {key}], {list}))",
             "{**{dict}, {key}: {int}}", "{dict}.copy()", "({dict} | {dict})", "{}", "dict({ident}={int})"],
    "set": ["{{int}, {int}}", "set({list})", "({set} | {set})", "({set} & {set})", "({set} - {set})",
            "({set} ^ {set})", "{{x} % 3 for {x} in {list}}", "set()", "set(range({int} % 5))", "{set}.copy()",
            "{set}.union({list})"],
    "arr": ["({arr} + {arr})", "({arr} * {scalar})", "({arr} - {scalar})", "({arr} / {scalar})",
            "({arr} // {scalar})", "({arr} % {scalar})", "({arr} ** {small})", "({scalar} - {arr})", "(-{arr})",
            "np.abs({arr})", "np.sqrt({arr})", "np.exp({arr})", "np.log({arr})",
            "np.where({arr} > {scalar}, {arr}, {scalar})", "np.where({arr} < {arr}, {arr}, {arr})",
            "{arr}.astype({dt})", "{arr}.copy()", "np.maximum({arr}, {scalar})", "np.minimum({arr}, {arr})",
            "np.zeros_like({arr})", "np.ones_like({arr}, dtype={dt})", "np.cumsum({arr}, axis=-1)",
            "np.clip({arr}, {scalar}, {scalar})", "({arr} > {scalar})", "({arr} == {arr})", "({arr} & {arr})",
            "np.sort({arr})", "{arr}[::-1]", "np.square({arr})", "np.sign({arr})", "np.floor({arr})",
            "np.logical_not({arr})", "np.isnan({arr})", "({arr} * {arr})", "np.true_divide({arr}, {arr})",
            "(np.float32({float}) * {arr})", "({arr} @ {arr}.T)", "np.isclose({arr}, {scalar})",
            "np.conjugate({arr})", "abs({arr})"],
    "arrx": ["{arr}[1:]", "{arr}[::2]", "{anyarr}.reshape(-1)",
             "np.concatenate([{anyarr}.reshape(-1), {anyarr}.reshape(-1)])", "np.arange({int} % 6)",
             "np.ones({int} % 5, dtype={dt})", "np.zeros(({small} % 3, 2))", "{arr}[{arr} > {scalar}]", "{arr}.T",
             "np.array({list}, dtype={dt})", "np.linspace(0, 1, ({small} % 4) + 1)", "({arrx} * {scalar})",
             "np.sort({arrx})", "{arrx}[::-1]", "np.unique({anyarr})", "np.cumsum({anyarr})",
             "{anyarr}.sum(axis=0)", "np.nonzero({anyarr})[0]", "({arrx} + {arrx})", "np.repeat({anyarr}, 2)",
             "np.tile({arr}, 2)", "np.diff({anyarr}.reshape(-1))", "np.hstack([{anyarr}.reshape(-1), {arr}])",
             "np.append({arr}, {scalar})", "np.pad({arr}, 1)", "np.flatnonzero({anyarr})",
             "np.gradient({arr}.reshape(-1) * 1.0)", "np.array([{num}, {num}])", "np.asarray({arr}, dtype=float)"],
    "obj": ["Box({int}, {list})"],
    "any": ["pack({int}, *{list}, key={str}, **{dict})", "pack(*{tuple}, {any})", "mix({int})",
            "mix({int}, {float}, *{list}, c={str})", "mix(*{tuple}, **{dict})", "divmod({float}, {float})",
            "list({dict}.items())", "list(enumerate({list}))", "{str}.encode()", "{str}.split({nstr})",
            "{anyarr}.tolist()", "np.where({arr} > {scalar})", "{obj}.y"],
}

# Statements of one line; ``{@t}`` is an existing variable (the template is skipped when there is none).
STATEMENTS = [
    "{@list}.append({int})", "{@list}.extend({list})", "{@list}.insert({int}, {int})", "{@list}.pop()",
    "{@list}.remove({int})", "{@list}.sort()", "{@list}.reverse()", "del {@list}[{idx}]",
    "del {@list}[{small}:{small}]", "{@list}[{small}:{small}] = {list}", "{@list}[{idx}] = {int}",
    "{@list} += {list}", "{@list}.clear()", "{@dict}.update({dict})", "{@dict}.update({ident}={int})",
    "{@dict}.setdefault({key}, {int})", "{@dict}[{key}] = {int}", "{@dict}[{key}] += {int}", "del {@dict}[{key}]",
    "{@dict}.pop({key}, None)", "{@set}.add({int})", "{@set}.discard({int})", "{@set}.remove({int})",
    "{@set}.update({list})", "{@set} |= {set}", "{@obj}.x = {int}", "{@obj}.x += {int}", "{@obj}.y.append({int})",
    "{@obj}.z = {scalar}", "{@obj}.z = {list}", "del {@obj}.z", "{@arr} += {scalar}", "{@arr} *= {scalar}",
    "{@arr} -= {arr}", "{@arr}[{idx}] = {scalar}", "{@arr}[1:] = {scalar}", "{@arr}[{arr} > {scalar}] = {scalar}",
    "{@arrx} += {scalar}", "{@arrx}[{idx}] = {scalar}", "{@int} += {int}", "{@int} *= {int}",
    "{@int} //= {int}", "{@float} += {float}", "{@float} /= {float}", "{@str} += {str}", "{@tuple} += {tuple}",
    "print({any})", "print({any}, {any}, sep={str})", "print({any}, end={str})", "print(*{list}, sep={str})",
    "np.seterr(all={mode})", "np.seterr(divide={mode}, invalid={mode})", "{@arr}.sort()",
    "np.add({arr}, {scalar}, out={@arr})", "np.multiply({arr}, {arr}, out={@arr})", "{@list}[::2] = {@list}[1::2]",
]

# Statements for the bodies of long loops (issue 36's): each grows nothing by more than an item a step.
LONG_LOOP_STATEMENTS = [
    "{@obj}.x += {small}", "{@arr} += {scalar}", "{@arr}[{idx}] = {scalar}", "{@int} += {small}",
    "{@float} += 0.5", "print({num})", "bump({small})", "push({@list}, {small})", "{@dict}[{key}] = {int}",
    "{@arr}[{@arr} > {scalar}] = {scalar}", "np.add({arr}, {scalar}, out={@arr})",
]

# What a for loop iterates over (a few items: two nested loops that double a list stay small; a dict has a few
# keys) and the type of its variable.
LOOPS = [("range({int} % 4)", "int"), ("{list}[:3]", "int"), ("{tuple}[:3]", "int"), ("sorted({set})[:3]", "int"),
         ("gen({int})", "int"), ("{str}[:3]", "str"), ("{anyarr}[:3]", "num"), ("{@genfn}({int})", "int"),
         ("{dict}", "str")]

# Half the programs are pure Python: no NumPy values, templates or statements.
NUMPY_TYPES = ("arr", "arrx", "num")
_NUMPY = re.compile(r"np\.|\{@?(arr|arrx|anyarr|num)\}")
PURE_PRODUCTIONS = {t: [p for p in ps if not _NUMPY.search(p)] for t, ps in PRODUCTIONS.items()}
PURE_STATEMENTS = [s for s in STATEMENTS if not _NUMPY.search(s)]

_PLACEHOLDER = re.compile(r"\{(@?\w+)\}")
_ASSIGNED = re.compile(r"^\{@\w+\} \S*= ")  # the statement rebinds its variable (a global needs a declaration)


class _Skip(Exception):
    """The template needs a variable that does not exist."""


class Generator:
    """Builds one program from a seed (see the module's doc)."""

    def __init__(self, seed):
        self.rng = random.Random(seed)
        self.rng36 = random.Random(f"{seed}/36")  # (issue 36's statements: a stream of their own)
        self.numpy = self.chance(0.5)
        self.types = [t for t in PRINTABLE if self.numpy or t not in NUMPY_TYPES]
        self.productions = PRODUCTIONS if self.numpy else PURE_PRODUCTIONS
        self.statements = STATEMENTS if self.numpy else PURE_STATEMENTS
        self.loop_iterables = [it for it in LOOPS if self.numpy or not _NUMPY.search(it[0])]
        # name -> type: globals, then f's locals and nested blocks
        self.scopes = [{n: t for n, t in PRELUDE_GLOBALS.items() if t in self.types}]
        self.lines = []
        self.indent = 1
        self.loops = 0  # enclosing loops (break and continue allowed)
        self.count = 0
        self.globals_written = set()

    # -- helpers ------------------------------------------------------------------------------------------------
    def chance(self, p):
        return self.rng.random() < p

    def fresh(self, prefix):
        self.count += 1
        return f"{prefix}{self.count}"

    def members(self, t):
        """The types a value of type or union ``t`` may have in this program."""
        return [m for m in UNIONS.get(t, [t]) if m in self.types or m not in PRINTABLE]

    def variables(self, types):
        return [n for scope in self.scopes for n, t in scope.items() if t in types]

    def variable(self, t):
        """A variable of type ``t``, more often one of ``f``'s than a global."""
        names = self.variables(self.members(t))
        if not names:
            raise _Skip(t)
        local = [n for n in names if not n.startswith("g_")]
        return self.rng.choice(local if local and self.chance(0.8) else names)

    def emit(self, line):
        self.lines.append("    " * self.indent + line)

    # -- expressions --------------------------------------------------------------------------------------------
    def literal(self, t):
        """A literal (a constructor call for arrays and instances) of type or union ``t``."""
        r = self.rng
        if t in UNIONS:
            return self.literal(r.choice(self.members(t)))
        small = lambda n: ", ".join(str(r.choice(SMALL_INTS)) for _ in range(r.randint(0, n)))  # noqa: E731
        return {
            "int": lambda: str(r.choice(INTS)),
            "float": lambda: r.choice(FLOATS),
            "str": lambda: repr(r.choice(STRS)),
            "bool": lambda: r.choice(["True", "False"]),
            "list": lambda: f"[{small(4)}]",
            "tuple": lambda: f"({small(3)},)".replace("(,)", "()"),
            "dict": lambda: "{" + ", ".join(f"{r.choice(KEYS)!r}: {r.choice(SMALL_INTS)}"
                                            for _ in range(r.randint(0, 3))) + "}",
            "set": lambda: f"{{{small(3) or 0}}}",
            "arr": lambda: f"np.array([{small(4)}], dtype=np.{r.choice(DTYPES)})",
            "arrx": lambda: f"np.arange({r.randint(0, 4)})",
            "num": lambda: f"np.{r.choice(DTYPES[:4])}({r.choice(SMALL_INTS)})",
            "obj": lambda: f"Box({r.choice(SMALL_INTS)}, [{small(2)}])",
        }[t]()

    def expr(self, t, depth=2):
        """An expression of type ``t`` (or of a union); ``depth`` bounds the nesting of templates."""
        if t in ("fn", "genfn"):
            return self.variable(t)
        if depth <= 0 or self.chance(0.3) or t not in self.productions and t not in UNIONS:
            try:
                return self.variable(t) if self.chance(0.75) else self.literal(t)
            except _Skip:
                return self.literal(t)
        if t in UNIONS and (t not in self.productions or self.chance(0.7)):
            return self.expr(self.rng.choice(self.members(t)), depth)
        for _ in range(10):
            try:
                return self.fill(self.rng.choice(self.productions[t]), depth - 1)
            except _Skip:
                pass
        return self.literal(t)

    # Placeholders that are not expressions.
    TERMINALS = {
        "small": lambda g: str(g.rng.randint(0, 4)),
        "idx": lambda g: g.rng.choice(INDEXES),
        "key": lambda g: repr(g.rng.choice(KEYS)),
        "nstr": lambda g: repr(g.rng.choice(STRS[1:])),
        "ident": lambda g: g.rng.choice(IDENTS),
        "dt": lambda g: "np." + g.rng.choice(DTYPES),
        "mode": lambda g: repr(g.rng.choice(MODES)),
        "cls": lambda g: g.rng.choice(CLASSES),
        "fstring": lambda g: g.fstring(),
    }

    def fill(self, template, depth=2):
        """The template with each placeholder replaced (``{x}``/``{y}``: one fresh name per template)."""
        names = {}

        def one(match):
            key = match.group(1)
            if key.startswith("@"):
                return self.variable(key[1:])
            if key in ("x", "y"):
                return names.setdefault(key, self.fresh(key))
            if key in self.TERMINALS:
                return self.TERMINALS[key](self)
            return self.expr(key, depth)

        return _PLACEHOLDER.sub(one, template)

    def fstring(self):
        """An f-string over variables (its fields hold no quotes nor backslashes, which 3.11 would not accept)."""
        names = self.variables(self.types)
        if not names:
            raise _Skip("fstring")
        fields = [self.rng.choice(names) + self.rng.choice(["", "!r", ":>6", "!s:^5"])
                  for _ in range(self.rng.randint(1, 3))]
        return "f'<" + "|".join("{" + f + "}" for f in fields) + ">'"

    # -- statements ---------------------------------------------------------------------------------------------
    def block(self, n, loop=False):
        """``n`` statements one level deeper, in a scope of their own (``loop``: the body of a loop)."""
        saved = self.loops
        self.loops += loop
        self.indent += 1
        self.scopes.append({})
        for _ in range(n):
            self.statement()
        self.scopes.pop()
        self.indent -= 1
        self.loops = saved

    def statement(self):
        """One statement of a kind allowed here (compound ones nest two deep; break and continue in loops)."""
        nested = self.indent < 3
        # (weight, kind, how often it is guarded by a try/except printing what it raises)
        kinds = [(8, self.assign, 0.25), (10, self.simple, 0.25), (2, self.reassign, 0.25), (1, self.unpack, 0.8)]
        if nested:
            kinds += [(2, self.if_, 0), (2, self.for_, 0), (1, self.while_, 0), (2, self.try_, 0),
                      (2, self.closure, 0)]
            if self.numpy:
                kinds.append((1, self.errstate, 0))
        if self.loops:
            kinds.append((2, self.jump, 0))
        if self.indent == 1:
            kinds += [(1, self.global_, 0), (1, self.early_exit, 0)]
        for _ in range(10):
            _, fn, guard = self.rng.choices(kinds, [k[0] for k in kinds])[0]
            state = len(self.lines), len(self.scopes), self.indent
            try:
                return self.guarded(fn) if self.chance(guard) else fn()
            except _Skip:  # undo what the statement began
                del self.lines[state[0]:], self.scopes[state[1]:]
                self.indent = state[2]
        self.emit("pass")

    def guarded(self, fn):
        """``fn``'s statement, with any exception it raises caught and printed."""
        self.emit("try:")
        self.indent += 1
        self.scopes.append({})  # what it assigns may stay unbound
        fn()
        self.scopes.pop()
        self.indent -= 1
        name = self.fresh("e")
        self.emit(f"except Exception as {name}:")
        self.emit(f"    print(type({name}).__name__, {name})")

    def assign(self):
        t = self.rng.choice(self.types)
        value = self.expr(t)
        name = self.fresh("v")
        self.emit(f"{name} = {value}")
        self.scopes[-1][name] = t

    def reassign(self):
        name = self.variable("any")
        t = next(s[name] for s in reversed(self.scopes) if name in s)
        self.write(name)
        self.emit(f"{name} = {self.expr(t)}")

    def unpack(self):
        """Two new variables from a tuple or list, or its first item and a starred rest."""
        first, second = self.fresh("v"), self.fresh("v")
        if self.chance(0.5):
            self.emit(f"{first}, *{second} = {self.expr('list')}")
            types = ("int", "list")
        else:
            self.emit(f"{first}, {second} = {self.expr(self.rng.choice(['tuple', 'list']))}")
            types = ("int", "int")
        self.scopes[-1].update(zip((first, second), types))

    def write(self, name):
        if name.startswith("g_"):
            self.globals_written.add(name)

    def simple(self):
        template = self.rng.choice(self.statements)
        line = self.fill(template)
        if _ASSIGNED.match(template):
            self.write(re.match(r"\w+", line).group())
        self.emit(line)

    def if_(self):
        self.emit(f"if {self.expr('bool')}:")
        self.block(self.rng.randint(1, 3))
        if self.chance(0.5):
            self.emit("else:")
            self.block(self.rng.randint(1, 2))

    def for_(self):
        name = self.fresh("i")
        it, t = self.rng.choice(self.loop_iterables)
        self.emit(f"for {name} in {self.fill(it)}:")
        self.scopes.append({name: t})
        self.block(self.rng.randint(1, 3), loop=True)
        self.scopes.pop()
        if self.chance(0.2):
            self.emit("else:")
            self.block(1)

    def while_(self):
        name = self.fresh("n")
        self.emit(f"{name} = 0")
        self.emit(f"while {name} < {self.rng.randint(1, 3)}:")
        self.emit(f"    {name} += 1")  # first, so that a continue cannot skip it
        self.block(self.rng.randint(1, 3), loop=True)

    def jump(self):
        self.emit(f"if {self.expr('bool', 1)}:")
        self.emit("    " + self.rng.choice(["break", "continue"]))

    def try_(self):
        self.emit("try:")
        self.indent += 1
        self.scopes.append({})
        for _ in range(self.rng.randint(1, 2)):
            self.statement()
        if self.chance(0.5):
            self.emit(f"if {self.expr('bool', 1)}:")
            self.emit("    " + self.fill(self.rng.choice(["raise Oops({any})", "raise ValueError({str})",
                                                         "raise KeyError({int})"]), 1))
        self.scopes.pop()
        self.indent -= 1
        name = self.fresh("e")
        self.emit(f"except {self.rng.choice(['(ValueError, Oops)', 'KeyError', 'ArithmeticError'])} as {name}:")
        self.emit(f"    print('caught', type({name}).__name__, {name})")
        if self.chance(0.5):
            self.emit("except Exception as " + name + ":")
            self.emit(f"    print('other', type({name}).__name__)")
        if self.chance(0.3):
            self.emit("else:")
            self.block(1)
        if self.chance(0.5):
            self.emit("finally:")
            self.block(self.rng.randint(1, 2))

    def errstate(self):
        modes = ", ".join(f"{k}={self.rng.choice(MODES)!r}" for k in ("divide", "invalid", "over")
                          if self.chance(0.7)) or "all='ignore'"
        self.emit(f"with np.errstate({modes}):")
        self.block(self.rng.randint(1, 3))

    def closure(self):
        """A function made in ``f`` over its variables: a counter (nonlocal), a list it appends to, a lambda, or a
        generator."""
        name = self.fresh("h")
        local_ints = [n for scope in self.scopes[1:] for n, t in scope.items() if t == "int"]
        kind = self.rng.choice(["nonlocal", "append", "lambda", "generator"])
        self.scopes.append({"x": "int"})
        if kind == "nonlocal" and local_ints:
            cell = self.rng.choice(local_ints)
            self.emit(f"def {name}(x):")
            self.emit(f"    nonlocal {cell}")
            self.emit(f"    {cell} += {self.expr('int', 1)}")
            self.emit(f"    return {self.expr('int', 1)}")
        elif kind == "append":
            target = self.variable("list")
            self.emit(f"def {name}(x):")
            self.emit(f"    if len({target}) < 50:")  # a comprehension over the list may call it
            self.emit(f"        {target}.append({self.expr('int', 1)})")
            self.emit(f"    return len({target})")
        elif kind == "generator":
            self.emit(f"def {name}(x):")
            self.emit("    for y in range(x % 4):")
            self.emit(f"        yield y + {self.expr('int', 1)}")
        else:
            self.emit(f"{name} = lambda x: {self.expr('int', 2)}")
        self.scopes.pop()
        self.scopes[-1][name] = "genfn" if kind == "generator" else "fn"

    def global_(self):
        """Create, change or delete a ``g_*`` global."""
        existing = [n for n in self.scopes[0] if n.startswith("g_")]
        if existing and self.chance(0.3):
            name = self.rng.choice(existing)
            del self.scopes[0][name]
            self.globals_written.add(name)
            self.emit(f"del {name}")
            return
        name = self.fresh("g_new") if self.chance(0.5) or not existing else self.rng.choice(existing)
        t = self.scopes[0].get(name) or self.rng.choice(self.types)
        self.globals_written.add(name)
        self.emit(f"{name} = {self.expr(t)}")
        self.scopes[0][name] = t

    def early_exit(self):
        self.emit(f"if {self.expr('bool', 1)}:")
        self.emit("    " + (f"return {self.expr('any', 1)}" if self.chance(0.85) else
                            self.fill("raise Oops({int})")))

    # -- the program --------------------------------------------------------------------------------------------
    def parameters(self):
        n = self.rng.randint(1, 4)
        choices = self.types + (["arr", "arr"] if self.numpy else [])
        types = [self.rng.choice([t for t in choices if t not in ("arrx", "num")]) for _ in range(n)]
        return [(f"p{i}", t) for i, t in enumerate(types)]

    def argument(self, t, shape):
        """Source of one argument of type ``t`` (arrays: of ``shape``, of a dtype of their own)."""
        r = self.rng
        if t == "arr":
            dtype = r.choice(DTYPES)
            values = {"bool_": [True, False], "int64": SMALL_INTS + [2**40], "int32": SMALL_INTS}.get(
                dtype, [0.5, -1.0, 2.0, 3.25, 0.0, -0.0, 1e30])
            flat = [repr(r.choice(values)) for _ in range(math.prod(shape))]
            return f"np.array({_nest(flat, shape)}, dtype=np.{dtype})"
        if t == "int":
            return str(r.choice(INTS + SMALL_INTS))
        return self.literal(t)

    def alias(self, args, types):
        """Now and then one object passed for two parameters of a mutable type (a walrus names it)."""
        for i, j in [(i, j) for j in range(len(types)) for i in range(j)]:
            mutable = types[i] == types[j] and types[i] in ("list", "dict", "set", "arr", "obj")
            if mutable and ":=" not in args[i] + args[j] and self.chance(0.3):
                name = self.fresh("shared")
                args[i], args[j] = f"({name} := {args[i]})", name

    # -- issue 36: loops the translator makes loop ops of, while loops and ifs on values of the graph -----------
    def loop_statements(self):
        """Before or after ``f``'s statements, drawn from a stream of their own (``rng36``): one to three loops long
        enough to be loop ops or to test their limits - a range (a Python-number counter near 2**63 now and then),
        rows (enumerate, zip), per-step slices, a list appended to and then given to NumPy, a while loop on a value
        of the graph - with ifs on values of the graph and random statements inside. Returns the names of the
        values they leave, to be returned."""
        saved, self.rng = self.rng, self.rng36
        left = []
        try:
            for _ in range(self.rng.randint(1, 3)):
                kind = self.rng.choice([self.range_loop, self.rows_loop, self.while_graph, self.append_loop])
                state = len(self.lines), len(self.scopes), self.indent
                try:
                    left.append(kind())
                except _Skip:  # undo what the loop began
                    del self.lines[state[0]:], self.scopes[state[1]:]
                    self.indent = state[2]
        finally:
            self.rng = saved
        return left

    def loop_statement(self):
        """One of LONG_LOOP_STATEMENTS in the body of a long loop (the random statements of short loops may
        double a list or an array on every step, which twenty steps make too large)."""
        self.emit(self.fill(self.rng.choice(LONG_LOOP_STATEMENTS), 1))

    def steps(self):
        return str(self.rng.randint(17, 24))  # (more than 16: a loop op, not unrolled)

    def graph_if(self, acc):
        """An if on a value of the graph inside a loop body, changing the carried array either way."""
        self.emit(f"if {acc}.sum() > {self.rng.choice(['0.0', '1.5', '-3.0', '100.0'])}:")
        self.emit(f"    {acc} = {acc} * 0.5")
        if self.chance(0.5):
            self.emit("else:")
            self.emit(f"    {acc} = {acc} + 1.0")

    def body_extras(self, acc):
        if self.chance(0.5):
            self.graph_if(acc)
        if self.chance(0.3):
            self.emit(f"if {acc}.sum() > {self.rng.choice(['2.0', '50.0', '1e6'])}:")
            self.emit("    " + self.rng.choice(["break", "continue"]))
        if self.chance(0.3):
            self.loop_statement()

    def range_loop(self):
        acc, t, counter = self.fresh("acc"), self.fresh("t"), self.fresh("c")
        self.emit(f"{acc} = {self.expr('arr')} * 1.0")
        big = self.chance(0.3)
        if big:
            self.emit(f"{counter} = 2**63 - {self.rng.randint(1, 20)}")
        self.emit(f"for {t} in range({self.steps()}):")
        self.indent += 1
        self.scopes.append({t: "int", acc: "arr"})
        self.emit(f"{acc} = {acc} * {self.rng.choice(['0.5', '0.99', '1.01'])} + {t} * 0.25")
        if big:
            self.emit(f"{counter} += {self.rng.choice(['1', t])}")
        if self.chance(0.4):
            self.emit(f"{acc} = {acc} + {acc}.reshape(-1)[:{t} % 4].sum()")  # (a per-step slice)
        self.body_extras(acc)
        self.scopes.pop()
        self.indent -= 1
        self.scopes[-1][acc] = "arr"
        return f"{acc}, {counter}" if big else acc

    def rows_loop(self):
        rows, acc, k, row = self.fresh("rows"), self.fresh("acc"), self.fresh("k"), self.fresh("row")
        self.emit(f"{rows} = np.outer(np.arange({self.steps()}) * 0.5, {self.expr('arr')} * 1.0)")
        self.emit(f"{acc} = {rows}[0] * 0.0")
        head = self.rng.choice([f"for {row} in {rows}:", f"for {k}, {row} in enumerate({rows}):",
                                f"for {k}, {row} in zip(range(len({rows})), {rows}):"])
        self.emit(head)
        self.indent += 1
        self.scopes.append({acc: "arrx", row: "arrx"})
        scale = k if " in enumerate(" in head or " in zip(" in head else "0.75"
        self.emit(f"{acc} = {acc} + {row} * {scale}")
        self.body_extras(acc)
        self.scopes.pop()
        self.indent -= 1
        self.scopes[-1][acc] = "arrx"
        return acc

    def while_graph(self):
        n, s = self.fresh("n"), self.fresh("s")
        src = self.expr("arr")
        self.emit(f"{n} = 0")
        self.emit(f"{s} = np.abs({src} * 1.0).sum() * 0.0")
        self.emit(f"while {s} < {self.rng.choice(['5.0', '40.0', '1e3'])} and {n} < {self.steps()}:")
        self.indent += 1
        self.scopes.append({})
        self.emit(f"{n} += 1")  # (first: a continue cannot skip it)
        self.emit(f"{s} = {s} + np.abs({src} * 1.0).sum() + 0.5")
        if self.chance(0.4):
            self.emit(f"if {s} > {self.rng.choice(['3.0', '20.0'])}:")
            self.emit("    break")
        if self.chance(0.3):
            self.loop_statement()
        self.scopes.pop()
        self.indent -= 1
        return f"{n}, {s}"

    def append_loop(self):
        hist, acc, t = self.fresh("hist"), self.fresh("acc"), self.fresh("t")
        self.emit(f"{hist} = []")
        self.emit(f"{acc} = {self.expr('arr')} * 1.0")
        self.emit(f"for {t} in range({self.steps()}):")
        self.indent += 1
        self.scopes.append({acc: "arr"})
        self.emit(f"{acc} = {acc} * 0.9 + 0.1")
        self.emit(f"{hist}.append({self.rng.choice([f'{acc}.sum()', f'float({acc}.sum())', f'{t}'])})")
        if self.chance(0.3):
            self.graph_if(acc)
        self.scopes.pop()
        self.indent -= 1
        return f"{hist}, np.mean({hist}), len({hist})"

    def program(self):
        """The program's source: the prelude, ``f`` and ``CALLS``."""
        params = self.parameters()
        self.scopes.append(dict(params))
        # (the loops first in half the programs: after a statement that breaks the graph they would run in a
        # resume function)
        first = self.numpy and self.rng36.random() < 0.5
        left = self.loop_statements() if first else []
        for _ in range(self.rng.randint(3, 9)):
            self.statement()
        left += self.loop_statements() if self.numpy and not first else []
        returned = self.variables(self.types)
        picks = self.rng.sample(returned, min(len(returned), self.rng.randint(1, 3))) if returned else ["None"]
        picks = picks + left
        self.emit(f"return {', '.join(picks)}")
        # The last parameter may have a default (immutable: the calls must not change it), then is passed by
        # position, by keyword or not at all.
        names = [name for name, _ in params]
        last, last_type = params[-1]
        default = last_type in ("int", "float", "str", "bool", "tuple") and self.chance(0.4)
        if default:
            names[-1] += "=" + self.literal(last_type)
        head = [f"def f({', '.join(names)}):"]
        if self.globals_written:
            head.append(f"    global {', '.join(sorted(self.globals_written))}")
        calls = []
        ndim = self.rng.choice([1, 1, 1, 2])
        for _ in range(self.rng.randint(3, 4)):
            shape = tuple(self.rng.choice([0, 1, 2, 3, 3, 4]) if i == ndim - 1 else self.rng.randint(1, 3)
                          for i in range(ndim))
            args = [self.argument(t, shape) for _, t in params]
            self.alias(args, [t for _, t in params])
            how = self.rng.choice(["position", "keyword", "default"]) if default else "position"
            kwargs = f"{{{last!r}: {args.pop()}}}" if how == "keyword" else "{}"
            if how == "default":
                args.pop()
            calls.append(f"    (({''.join(a + ', ' for a in args)}), {kwargs}),")
        return "\n".join([PRELUDE, ""] + head + self.lines + ["", "", "CALLS = ["] + calls + ["]", ""])


def _nest(flat, shape):
    """``flat`` (item sources) as nested list source of ``shape``."""
    if len(shape) == 1:
        return "[" + ", ".join(flat) + "]"
    step = math.prod(shape[1:])
    return "[" + ", ".join(_nest(flat[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])) + "]"


def generate(seed):
    """The source of program ``seed``."""
    return Generator(seed).program()
