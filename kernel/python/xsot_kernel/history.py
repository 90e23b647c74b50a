"""History replies for the kernel, answered from IPython's history database.

Each function returns the reply content as a JSON string (the C++ side parses it). IPython names the running
session 0; Jupyter clients expect real session numbers, so rows of session 0 are reported under the current one.
"""

import json

from IPython import get_ipython


def _rows(entries, output):
    manager = get_ipython().history_manager
    current = manager.session_number
    rows = []
    for session, line, value in entries:
        session = current if session == 0 else session
        if output:
            source, out = value
            rows.append([session, line, [source, out if out is not None else ""]])
        else:
            rows.append([session, line, value])
    return rows


def _reply(entries, output):
    return json.dumps({"status": "ok", "history": _rows(entries, output)})


def tail(n, raw, output):
    manager = get_ipython().history_manager
    return _reply(manager.get_tail(n, raw=raw, output=output, include_latest=True), output)


def range(session, start, stop, raw, output):  # noqa: A001 - the protocol's name
    manager = get_ipython().history_manager
    current = manager.session_number
    if session == current:
        session = 0
    return _reply(manager.get_range(session, start, stop, raw=raw, output=output), output)


def search(pattern, raw, output, n, unique):
    manager = get_ipython().history_manager
    return _reply(manager.search(pattern, raw=raw, output=output, n=n or None, unique=unique), output)
