"""Differential tests of closures and functions made inside the frame (seed 000, PaddleSOT test_19_closure and
test_13_make_function): cells of the frame (MAKE_CELL, LOAD_DEREF, STORE_DEREF, DELETE_DEREF, LOAD_CLOSURE),
MAKE_FUNCTION with defaults, keyword defaults, annotations and closures, nested functions and lambdas called
inline, `nonlocal` writes, closures made by an inlined call that escape the frame (rebuilt with their cells),
closures received from outside (their cells read through ``__closure__``), cells shared with code outside
the translation (writes run for real), and globals assigned after being read.

Each case pins its break count: zero where everything is simulated.
PYTEST_DONT_REWRITE: the test subjects are plain Python, pytest must not rewrite them."""

from differential import by_version, case, isolated_check, run_cases  # noqa: F401


def make_adder(n):
    def add(x):
        return x + n
    return add


def make_counter(start):
    count = start

    def step(by=1):
        nonlocal count
        count += by
        return count
    return step


def make_resettable_counter():
    count = 0

    def step(by=1):
        nonlocal count
        count += by
        return count

    def reset():
        nonlocal count
        count = 0
    return step, reset


def closure_from_factory(a):
    add3 = make_adder(3)
    return add3(a), add3(a + 1)


def closure_factory_escapes_break(a):
    # The adder (a cell made by the inlined factory) must be rebuilt at the break.
    add = make_adder(a)
    print("mid", a)
    return add(10)


def closure_factory_returned(a):
    add = make_adder(a)
    return add(1), add.__closure__[0].cell_contents


def counter_inline(a):
    step = make_counter(a)
    step()
    step(5)
    return step()


def nonlocal_then_break(a):
    n = a

    def inc():
        nonlocal n
        n += 1
    inc()
    print("n is", n)
    inc()
    return n


def nonlocal_then_return(a):
    n = a

    def inc(k):
        nonlocal n
        n += k
        return n
    inc(2)
    return inc(3), n


def cell_deleted(a):
    x = a

    def get():
        return x
    first = get()
    del x
    try:
        get()
    except NameError as e:
        return first, str(e)
    return first, None


def cell_rebound_twice(a):
    x = a

    def get():
        return x * 2
    r1 = get()
    x = a + 1
    r2 = get()
    x = "s"
    return r1, r2, get()


def recursive_inner(n):
    def fact(k):
        return 1 if k <= 1 else k * fact(k - 1)
    return fact(n)


def recursive_inner_escapes(n):
    def fact(k):
        return 1 if k <= 1 else k * fact(k - 1)
    print("fact made")
    return fact(n)


def three_levels(a):
    def level1(x):
        def level2(y):
            def level3(z):
                return a + x + y + z
            return level3(3)
        return level2(2)
    return level1(1)


def lambdas_in_loop(n):
    fs = []
    for i in range(n):
        fs.append(lambda x, i=i: x + i)
    total = 0
    for f in fs:
        total += f(10)
    return total


def lambda_late_binding_loop(n):
    fs = []
    for i in range(n):
        fs.append(lambda: i)  # noqa: B023 - the late binding is the point
    return [f() for f in fs]


def kwonly_defaults(a):
    def inner(x, *, scale=2, shift=a):
        return x * scale + shift
    return inner(1), inner(1, scale=3), inner(2, shift=0)


def annotated_inner(a):
    def inner(x: int, y: "str" = "s") -> str:
        return str(x) + y
    return inner(a), inner.__annotations__


def varargs_closure(a):
    def inner(*args):
        return a + len(args)
    return inner(1, 2, 3)


def closure_over_loop_var(n):
    total = 0
    for i in range(n):
        def get():
            return i * 10
        total += get()
    return total


def inner_returns_inner(a):
    def outer():
        def inner():
            return a + 1
        return inner
    return outer()()


def function_identity(a):
    def f():
        return a
    g = f
    h = [f]
    return g is f, h[0] is f, g()


def function_stored_in_global(a):
    global g_fn_result

    def f():
        return a * 2
    g_fn_result = f()
    return g_fn_result


g_a = 1
g_b = 2


def global_read_then_assigned():
    # The value of g_a read before it is reassigned must be the old one in the generated code.
    global g_a, g_b
    t = g_a
    g_a = 10
    g_b = t
    return g_a, g_b


def global_assigned_twice():
    global g_a
    g_a = 5
    g_a = g_a + 1
    return g_a


# Closures received from outside: made at import, their cells read through __closure__. The counters reset
# themselves first (every run of a case must start from the same state).
module_adder = make_adder(100)
module_counter, module_counter_reset = make_resettable_counter()


def call_module_closure(a):
    return module_adder(a)


def call_module_counter(a):
    # The counter writes a cell that exists outside the translation: the write runs for real (a break).
    module_counter_reset()
    return module_counter(a), module_counter(a)


def outer_with_siblings():
    n = 0

    def inc():
        nonlocal n
        n += 1

    def read():
        inc()
        return n

    def reset():
        nonlocal n
        n = 0
    return read, reset


sibling_read, sibling_reset = outer_with_siblings()


def call_sibling_closures():
    # read() is translated with n as a free variable; inc (inlined) writes the same cell: the write runs for
    # real, and the read after it sees the new value.
    sibling_reset()
    return sibling_read(), sibling_read()


def free_var_read_after_outside_write():
    module_counter_reset()
    module_counter(3)
    return module_counter(0)


CASES = [
    case(closure_from_factory, 1, breaks=0),
    case(closure_factory_escapes_break, 2, breaks=1),
    case(closure_factory_returned, 4, breaks=2),
    case(counter_inline, 1, breaks=0),
    case(nonlocal_then_break, 5, breaks=3),
    case(nonlocal_then_return, 1, breaks=0),
    case(cell_deleted, 3, breaks=2),
    case(cell_rebound_twice, 2, breaks=0),
    case(recursive_inner, 5, breaks=0),
    case(recursive_inner_escapes, 4, breaks=1),
    case(three_levels, 10, breaks=0),
    case(lambdas_in_loop, 4, breaks=0),
    case(lambda_late_binding_loop, 3, breaks=0),
    case(kwonly_defaults, 3, breaks=0),
    case(annotated_inner, 3, breaks=1),
    case(varargs_closure, 1, breaks=0),
    case(closure_over_loop_var, 4, breaks=0),
    case(inner_returns_inner, 1, breaks=0),
    case(function_identity, 2, breaks=0),
    case(function_stored_in_global, 3, breaks=0),
    case(global_read_then_assigned, init={"g_a": 1, "g_b": 2}, breaks=0),
    case(global_assigned_twice, init={"g_a": 1}, breaks=0),
    case(call_module_closure, 5, breaks=0),
    case(call_module_counter, 2, breaks=6),
    case(call_sibling_closures, breaks=8),
    case(free_var_read_after_outside_write, breaks=6),
]


@run_cases(CASES)
def test_closures(fn, args, kwargs, breaks, fallbacks, init):
    isolated_check(fn, args, kwargs, breaks, fallbacks, init)
