"""What a command prints and how it ends: the stdout and stderr consoles, the boundary where a
DeltaSyncError or Ctrl-C becomes a message and an exit code (`_fail`, `_guard`), and the progress
shown while the library works (a spinner at a terminal, timestamped lines in a CI log). Commands use
`console.out` and `console.err` through this module, since `fresh_consoles` replaces them."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import NoReturn, TypeVar

import typer
from rich.console import Console
from rich.status import Status
from rich.text import Text

from delta_sync.model.errors import DeltaSyncError, SpecError
from delta_sync.render import text as render
from delta_sync.review.results import Progress

out = Console(theme=render.THEME, highlight=False, soft_wrap=True)
err = Console(theme=render.THEME, stderr=True, highlight=False, soft_wrap=True)


def fresh_consoles() -> None:
    """Consoles that look at this process's terminal and environment now (colours, width): a command forked
    by the warm engine's preloaded process inherits consoles made for that process."""
    global out, err
    out = Console(theme=render.THEME, highlight=False, soft_wrap=True)
    err = Console(theme=render.THEME, stderr=True, highlight=False, soft_wrap=True)


T = TypeVar("T")


def _fail(error: DeltaSyncError) -> NoReturn:
    # Engine messages contain `[ERROR_CLASS]`: print them as text, never as rich markup.
    message = Text()
    if not isinstance(error, SpecError):
        message.append("Error: ", style="ds.blocked")
    message.append(str(error))
    err.print(message)
    raise typer.Exit(error.exit_code)


def _guard(fn: Callable[[], T]) -> T:
    try:
        return fn()
    except DeltaSyncError as error:
        _fail(error)
    except KeyboardInterrupt:
        err.print("[ds.blocked]Interrupted.[/]")
        raise typer.Exit(130) from None


@contextmanager
def _status(message: str) -> Iterator[Callable[[str], None]]:
    """A spinner at a terminal; elsewhere (a CI log) one timestamped line per phase, so the log is
    never silent while Spark starts or data is checked."""
    if not err.is_terminal:
        started = time.monotonic()

        def line(text: str) -> None:
            err.print(Text(f"[{time.monotonic() - started:5.1f}s] {text}", style="ds.muted"))

        line(message)
        yield line
        return
    with err.status(message) as status:
        yield lambda text: status.update(text)


class _Feedback:
    """The progress of one library call: a spinner at a terminal (in a CI log, one timestamped line per
    phase instead, so the log is never silent), and a line per statement as it finishes."""

    def __init__(self) -> None:
        self._started = time.monotonic()
        self._status: Status | None = None
        self._lock = threading.Lock()  # apply's worker threads report at once

    def __call__(self, event: Progress) -> None:
        if event.step is None:
            self.phase(event.message)
        elif event.done:
            line = Text("✓ ", style="ds.ok")
            line.append(event.message)
            if event.seconds is not None:
                line.append(f" ({event.seconds:.1f}s)", style="ds.muted")
            err.print(line)
        elif err.is_terminal:
            self.phase(event.message)

    def phase(self, message: str) -> None:
        with self._lock:
            self._phase(message)

    def _phase(self, message: str) -> None:
        if not err.is_terminal:
            err.print(Text(f"[{time.monotonic() - self._started:5.1f}s] {message}", style="ds.muted"))
        elif self._status is None:
            self._status = err.status(message)
            self._status.start()
        else:
            self._status.update(message)

    def pause(self) -> None:
        """Before printing a plan or asking a question: the spinner goes, the next phase brings it back."""
        with self._lock:
            if self._status is not None:
                self._status.stop()
                self._status = None


def _with_feedback(work: Callable[[_Feedback], T]) -> T:
    feedback = _Feedback()
    try:
        return _guard(lambda: work(feedback))
    finally:
        feedback.pause()
