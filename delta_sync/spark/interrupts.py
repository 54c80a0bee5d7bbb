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
from collections.abc import Callable
from typing import Any

# Set once this command got Ctrl-C: a py4j call cut short by it can fail on its way out with an error of its own
# ("Answer from Java side is empty": py4j's clean-up of the interrupted connection), which is then the interrupt.
requested = False
# The command's way of cancelling its jobs, for `cancel_again`.
_cancel: Callable[[], None] | None = None


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
