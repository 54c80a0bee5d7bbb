"""Ctrl-C in a command: its own Spark jobs are cancelled, then KeyboardInterrupt goes on up.

pyspark's handler cancels from inside the signal handler, through py4j, on the main thread; when that thread
is itself waiting in a py4j call (a `sql` query, a probe), the second call fails ("reentrant call") and py4j
logs both tracebacks. Here the cancelling runs on a thread of its own (its own py4j connection, or the
engine's socket), and py4j's logging of the call cut short is silenced: the command says "Interrupted." itself.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
import uuid
from collections.abc import Callable, Iterator
from typing import Any

# Set once this command got Ctrl-C: a py4j call cut short by it can fail on its way out with an error of its own
# ("Answer from Java side is empty": py4j's clean-up of the interrupted connection), which is then the interrupt.
requested = False
# The command's way of cancelling its jobs, for `cancel_again`.
_cancel: Callable[[], None] | None = None
# During a library call on a caller's own session: the SparkContext job tag every job of the call carries (each
# thread it runs statements on adds it), so that Ctrl-C and statement_timeout cancel those jobs and no others.
caller_tag: str | None = None


def install(cancel: Callable[[], None]) -> None:
    """On SIGINT: `cancel` on a thread of its own, then KeyboardInterrupt. From the main thread only."""
    global _cancel
    if threading.current_thread() is not threading.main_thread():
        return
    _cancel = cancel

    def handler(_signum: int, _frame: Any) -> None:
        global requested
        requested = True
        logging.disable(logging.ERROR)  # py4j logs the interrupted call on the root logger, with a traceback
        threading.Thread(target=_quietly, args=(cancel,), name="delta-sync-cancel").start()
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, handler)


def cancel_again() -> None:
    """Cancel the command's jobs once more: a statement stopped by statement_timeout may start its Spark job
    after the first cancel (Delta reads the table and plans on the driver first), and that job must not run."""
    if _cancel is not None:
        _quietly(_cancel)


def _quietly(cancel: Callable[[], None]) -> None:
    with contextlib.suppress(Exception):  # the JVM is going too: its jobs end with it
        cancel()


@contextlib.contextmanager
def on_callers_session(spark: Any) -> Iterator[None]:
    """A library call on a session the caller owns (`spark=`): its jobs tagged, and SIGINT (Ctrl-C, or a statement
    over statement_timeout) cancelling them by that tag, not every job of the caller's application as pyspark's
    handler would; the caller's handler is back afterwards. Off the main thread (signals reach only that one) or
    on a Spark Connect session (no SparkContext here) the caller's handling stays, and a statement in flight runs
    to its end."""
    global _cancel, caller_tag, requested
    try:
        # A Spark Connect session (pyspark.sql.connect) has no SparkContext in this process.
        context = None if ".connect." in type(spark).__module__ else getattr(spark, "sparkContext", None)
    except Exception:  # not a session pyspark made (the call refuses it soon after)
        context = None
    if context is None or threading.current_thread() is not threading.main_thread() or caller_tag is not None:
        yield
        return
    requested = False
    tag = f"delta-sync-{uuid.uuid4().hex[:16]}"
    handler, cancel = signal.getsignal(signal.SIGINT), _cancel
    context.addJobTag(tag)
    caller_tag = tag
    install(lambda: context.cancelJobsWithTag(tag))
    try:
        yield
    finally:
        # None: a handler not set from Python, which Python cannot set back; its own default then.
        signal.signal(signal.SIGINT, handler if handler is not None else signal.default_int_handler)
        _cancel, caller_tag = cancel, None
        with contextlib.suppress(Exception):
            context.removeJobTag(tag)


def tag_thread(spark: Any) -> None:
    """An apply thread's jobs carry the library call's tag too (a SparkContext tag is the thread's own)."""
    tag = caller_tag
    context = getattr(spark, "sparkContext", None)
    if tag is not None and context is not None:
        context.addJobTag(tag)
