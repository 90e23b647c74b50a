"""Shrinks a failing program to a small one that fails the same way: one-step reductions of its syntax tree,
each kept when the program still fails with the same signature, tried until none is left or time runs out.

Each reduction yields the edits it can make to a freshly parsed tree (an edit changes the tree in place), biggest
first: drop a statement; put a compound statement's body (or else/finally part) in its place; drop an except,
else or finally clause; drop one of ``f``'s parameters with its argument in every call; drop an element of a
list, tuple, set or dict display or an argument of a call (an argument set of ``CALLS`` among them); put a
subexpression in the place of its parent (not inside ``CALLS``: an argument built as an array stays one)."""

import ast
import time
import warnings

COMPOUND = (ast.If, ast.For, ast.While, ast.Try, ast.With)


def _statement_lists(tree):
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            stmts = getattr(node, field, None)
            if isinstance(stmts, list) and stmts and isinstance(stmts[0], ast.stmt):
                yield stmts


def _calls(tree):
    """The value assigned to ``CALLS``."""
    return next((n.value for n in tree.body if isinstance(n, ast.Assign)
                 and getattr(n.targets[0], "id", None) == "CALLS"), None)


def drop_statement(tree):
    for stmts in _statement_lists(tree):
        for j in range(len(stmts)):
            def edit(stmts=stmts, j=j):
                del stmts[j]
                if not stmts:
                    stmts.append(ast.Pass())
            yield edit


def unwrap(tree):
    for stmts in _statement_lists(tree):
        for j, stmt in enumerate(stmts):
            for field in ("body", "orelse", "finalbody") if isinstance(stmt, COMPOUND) else ():
                if getattr(stmt, field, None):
                    def edit(stmts=stmts, j=j, part=getattr(stmt, field)):
                        stmts[j:j + 1] = part
                    yield edit


def drop_clause(tree):
    for node in ast.walk(tree):
        for j in range(len(node.handlers)) if isinstance(node, ast.Try) else ():
            yield lambda node=node, j=j: node.handlers.pop(j)
        for field in ("orelse", "finalbody"):
            if getattr(node, field, None):
                yield lambda node=node, field=field: setattr(node, field, [])


def drop_parameter(tree):
    f = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "f"), None)
    calls = _calls(tree)
    if f is None or not isinstance(calls, ast.List) or not all(
            isinstance(c, ast.Tuple) and len(c.elts) == 2 and isinstance(c.elts[0], (ast.Tuple, ast.List))
            and isinstance(c.elts[1], ast.Dict) for c in calls.elts):
        return
    params, defaults = f.args.args, f.args.defaults
    for j in range(len(params)):
        def edit(j=j):
            name = params.pop(j).arg
            if j >= len(params) + 1 - len(defaults):  # a parameter with a default
                del defaults[j - (len(params) + 1 - len(defaults))]
            for call in calls.elts:
                positional, keywords = call.elts
                if j < len(positional.elts):
                    del positional.elts[j]
                for k in [k for k, key in enumerate(keywords.keys) if getattr(key, "value", None) == name]:
                    del keywords.keys[k], keywords.values[k]
        yield edit


def drop_element(tree):
    for node in ast.walk(tree):
        fields = {ast.List: ["elts"], ast.Tuple: ["elts"], ast.Set: ["elts"], ast.Dict: ["keys", "values"],
                  ast.Call: ["args"]}.get(type(node), [])
        for j in range(len(getattr(node, fields[0]))) if fields else ():
            def edit(node=node, j=j, fields=fields):
                for field in fields:
                    del getattr(node, field)[j]
            yield edit
        for j in range(len(node.keywords)) if isinstance(node, ast.Call) else ():
            yield lambda node=node, j=j: node.keywords.pop(j)


def _loads(node):
    return isinstance(node, ast.expr) and not isinstance(getattr(node, "ctx", None), (ast.Store, ast.Del))


def hoist(tree):
    arguments = {id(n) for n in ast.walk(_calls(tree) or ast.Pass())}
    for node in ast.walk(tree):
        if id(node) in arguments:
            continue
        for field, value in ast.iter_fields(node):
            slots = enumerate(value) if isinstance(value, list) else [(None, value)]
            for j, expr in slots:
                for child in ast.iter_child_nodes(expr) if _loads(expr) else ():
                    if _loads(child):
                        def edit(node=node, field=field, j=j, child=child):
                            if j is None:
                                setattr(node, field, child)
                            else:
                                getattr(node, field)[j] = child
                        yield edit


REDUCTIONS = [drop_statement, unwrap, drop_clause, drop_parameter, drop_element, hoist]


def shrink(source, still_fails, seconds=120):
    """The smallest program found from ``source`` for which ``still_fails(source)`` holds, within ``seconds``."""
    deadline = time.monotonic() + seconds
    normalized = ast.unparse(ast.parse(source)) + "\n"
    if still_fails(normalized):
        source = normalized
    changed = True
    while changed and time.monotonic() < deadline:
        changed = False
        for reduction in REDUCTIONS:
            i = 0
            while time.monotonic() < deadline:
                tree = ast.parse(source)
                edits = list(reduction(tree))
                if i >= len(edits):
                    break
                edits[i]()
                try:
                    candidate = ast.unparse(tree) + "\n"
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", SyntaxWarning)
                        compile(candidate, "<shrink>", "exec")
                except (SyntaxError, ValueError, TypeError, AttributeError):
                    candidate = None
                if candidate is not None and candidate != source and still_fails(candidate):
                    source, changed = candidate, True  # the same index now names the next edit
                else:
                    i += 1
    return source
