"""What the command line prints: JSON that is valid, progress bars as log lines when stderr is
not a terminal, counted nouns, and what an interrupted build says it left behind."""
from __future__ import annotations

import contextlib
import json
import math
import sys
import time


def json_safe(value):
    """``value`` with NaN and infinities as None and numpy scalars as Python numbers, so the
    printed JSON is valid (the standard has no NaN)."""
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def print_json(value):
    print(json.dumps(json_safe(value), allow_nan=False, ensure_ascii=False))


class LogProgress:
    """Stands in for stderr while a progress bar runs and stderr is not a terminal: the
    bar's redraws (text starting with a carriage return) become one line every ``every``
    seconds (the first at once), and the bar's last redraw is written when the bar is cleared
    (closed), so a finished run's log ends on its final count, not on one from ``every``
    seconds before; all other text passes through."""

    def __init__(self, stream, every: float = 15.0):
        self.stream, self.every, self.last = stream, every, -math.inf
        self.pending = None  # the latest redraw not written yet

    def write(self, text):
        if not text.startswith("\r"):
            return self.stream.write(text)
        line = text.strip("\r\n ")
        now = time.monotonic()
        if not line:  # the bar is cleared: it has closed
            self._write_pending()
        elif now - self.last >= self.every:
            self.last = now
            self.pending = None
            self.stream.write(line + "\n")
            self.stream.flush()
        else:
            self.pending = line
        return len(text)

    def _write_pending(self):
        if self.pending is not None:
            self.stream.write(self.pending + "\n")
            self.stream.flush()
            self.pending = None

    def flush(self):
        self.stream.flush()


def progress_output():
    """A context manager to run work with progress bars in: on a terminal, nothing; else
    stderr with the bars' redraws throttled into log lines."""
    if sys.stderr.isatty():
        return contextlib.nullcontext()
    return contextlib.redirect_stderr(LogProgress(sys.stderr))


def log_line(msg):
    """Print ``msg`` as one line on stderr (a log line of long work), at once."""
    print(msg, file=sys.stderr, flush=True)


def counted(n: int, word: str, plural: str | None = None) -> str:
    """``1 episode``, ``2,000 episodes``: a count with its noun in the right number."""
    return f"{n:,} {word if n == 1 else plural or word + 's'}"


@contextlib.contextmanager
def nothing_written(out):
    """Ctrl-C in the block (a build, before its save) says that nothing was written to ``out``."""
    from .scale import Interrupted
    try:
        yield
    except KeyboardInterrupt as exc:
        if isinstance(exc, Interrupted):
            raise
        raise Interrupted(f"while building {out}: nothing was written to {out}") from None


def caused_by_interrupt(exc):
    """The KeyboardInterrupt ``exc`` was raised while handling (or because of), or None."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, KeyboardInterrupt):
            return exc
        exc = exc.__cause__ or exc.__context__
    return None
