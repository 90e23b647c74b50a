"""Stream output batching for the xsot kernel.

xeus-python's ``sys.stdout``/``sys.stderr`` publish one Jupyter ``stream`` message per ``write()``: a cell printing
20,000 lines floods the front end with tens of thousands of messages. Here, while a cell runs, writes are kept in
one ordered buffer (stdout and stderr interleaved as written) and published:

- on a short interval after the first buffered write (``XSOT_OUTPUT_INTERVAL`` seconds, default 0.1), by a
  daemon thread, so a print in a long cell still shows within about that time;
- before anything else the cell shows (display data, clear_output, the execute result; the kernel's execute
  reply and error come after ``end_cell``), and before ``input()``/``getpass()`` prompt;
- on ``flush()`` of either stream, and when the cell ends.

Consecutive writes to the same stream become one message; a switch between stdout and stderr starts a new one,
so their order is kept. Outside a cell (a thread printing after its cell ended) writes go straight through.

Thread safety: every publish happens with the GIL held (the flushing thread is a Python thread) and only while a
cell runs, when the kernel's main thread publishes only from Python code, so publishes never overlap. One lock
orders flushes; another guards the buffer.
"""

import builtins
import getpass
import io
import os
import sys
import threading
import time

DEFAULT_INTERVAL = 0.1


def interval_from_env():
    """The flush interval in seconds: ``XSOT_OUTPUT_INTERVAL`` when it is a positive number, else 0.1."""
    text = os.environ.get("XSOT_OUTPUT_INTERVAL", "")
    try:
        value = float(text)
    except ValueError:
        return DEFAULT_INTERVAL
    return value if value > 0 else DEFAULT_INTERVAL


class OutputBatcher:
    """The ordered buffer of a cell's stream writes and the thread that publishes it on an interval."""

    def __init__(self, interval=DEFAULT_INTERVAL):
        self.interval = interval
        self._chunks = []  # [raw stream, [texts]] in write order
        self._due = 0.0  # when the oldest unpublished write must be out
        self._buffer_lock = threading.Condition(threading.Lock())
        self._publish_lock = threading.RLock()
        self._active = False
        self._thread = threading.Thread(target=self._run, name="xsot-output", daemon=True)
        self._thread.start()

    # ---- writing ----
    def write(self, raw, text):
        with self._buffer_lock:
            if not self._active:
                direct = True
            else:
                direct = False
                self._append(raw, text)
        if direct:
            raw.write(text)

    def _append(self, raw, text):  # with _buffer_lock held
        if self._chunks and self._chunks[-1][0] is raw:
            self._chunks[-1][1].append(text)
            return
        if not self._chunks:
            self._due = time.monotonic() + self.interval
            self._buffer_lock.notify()
        self._chunks.append([raw, [text]])

    def flush(self):
        """Publishes everything buffered, in write order."""
        with self._publish_lock:
            with self._buffer_lock:
                chunks, self._chunks = self._chunks, []
            for raw, texts in chunks:
                raw.write("".join(texts))

    def _run(self):
        while True:
            with self._buffer_lock:
                while not (self._chunks and self._active):
                    self._buffer_lock.wait()
                delay = self._due - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            with self._publish_lock:
                if self._active:  # a cell that ended meanwhile has published everything itself
                    self.flush()

    # ---- the cell's span ----
    def begin_cell(self):
        with self._buffer_lock:
            self._active = True
            self._due = time.monotonic() + self.interval
            self._buffer_lock.notify()

    def end_cell(self):
        with self._publish_lock:
            with self._buffer_lock:
                self._active = False
            self.flush()

    def flushing(self, fn):
        """``fn`` wrapped to publish the buffered output first (display, clear_output, input prompts)."""

        def wrapper(*args, **kwargs):
            self.flush()
            return fn(*args, **kwargs)

        wrapper.__wrapped__ = fn
        return wrapper


class BatchedStream(io.TextIOBase):
    """``sys.stdout``/``sys.stderr`` of the kernel: writes go through the batcher to xeus-python's stream."""

    def __init__(self, name, raw, batcher):
        super().__init__()
        self.name = f"<{name}>"
        self.raw = raw
        self._batcher = batcher

    @property
    def encoding(self):
        return "utf-8"

    def writable(self):
        return True

    def isatty(self):
        return False

    def write(self, text):
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        if text:
            self._batcher.write(self.raw, text)
        return len(text)

    def flush(self):
        self._batcher.flush()


_batcher = None


def install(shell):
    """Replaces sys.stdout/sys.stderr with batched streams and makes the shell's display paths flush first.
    Called once, after xeus-python has redirected the streams and set up the display publisher."""
    global _batcher
    _batcher = OutputBatcher(interval_from_env())
    sys.stdout = BatchedStream("stdout", sys.stdout, _batcher)
    sys.stderr = BatchedStream("stderr", sys.stderr, _batcher)
    pub = shell.display_pub
    for name in ("publish_display_data", "clear_output"):
        if getattr(pub, name, None) is not None:
            setattr(pub, name, _batcher.flushing(getattr(pub, name)))
    hook = shell.displayhook
    if getattr(hook, "publish_execution_result", None) is not None:
        hook.publish_execution_result = _batcher.flushing(hook.publish_execution_result)


class CellOutput:
    """The span of one cell: batching on, input prompts flushing first; on exit everything is published.
    Spans nest (``%%sot`` runs its body through ``run_cell``): only the outermost one begins and ends."""

    _depth = 0

    def __enter__(self):
        CellOutput._depth += 1
        if _batcher is None or CellOutput._depth > 1:
            return self
        self._saved = (builtins.input, getpass.getpass)
        builtins.input = _batcher.flushing(builtins.input)
        getpass.getpass = _batcher.flushing(getpass.getpass)
        _batcher.begin_cell()
        return self

    def __exit__(self, *exc):
        CellOutput._depth -= 1
        if _batcher is None:
            return False
        if CellOutput._depth > 0:
            _batcher.flush()  # an inner cell's output comes before what its caller shows next
        else:
            _batcher.end_cell()
            builtins.input, getpass.getpass = self._saved
        return False
