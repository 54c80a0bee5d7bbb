"""What a command prints and how it ends: the stdout and stderr consoles, the boundary where a
DeltaSyncError or Ctrl-C becomes a message and an exit code (`_fail`, `_guard`), and the progress
shown while the library works (a spinner at a terminal, timestamped lines in a CI log). Commands use
`console.out` and `console.err` through this module, since `fresh_consoles` replaces them."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, NoReturn, TypeVar

import typer
from rich.console import Console
from rich.text import Text

from delta_sync.model.errors import DeltaSyncError, SpecError

if TYPE_CHECKING:
    from rich.status import Status

    from delta_sync.review.results import Progress

# Made when first used (`__getattr__`): their theme comes with the renderer, which `--help` does without.
out: Console
err: Console


def fresh_consoles() -> None:
    """Consoles that look at this process's terminal and environment now (colours, width): a command forked
    by the warm engine's preloaded process inherits consoles made for that process."""
    from delta_sync.render.text import THEME

    global out, err
    out = Console(theme=THEME, highlight=False, soft_wrap=True)
    err = Console(theme=THEME, stderr=True, highlight=False, soft_wrap=True)


def __getattr__(name: str) -> Console:
    if name in ("out", "err"):
        fresh_consoles()
        return out if name == "out" else err
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _err() -> Console:
    """`err` for this module's own functions, whose global lookups do not go through `__getattr__`."""
    return err if "err" in globals() else __getattr__("err")


T = TypeVar("T")


def _fail(error: DeltaSyncError) -> NoReturn:
    # Engine messages contain `[ERROR_CLASS]`: print them as text, never as rich markup.
    message = Text()
    if not isinstance(error, SpecError):
        message.append("Error: ", style="ds.blocked")
    message.append(str(error))
    _err().print(message)
    raise typer.Exit(error.exit_code)


def _guard(fn: Callable[[], T]) -> T:
    try:
        return fn()
    except DeltaSyncError as error:
        if error.exit_code != 130 and _interrupted():
            _err().print("[ds.blocked]Interrupted.[/]")
            raise typer.Exit(130) from None
        _fail(error)
    except KeyboardInterrupt:
        _err().print("[ds.blocked]Interrupted.[/]")
        reason = _timed_out()
        if reason:
            said = f"{reason[:1].upper()}{reason[1:]}, so it was cancelled; run the command again to finish."
            _err().print(Text(said, style="ds.blocked"))
        raise typer.Exit(130) from None


def _timed_out() -> str | None:
    """What ran longer than the environment's statement_timeout, when that is what stopped the command."""
    import sys

    module = sys.modules.get("delta_sync.review.deadline")
    found = getattr(module, "expired", None)
    return found if isinstance(found, str) else None


def _interrupted() -> bool:
    """Whether Ctrl-C reached a command running on Spark (what failed then is the interrupt's doing)."""
    import sys

    module = sys.modules.get("delta_sync.spark.interrupts")
    return bool(getattr(module, "requested", False))


@contextmanager
def _status(message: str) -> Iterator[Callable[[str], None]]:
    """A spinner at a terminal; elsewhere (a CI log) one timestamped line per phase, so the log is
    never silent while Spark starts or data is checked."""
    if not _err().is_terminal:
        started = time.monotonic()

        def line(text: str) -> None:
            _err().print(Text(f"[{time.monotonic() - started:5.1f}s] {text}", style="ds.muted"))

        line(message)
        yield line
        return
    with _err().status(message) as status:
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
            _err().print(line)
        elif _err().is_terminal:
            self.phase(event.message)

    def phase(self, message: str) -> None:
        with self._lock:
            self._phase(message)

    def _phase(self, message: str) -> None:
        if not _err().is_terminal:
            _err().print(Text(f"[{time.monotonic() - self._started:5.1f}s] {message}", style="ds.muted"))
        elif self._status is None:
            self._status = _err().status(message)
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
