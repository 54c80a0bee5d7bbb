"""`statement_timeout:` of an environment: a statement (or a data check) running longer is stopped exactly as
Ctrl-C stops it. When the time is up, SIGINT goes to the command's main thread, so the handler a command
installs (delta_sync.spark.interrupts: its own Spark jobs cancelled by their tags, on the warm engine too)
does the cancelling, and apply stops as on Ctrl-C: it lists what ran and exits 130, and the next run
re-reads the tables and finishes. One mechanism, not two: a second way of cancelling could cancel what the
first would keep (another command's jobs on the engine). On a caller's own SparkSession (the library's
`spark=`), the call's jobs carry a tag of its own and the handler cancels that tag for the length of the call
(delta_sync.spark.interrupts.on_callers_session); the spark-submit driver installs the handler too.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

# The limit in seconds while a command runs under one; None: no limit.
_limit: float | None = None
_shown: str = ""
# What ran over the limit (set when the time was up), for the message of the interrupted command, and its
# statement's index in apply's list (None: a data check).
expired: str | None = None
_expired_index: int | None = None


def limit(seconds: float | None, shown: str | None = None) -> None:
    """The limit of each statement and data check of the command from here on (`shown`: the setting as
    written, for the message). Every plan and apply sets it at its start, from its environment."""
    global _limit, _shown, expired, _expired_index
    _limit, _shown, expired, _expired_index = seconds, shown or (f"{seconds:g}s" if seconds else ""), None, None


@contextmanager
def running(what: str, index: int | None = None) -> Iterator[None]:
    """`what` (a statement, of index `index` in apply's list; a data check) runs under the limit, if there is one."""
    if not _limit:
        yield
        return
    timer = threading.Timer(_limit, _expire, args=(what, _shown, index))
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


def reason(applied: Sequence[int]) -> str | None:
    """Why apply stopped, when statement_timeout stopped it (`applied`: the statements that committed)."""
    if expired is None:
        return None
    if _expired_index is not None and _expired_index in applied:
        # Its job ended before the cancel reached it: it committed, whole (one Delta commit).
        return f"{expired}; it finished before it could be cancelled"
    return f"{expired}, so it was cancelled"


def _expire(what: str, shown: str, index: int | None) -> None:
    global expired, _expired_index
    if expired is not None:
        return  # one interrupt is enough: the first statement over the limit is the one named
    expired, _expired_index = f"{what} ran longer than statement_timeout {shown}", index
    # At the main thread, where Ctrl-C lands: its wait is interrupted, and the command's handler cancels.
    signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)
